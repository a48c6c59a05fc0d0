"""Where a segment ends by time: Kafka's shouldRoll rolls when timeWaitedForRoll, the appended
batch's MaxTimestamp minus the segment's first batch's MaxTimestamp, is above segment.ms (not at
it). The records' own timestamps decide, not the clock, and MaxTimestamp is not the batch's
first timestamp: the property draws batches whose records are stamped out of order.

Both append paths are held to it: a leader's one-batch appends (the log's hot path) and a
follower's copies (the general path). Found by mutation testing (session 9df4313ef37b's survivor
00038: the hot path read the batch's first timestamp, header[7], for its MaxTimestamp; every
test batch had one timestamp for all its records)."""

import tempfile

from hypothesis import example, given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch, stamped
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


@given(stamps=batch_stamps, segment_ms=st.integers(1, 2_000), as_follower=st.booleans())
@example(stamps=[[0], [1_000], [1_001]], segment_ms=1_000, as_follower=False)  # at it: stays
@example(stamps=[[5, 0], [1_000, 1_006]], segment_ms=1_000, as_follower=False)  # max, not first
def test_segments_roll_by_their_batches_max_timestamps(stamps, segment_ms, as_follower):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, LogConfig(segment_ms=segment_ms, retention_ms=-1),
                  clock_ms=lambda: 0)
        try:
            for records in stamps:
                if as_follower:
                    info = log.append(bytes(stamped(_batch(records), log.log_end_offset, 0)))
                else:
                    info = log.append_as_leader(_batch(records), 0)
                assert info.error == ErrorCode.none
            assert list(log.segment_bases) == kafkas_segment_bases(stamps, segment_ms)
        finally:
            log.close()

