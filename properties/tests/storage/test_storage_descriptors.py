"""A log closes exactly the files it opened, once: closed, then its segments deleted (a
retention or truncation reaching a log a shutdown closed meanwhile), no descriptor of the
process other than the log's own is touched. Found by mutation testing (docs/mutation.md): a
closed segment remembering descriptor 0 instead of -1 passed every storage test, and its next
close would have closed the process's standard input."""

import os

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_closed_log_touches_no_other_descriptor(tmp_path):
    before = open_descriptors()
    log = Log(str(tmp_path), LogConfig(segment_bytes=200), clock_ms=lambda: 0)
    for _ in range(4):  # a few segments, each with its files
        assert log.append_as_leader(build_batch([(None, b"v" * 60, (), 1)]), 0).error == ErrorCode.none
    segments = list(log.segments)
    assert len(segments) > 1
    log.close()
    for segment in segments:
        segment.delete()
    assert open_descriptors() == before
