"""A closed log refuses every append with one clear error (ValueError: the log is closed),
whichever path the append would take: a leader's batch with the core's checked headers, with
frame checks only (the one-batch hot path), with every record walked, a follower's copy. A
broker appending to a log it closed (a deleted topic, a stopped broker) must fail loudly, never
write through a closed descriptor.

Found by mutation testing (session 9df4313ef37b's survivor 00242: the hot path's `not
self._closed` read `self._closed` sent a closed frame-only log's append down the hot path, which
wrote to closed files; no test appended to a closed log)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch, parse_header, stamped
from kafkaref.impl.storage import Log, LogConfig

BATCH = build_batch([(None, b"v", (), 1_000)])


def _append(log: Log, path: str):
    if path == "follower":
        return log.append(bytes(stamped(BATCH, log.log_end_offset, 0)))
    if path == "checked":
        return log.append_as_leader(BATCH, 0, checked=[parse_header(BATCH)])
    return log.append_as_leader(BATCH, 0)


@pytest.mark.parametrize("path", ["checked", "frames only", "records walked", "follower"])
def test_a_closed_log_refuses_every_append(tmp_path, path):
    log = Log(str(tmp_path), LogConfig(validate_records=path != "frames only"),
              clock_ms=lambda: 0)
    assert _append(log, path).error == ErrorCode.none
    log.close()
    with pytest.raises(ValueError, match="closed"):
        _append(log, path)
    reopened = Log(str(tmp_path), LogConfig(), clock_ms=lambda: 0)
    try:
        assert reopened.log_end_offset == 1  # nothing written after the close
    finally:
        reopened.close()
