"""Where a segment ends by time: Kafka's shouldRoll rolls when timeWaitedForRoll, the appended
batch's MaxTimestamp minus the segment's first batch's MaxTimestamp, is above segment.ms (not at
it). The records' own timestamps decide, not the clock, and MaxTimestamp is not the batch's
first timestamp: the property draws batches whose records are stamped out of order.

Every append path is held to it: a leader's one-batch appends with the core's checked headers
and with frame checks only (the log's hot path), with the records walked (the general path),
and a follower's copies. Found by mutation testing (session 9df4313ef37b's survivor
00038: the hot path read the batch's first timestamp, header[7], for its MaxTimestamp; every
test batch had one timestamp for all its records)."""

import tempfile

from hypothesis import example, given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch, parse_header, stamped
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

# batches of 1-3 records, each record's timestamp drawn (out of order within a batch)
batch_stamps = st.lists(st.lists(st.integers(0, 3_000), min_size=1, max_size=3),
                        min_size=1, max_size=8)


def kafkas_segment_bases(stamps: list[list[int]], segment_ms: int) -> list[int]:
    bases, rolling_base, offset = [0], None, 0
    for records in stamps:
        newest = max(records)
        if rolling_base is not None and newest - rolling_base > segment_ms:
            bases.append(offset)
            rolling_base = None
        if rolling_base is None:
            rolling_base = newest
        offset += len(records)
    return bases


def _batch(records: list[int]) -> bytes:
    return build_batch([(None, b"v", (), stamp) for stamp in records])


def _append(log: Log, path: str, batch: bytes):
    if path == "follower":
        return log.append(bytes(stamped(batch, log.log_end_offset, 0)))
    if path == "checked":
        return log.append_as_leader(batch, 0, checked=[parse_header(batch)])
    return log.append_as_leader(batch, 0)


PATHS = st.sampled_from(["checked", "frames only", "records walked", "follower"])


@given(stamps=batch_stamps, segment_ms=st.integers(1, 2_000), path=PATHS)
@example(stamps=[[0], [1_000], [1_001]], segment_ms=1_000, path="checked")  # at it: stays
@example(stamps=[[5, 0], [1_000, 1_006]], segment_ms=1_000, path="checked")  # max, not first
@example(stamps=[[5, 0], [1_000, 1_006]], segment_ms=1_000, path="frames only")
def test_segments_roll_by_their_batches_max_timestamps(stamps, segment_ms, path):
    config = LogConfig(segment_ms=segment_ms, retention_ms=-1,
                       validate_records=path != "frames only")
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, config, clock_ms=lambda: 0)
        try:
            for records in stamps:
                assert _append(log, path, _batch(records)).error == ErrorCode.none
            assert list(log.segment_bases) == kafkas_segment_bases(stamps, segment_ms)
        finally:
            log.close()

