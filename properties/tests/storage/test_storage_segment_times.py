"""A segment's largest timestamp after its tail state is rebuilt: what time retention judges a
segment by (Kafka's LogSegment.largestTimestamp) must be its batches' largest, after appends, a
truncation, and a clean restart alike.

The rebuild (Kafka's readLargestTimestamp) starts from the time index's last entry and scans the
batches from the last offset index entry on; the batch at that entry is already counted in the
time index, every batch after it must be looked at. The storage machine checks the same
invariant on random walks (segment_times_match); here every truncation point of a segment with
several index entries and timestamps going up and down is tried.
"""

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaref.impl.protocol.records import build_batch, parse_header, stamped
from kafkaref.impl.protocol.records.timestamps import NO_TIMESTAMP
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

# an index entry every two or three batches; one segment holds them all
CONFIG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=150, retention_ms=-1)
BATCHES = st.lists(st.tuples(st.integers(1, 3), st.integers(0, 60), st.integers(-50, 50)),
                   min_size=2, max_size=12)


def filled(directory: str, batches) -> tuple[Log, list[bytes]]:
    log = Log(directory, CONFIG, clock_ms=lambda: 0)
    written, offset = [], 0
    for index, (records, value_bytes, skew) in enumerate(batches):
        timestamp = 1_000 + 10 * index + skew
        batch = bytes(stamped(build_batch([(None, b"v" * value_bytes, (), timestamp)] * records),
                              offset, 0))
        log.append(batch)
        written.append(batch)
        offset = parse_header(batch).next_offset
    return log, written


def largest(batches: list[bytes]) -> int:
    return max((parse_header(b).max_timestamp for b in batches), default=NO_TIMESTAMP)


@settings(max_examples=60, deadline=None)
@given(batches=BATCHES, where=st.integers(0, 1 << 16), restart=st.booleans())
def test_the_largest_timestamp_is_the_remaining_batches_largest(batches, where, restart):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log, written = filled(directory, batches)
        try:
            assert log.segments[-1].max_timestamp == largest(written)
            if restart:
                log.close()
                log = Log(directory, CONFIG, clock_ms=lambda: 0)
                assert log.segments[-1].max_timestamp == largest(written)
            offset = where % (log.log_end_offset + 1)
            log.truncate_to(offset)
            kept = [b for b in written if parse_header(b).last_offset < offset]
            assert log.segments[-1].max_timestamp == largest(kept), (
                f"truncated to {offset}: {len(kept)} of {len(written)} batches kept")
        finally:
            log.close()
