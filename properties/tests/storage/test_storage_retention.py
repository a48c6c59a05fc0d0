"""Retention (Log.delete_old_segments, Kafka's UnifiedLog.deleteOldSegments) on generated logs:
segments of generated batches and timestamps, an hw anywhere in the log, generated limits. Each
run is held to a naive twin of Kafka's three passes over (base offset, size, largest timestamp)
triples, and to what must hold whatever the rule's details: nothing at or above the hw is lost,
the log start lands on a batch boundary, a second run at the same time deletes nothing (so the
size and time bounds hold where the hw allows), and -1 keeps everything."""

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.clock import ManualClock

NOW_MS = 1_000_000
YEAR_2023_MS = 1_700_000_000_000


def batch(records: int, timestamp: int) -> bytes:
    return build_batch([(b"k", b"v" * 30, (), timestamp)] * records)


# (records, timestamp) per batch: timestamps from 10 s before now to a little after it
BATCHES = st.lists(st.tuples(st.integers(1, 4), st.integers(NOW_MS - 10_000, NOW_MS + 2_000)),
                   min_size=0, max_size=30)
LIMITS = st.one_of(st.just(-1), st.integers(0, 12_000))


def twin_log_start(segments, hw: int, leo: int, log_start: int, now: int,
                   retention_ms: int, retention_bytes: int) -> int:
    """Kafka's rule on plain data, the naive way: segments are (base, size, largest
    timestamp), oldest first; each pass deletes a prefix; deleting all of them rolls an empty
    segment at the leo first. Returns the log start after the three passes."""
    segments = list(segments)

    def run_pass(deletable) -> None:
        nonlocal segments, log_start
        count = 0
        for i, (_, size, _) in enumerate(segments):
            last = i == len(segments) - 1
            upper = leo if last else segments[i + 1][0]
            if hw < upper or (last and size == 0) or not deletable(i, segments):
                break
            count += 1
        if count == len(segments) and count:
            segments.append((leo, 0, -1))
        if count:
            log_start = max(log_start, segments[count][0])
            segments = segments[count:]

    run_pass(lambda i, segs: i + 1 < len(segs) and segs[i + 1][0] <= log_start)
    if retention_bytes >= 0:
        excess = [sum(size for _, size, _ in segments) - retention_bytes]

        def over(i, segs):
            if excess[0] < 0 or excess[0] - segs[i][1] < 0:
                return False
            excess[0] -= segs[i][1]
            return True
        run_pass(over)
    if retention_ms >= 0:
        run_pass(lambda i, segs: now - segs[i][2] > retention_ms)
    return log_start


def filled_log(directory: str, clock, batches, segment_bytes: int) -> Log:
    log = Log(directory, LogConfig(segment_bytes=segment_bytes), clock_ms=clock)
    for records, timestamp in batches:
        assert log.append_as_leader(batch(records, timestamp), 0).error == ErrorCode.none
    return log


@settings(max_examples=80, deadline=None)
@given(batches=BATCHES, segment_bytes=st.integers(150, 900), hw_at=st.floats(0, 1),
       start_at=st.floats(0, 1), retention_ms=LIMITS, retention_bytes=LIMITS,
       exact=st.one_of(st.none(), st.integers(0, 29)))
def test_retention_follows_kafkas_rule_and_never_loses_data_at_or_above_the_hw(
        batches, segment_bytes, hw_at, start_at, retention_ms, retention_bytes, exact):
    """exact: retention_ms is now minus that batch's timestamp (a segment just at the limit)."""
    clock = ManualClock(NOW_MS)
    if exact is not None and batches and retention_ms >= 0:
        retention_ms = max(0, NOW_MS - batches[exact % len(batches)][1])
    with tempfile.TemporaryDirectory() as directory:
        log = filled_log(os.path.join(directory, "log"), clock, batches, segment_bytes)
        leo = log.log_end_offset
        hw = int(hw_at * leo)
        log.set_high_watermark(hw)
        log.increment_log_start_offset(int(start_at * hw))  # DeleteRecords, anywhere below
        before = {header.base_offset: raw for header, raw in log.iter_batches()}
        boundaries = set(before) | {log.log_start_offset, leo}
        segments = [(s.base_offset, s.size, s.largest_timestamp()) for s in log.segments]
        start_before = log.log_start_offset
        expected = twin_log_start(segments, hw, leo, start_before, clock.now_ms, retention_ms,
                                  retention_bytes)

        log.delete_old_segments(retention_ms, retention_bytes)

        start = log.log_start_offset
        assert start == expected
        assert start_before <= start <= hw and start in boundaries
        assert log.log_end_offset == leo and log.high_watermark == hw
        kept = {header.base_offset: raw for header, raw in log.iter_batches()}
        assert kept == {base: raw for base, raw in before.items()
                        if base >= log.segment_bases[0]}  # whole segments went, the rest intact
        assert all(header.base_offset >= log.segment_bases[0] for header, _ in log.iter_batches())
        assert log.delete_old_segments(retention_ms, retention_bytes) == 0  # bounds now hold
        if retention_ms == retention_bytes == -1:
            assert start == start_before  # -1 and -1: only DeleteRecords moves the log start
        with log.read_slice(start, 1 << 20) as fetched:
            assert fetched.error == ErrorCode.none
        if start > 0:
            with log.read_slice(start - 1, 1 << 20) as fetched:
                assert fetched.error == ErrorCode.offset_out_of_range
        log.close()


