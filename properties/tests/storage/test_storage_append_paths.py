"""The leader's one-batch append fast path (Log._append_one_stamped, taken when
validate_records is off) against the general path (Log._append_checked, taken when every record
is validated) as its naive twin: for the same valid requests, clock and operations, both logs
must answer alike and leave identical files -- .log, .index, .timeindex, checkpoints, epoch cache
-- through rolls by size, age and full indexes, sparse index entries, flushes and truncations.
Also: the CRC is still checked on the fast path (mutant M7 switched on there is caught)."""

import os
import shutil
import tempfile

import attrs
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import build_batch, stamped
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.stateful import bind
from kafkaref.properties.storage_machine import StorageMachine, scratch_dir

SMALL = LogConfig(segment_bytes=1_500, segment_ms=50, segment_index_bytes=24,
                  index_interval_bytes=100, retention_ms=-1)


def _batch(count: int, value_bytes: int, timestamp: int, lz4: bool) -> bytes:
    records = [(b"k%d" % i, b"v" * value_bytes, (), timestamp + i % 3) for i in range(count)]
    return build_batch(records, compression=Compression.lz4 if lz4 else Compression.none)


_batches = st.builds(_batch, st.integers(1, 4), st.integers(0, 300), st.integers(900, 1_100),
                     st.booleans())
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("leader"), _batches, st.integers(0, 3)),
        st.tuples(st.just("leader2"), st.tuples(_batches, _batches), st.integers(0, 3)),
        st.tuples(st.just("follower"), _batches, st.integers(0, 3)),
        st.tuples(st.just("corrupt"), _batches, st.integers(0, 10_000)),
        st.tuples(st.just("tick"), st.integers(1, 60), st.none()),
        st.tuples(st.just("truncate"), st.integers(0, 1 << 16), st.none()),
        st.tuples(st.just("flush"), st.none(), st.none()),
        st.tuples(st.just("reopen"), st.none(), st.none()),
    ),
    max_size=40,
)


def _state(log: Log) -> tuple:
    return (
        log.log_end_offset,
        log.flushed_offset,
        log.segment_bases,
        tuple(log.epochs.entries),
        tuple(
            (s.size, s.next_offset, s.max_timestamp, s.offset_of_max_timestamp,
             s.bytes_since_last_index_entry, list(s.index.relative_offsets),
             list(s.index.positions), list(s.timeindex.timestamps),
             list(s.timeindex.relative_offsets))
            for s in log.segments
        ),
    )


def _files(directory: str) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as file:
            out[name] = file.read()
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_steps, flush_messages=st.sampled_from([None, 3]))
def test_fast_leader_path_matches_the_general_path(steps, flush_messages):
    root = tempfile.mkdtemp(prefix="kafkaref-append-paths-", dir=scratch_dir())  # tmpfs: fsyncs
    try:
        _compare_paths(root, steps, flush_messages)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _compare_paths(root: str, steps, flush_messages) -> None:
    clock = ManualClock()
    config = attrs.evolve(SMALL, flush_messages=flush_messages)
    fast_config = attrs.evolve(config, validate_records=False)  # takes the fast path
    slow_config = attrs.evolve(config, validate_records=True)  # every batch: general path
    fast_dir = os.path.join(root, "fast")
    slow_dir = os.path.join(root, "slow")
    fast = Log(fast_dir, fast_config, clock_ms=clock)
    slow = Log(slow_dir, slow_config, clock_ms=clock)
    try:
        for kind, arg, extra in steps:
            if kind == "leader":
                assert fast.append_as_leader(arg, extra) == slow.append_as_leader(arg, extra)
            elif kind == "leader2":
                data = arg[0] + arg[1]
                assert fast.append_as_leader(data, extra) == slow.append_as_leader(data, extra)
            elif kind == "follower":
                data = bytes(stamped(arg, fast.log_end_offset + extra, 0))
                assert fast.append(data) == slow.append(data)
            elif kind == "corrupt":
                data = bytearray(arg)
                position = [*range(8, 12), *range(16, len(data))][extra % (len(data) - 12)]
                data[position] ^= 0x10
                leo = fast.log_end_offset
                assert fast.append_as_leader(bytes(data), 0).error != ErrorCode.none
                assert slow.append_as_leader(bytes(data), 0).error != ErrorCode.none
                assert fast.log_end_offset == slow.log_end_offset == leo
            elif kind == "tick":
                clock.now_ms += arg
                assert fast.maybe_flush() == slow.maybe_flush()
            elif kind == "truncate":
                offset = arg % (fast.log_end_offset + 1)
                fast.truncate_to(offset)
                slow.truncate_to(offset)
            elif kind == "flush":
                fast.flush()
                slow.flush()
            elif kind == "reopen":
                fast.close()
                slow.close()
                assert _files(fast_dir) == _files(slow_dir)
                fast = Log(fast_dir, fast_config, clock_ms=clock)
                slow = Log(slow_dir, slow_config, clock_ms=clock)
            assert _state(fast) == _state(slow), kind
        assert not fast.verify()
    finally:
        fast.close()
        slow.close()
    assert _files(fast_dir) == _files(slow_dir)


