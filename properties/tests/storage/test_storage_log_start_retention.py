"""Retention's first pass (Kafka's deleteLogStartOffsetBreachedSegments) deletes every segment
whose next segment starts at or below the log start: all it holds is unreadable. The case that
needs the `at`: DeleteRecords up to the log end, then a roll there, so the new segment starts
exactly at the log start and the old one holds nothing readable.

Found by mutation testing (session 2225a175104f's survivor 00097): the comparison read `<`
passed every storage test; the storage machine now checks the same after each retention, and
this property reaches the case every time."""

import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

CONFIG = LogConfig(segment_bytes=1_200, retention_ms=-1, retention_bytes=-1)


def _append(log: Log, count: int) -> None:
    for i in range(count):
        batch = build_batch([(b"k", b"v" * (20 + 13 * i), (), 1_000)])
        assert log.append_as_leader(batch, 0).error == ErrorCode.none


@given(before=st.integers(1, 30), back=st.integers(0, 3), roll=st.booleans(),
       after=st.integers(0, 20))
def test_no_segment_wholly_below_the_log_start_survives_retention(before, back, roll, after):
    """DeleteRecords to `back` offsets below the log end (0: all of it), a roll there or not,
    more appends, then retention."""
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            _append(log, before)
            log.set_high_watermark(log.log_end_offset)
            log.increment_log_start_offset(max(0, log.log_end_offset - back))
            if roll:
                log.roll()
            _append(log, after)
            log.set_high_watermark(log.log_end_offset)
            start, readable = log.log_start_offset, list(log.iter_batches())
            log.delete_old_segments()
            bases = log.segment_bases
            assert len(bases) < 2 or bases[1] > log.log_start_offset, (bases, start)
            assert log.log_start_offset == start  # only unreadable bytes went
            assert list(log.iter_batches()) == readable
        finally:
            log.close()