@settings(max_examples=40, deadline=None)
@given(batches=BATCHES, segment_bytes=st.integers(150, 900), retention_bytes=st.integers(0, 4_000))
def test_a_log_wholly_below_the_hw_ends_within_the_size_bound_plus_one_segment(
        batches, segment_bytes, retention_bytes):
    clock = ManualClock(NOW_MS)
    with tempfile.TemporaryDirectory() as directory:
        log = filled_log(os.path.join(directory, "log"), clock, batches, segment_bytes)
        log.set_high_watermark(log.log_end_offset)
        log.delete_old_segments(retention_ms=-1, retention_bytes=retention_bytes)
        # Kafka's bound: the oldest segment kept is the one whose deletion would go below it
        assert log.size_bytes - log.segments[0].size < retention_bytes or (
            log.size_bytes == 0)
        log.close()


def test_minus_one_keeps_everything_however_old_and_large(tmp_path):
    clock = ManualClock(10 * NOW_MS)
    log = filled_log(str(tmp_path / "log"), clock, [(3, 0)] * 30, 200)
    log.set_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(retention_ms=-1, retention_bytes=-1) == 0
    assert log.log_start_offset == 0 and log.size_bytes > 2_000


def test_an_expired_active_segment_is_rolled_and_the_log_starts_at_the_leo(tmp_path):
    clock = ManualClock(NOW_MS)
    log = filled_log(str(tmp_path / "log"), clock, [(2, 1_000)] * 3, 1 << 20)
    assert len(log.segments) == 1
    log.set_high_watermark(5)  # below the leo: the active segment holds the hw, it stays
    assert log.delete_old_segments(retention_ms=1000) == 0
    log.set_high_watermark(6)
    assert log.delete_old_segments(retention_ms=1000) == 1
    assert log.log_start_offset == log.log_end_offset == 6 and log.segment_bases == (6,)
    assert log.append_as_leader(batch(1, NOW_MS), 0).first_offset == 6
    log.close()
    reopened = Log(str(tmp_path / "log"), LogConfig(), clock_ms=clock)
    assert reopened.log_start_offset == 6 and reopened.log_end_offset == 7


def test_without_timestamps_a_segment_is_as_old_as_its_file(tmp_path):
    """Kafka's LogSegment.largestTimestamp: the last modification when no record has one."""
    clock = ManualClock(NOW_MS)
    log = filled_log(str(tmp_path / "log"), clock, [(1, -1)] * 4, 1 << 20)
    log.set_high_watermark(log.log_end_offset)
    modified = log.segments[0].largest_timestamp()
    assert abs(modified - os.stat(log.segments[0].log_path).st_mtime * 1000) < 2
    clock.now_ms = modified + 500
    assert log.delete_old_segments(retention_ms=1000) == 0
    clock.now_ms = modified + 1_001
    assert log.delete_old_segments(retention_ms=1000) == 1 and log.log_start_offset == 4


def test_a_batch_stamped_past_segment_ms_after_the_first_rolls_the_segment(tmp_path):
    """Kafka's LogSegment.timeWaitedForRoll: the new batch's max timestamp minus the first
    batch's, rolled past segment.ms; so records from 1970 and from now never share a segment,
    and retention by time can delete the old ones alone (what Kafka 4.3.1 did: docs/storage.md)."""
    clock = ManualClock(YEAR_2023_MS)
    log = filled_log(str(tmp_path / "log"), clock, [(1, 1_000), (1, 1_000 + 60_000)], 1 << 20)
    assert log.segment_bases == (0,)  # 60 s apart, segment.ms 7 days: one segment
    log.append_as_leader(batch(1, YEAR_2023_MS), 0)
    assert log.segment_bases == (0, 2)
    log.set_high_watermark(3)
    log.delete_old_segments(retention_ms=60_000)
    assert log.log_start_offset == 2
    log.truncate_to(2)  # the new segment's first batch gone: its base is read again
    log.append_as_leader(batch(1, 5_000), 0)
    log.append_as_leader(batch(1, 5_000 + 7 * 24 * 3_600_000), 0)  # exactly segment.ms: stays
    assert log.segment_bases == (2,)
    log.append_as_leader(batch(1, 5_001 + 7 * 24 * 3_600_000), 0)
    assert log.segment_bases == (2, 4)


def test_without_a_first_timestamp_a_segment_ages_from_its_creation(tmp_path):
    clock = ManualClock(NOW_MS)
    log = Log(str(tmp_path / "log"), LogConfig(segment_ms=1_000), clock_ms=clock)
    log.append_as_leader(batch(1, -1), 0)
    clock.now_ms += 1_000
    log.append_as_leader(batch(1, -1), 0)
    assert log.segment_bases == (0,)
    clock.now_ms += 1
    log.append_as_leader(batch(1, -1), 0)
    assert log.segment_bases == (0, 2)