def test_fast_path_refuses_bad_crc_and_nonzero_base_offset(tmp_path):
    log = Log(str(tmp_path), attrs.evolve(SMALL, validate_records=False), clock_ms=ManualClock())
    good = _batch(2, 30, 1_000, False)
    flipped = bytearray(good)
    flipped[-1] ^= 1
    assert log.append_as_leader(bytes(flipped), 0).error == ErrorCode.corrupt_message
    assert log.append_as_leader(bytes(stamped(good, 5, 0)), 0).error == ErrorCode.invalid_record
    assert log.append_as_leader(good[:-1], 0).error == ErrorCode.corrupt_message
    assert log.append_as_leader(b"", 0).error == ErrorCode.invalid_record
    assert log.log_end_offset == 0 and log.size_bytes == 0
    assert log.append_as_leader(good, 0).error == ErrorCode.none
    log.close()


def test_machine_catches_m7_with_frame_checks_only():
    """M7 (no CRC check on append) with validate_records off, where the fast path would run."""
    config = attrs.evolve(SMALL, validate_records=False, mutants={"M7"})
    with pytest.raises((AssertionError, ExceptionGroup)):
        run_state_machine_as_test(
            bind(StorageMachine, log_factory=Log, config=config),
            settings=settings(max_examples=60, stateful_step_count=40, derandomize=True,
                              database=None, deadline=None, print_blob=False,
                              phases=[Phase.generate], suppress_health_check=list(HealthCheck)),
        )


def test_index_entries_reach_the_files_on_flush_roll_and_close(tmp_path):
    """Index entries are encoded in bulk, not per append: the files must still hold exactly
    the in-memory entries after each flush, roll and close, and load back the same."""
    from kafkaref.impl.storage import index, timeindex

    def on_disk(segment) -> tuple[list, list]:
        with open(segment.index.path, "rb") as file:
            entries = list(index.ENTRY.iter_unpack(file.read()))
        with open(segment.timeindex.path, "rb") as file:
            times = list(timeindex.ENTRY.iter_unpack(file.read()))
        return entries, times

    def in_memory(segment) -> tuple[list, list]:
        return (list(zip(segment.index.relative_offsets, segment.index.positions, strict=True)),
                list(zip(segment.timeindex.timestamps, segment.timeindex.relative_offsets,
                         strict=True)))

    config = LogConfig(index_interval_bytes=1, segment_index_bytes=80, validate_records=False)
    log = Log(str(tmp_path), config, clock_ms=ManualClock())
    for i in range(4):
        assert log.append_as_leader(_batch(1, 10, 1_000 + i, False), 0).error == ErrorCode.none
    assert on_disk(log.active_segment) == ([], [])  # nothing written per append
    log.flush()
    assert on_disk(log.active_segment) == in_memory(log.active_segment)
    assert len(log.active_segment.index) == 3  # an entry once more than 1 byte has passed
    for i in range(20):  # the 6-entry time index (80 * 8 // 12) fills: rolls
        assert log.append_as_leader(_batch(1, 10, 2_000 + i, False), 0).error == ErrorCode.none
    assert len(log.segments) >= 2
    assert on_disk(log.segments[0]) == in_memory(log.segments[0])
    expected = [in_memory(segment) for segment in log.segments]
    log.close()
    assert [on_disk(segment) for segment in log.segments] == expected
    reopened = Log(str(tmp_path), config, clock_ms=ManualClock())
    assert reopened.recovery.clean_shutdown and reopened.recovery.index_rebuilds == 0
    assert [in_memory(segment) for segment in reopened.segments] == expected
    reopened.close()
