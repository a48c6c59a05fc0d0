"""flush.messages counts as Kafka counts: LocalLog.unflushedMessages is the log end minus the
recovery point, and UnifiedLog.append flushes once it reaches flush.messages. So a roll (which
flushes the closed segment and moves the recovery point to the new one's base) starts the count
again, and a truncation below the recovery point brings the point down to the new end, while
one above it keeps the records still unflushed below the cut counted. A property against that
rule over appends, rolls and truncations, read off the log's flushed offset (the recovery
point).

Found by mutation testing (session 9df4313ef37b's survivor 00332: the unflushed count reset
after a truncation read 1, not 0, and no test looked); the rule written for it showed kafkaref
counting records since the last flush, which after a truncation above the recovery point
forgot the unflushed records below the cut (Kafka flushes them on the count), and after a roll
kept counting records already flushed (a flush earlier than Kafka's). Log now counts the
offsets past the recovery point, as Kafka."""

import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

steps = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3)),  # records in the batch
    st.tuples(st.just("roll"), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 6)),  # records cut off the end
), min_size=1, max_size=25)


@given(flush_messages=st.integers(1, 5), steps=steps)
def test_flush_messages_counts_offsets_past_the_recovery_point(flush_messages, steps):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, LogConfig(flush_messages=flush_messages, retention_ms=-1),
                  clock_ms=lambda: 0)
        try:
            point = 0  # Kafka's recovery point, by its rule
            for op, arg in steps:
                if op == "append":
                    batch = build_batch([(None, b"v", (), 1_000)] * arg)
                    assert log.append_as_leader(batch, 0).error == ErrorCode.none
                    if log.log_end_offset - point >= flush_messages:
                        point = log.log_end_offset
                elif op == "roll":
                    log.roll()
                    point = max(point, log.segment_bases[-1])
                else:
                    log.truncate_to(max(0, log.log_end_offset - arg))
                    point = min(point, log.log_end_offset)
                assert log.flushed_offset == point, (op, arg)
        finally:
            log.close()
