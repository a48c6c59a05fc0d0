"""The core's MemoryLog reads as the storage Log reads (the PartitionLog contract), whatever the
offset: the same error (OFFSET_OUT_OF_RANGE below the log start and above the leo), the same
bytes, the same offsets of what a slice holds, the same byte counts (bytes_between, what a
parked fetch's min_bytes is judged by) and batches (iter_batches), also from below the first
batch of a log started again at an offset. The core's tests run on MemoryLogs, so a MemoryLog
that answers differently from the disk log makes them judge another broker.

test_storage_partition_log.py states the contract line by line in the storage layer; this runs
it in the core's, over drawn logs. Found by mutation testing (session 2225a175104f's survivor
00054): MemoryLog.read_slice's out-of-range guard with `or` read `and` passed the core layer
(the partition checks the range before reading, so only a direct reader meets the guard); and
its survivors 00208 (bytes_between counted from -1) and 00200 (the batch slot of an offset below
the first batch read -1, the last batch). A slice's sendfile (what the server writes to a
socket) sends the same bytes from either log, in two parts split anywhere: session
9df4313ef37b's survivor 00105 (MemorySlice.sendfile never writing) ran in no core test. And a
byte limit exactly at a batch's end takes that batch (00165: `>` read `>=` left it out; the
drawn limits never fell on a batch end)."""

import itertools
import os
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol.records import build_batch, split_batches
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

# One segment, as a MemoryLog is: a Log's read stops at the end of a segment (as Kafka's does)
CONFIG = LogConfig(retention_ms=-1)
_batches = st.lists(st.integers(1, 3), min_size=1, max_size=12)  # records per batch


def _slice(log, offset: int, max_bytes: int, upper: int | None, split: int):
    with log.read_slice(offset, max_bytes, upper) as fetched:
        data = fetched.read_bytes()
        where = (fetched.first_offset, fetched.next_offset) if data else None
        return fetched.error, data, where, _sent(fetched, split)


def _sent(fetched, split: int) -> tuple[int, bytes]:
    """(bytes sendfile reports, bytes the reader gets) for the slice sent in two parts, the
    first at most `split` bytes (the server sends what a socket takes, then the rest)."""
    reader, writer = os.pipe()
    try:
        first = fetched.sendfile(writer, 0, split)
        count = first + fetched.sendfile(writer, first)
        os.close(writer)
        writer = -1
        return count, b"".join(iter(lambda: os.read(reader, 1 << 16), b""))
    finally:
        os.close(reader)
        if writer >= 0:
            os.close(writer)


@given(batches=_batches, started_at=st.integers(0, 20), start_back=st.integers(0, 40),
       truncate_back=st.integers(0, 40), max_bytes=st.sampled_from([1, 100, 1 << 20]),
       split=st.integers(0, 300), data=st.data())
def test_a_memory_log_reads_as_the_disk_log(batches, started_at, start_back, truncate_back,
                                            max_bytes, split, data):
    memory = MemoryLog()
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        disk = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            for log in (memory, disk):
                log.truncate_fully_and_start_at(started_at)  # a follower starting again there
            for i, count in enumerate(batches):
                batch = build_batch([(b"k", b"v" * (10 + 7 * i), (), 1_000)] * count)
                for log in (memory, disk):
                    assert log.append_as_leader(batch, 0).error == ErrorCode.none
            leo = disk.log_end_offset
            for log in (memory, disk):
                log.truncate_to(max(started_at, leo - truncate_back))
                log.set_high_watermark(log.log_end_offset)
                log.increment_log_start_offset(max(0, log.log_end_offset - start_back))
            assert (memory.log_start_offset, memory.log_end_offset) == (
                disk.log_start_offset, disk.log_end_offset)
            upper = data.draw(st.none() | st.integers(0, disk.log_end_offset + 1), label="upper")
            for offset in range(-1, disk.log_end_offset + 3):
                assert _slice(memory, offset, max_bytes, upper, split) == (
                    _slice(disk, offset, max_bytes, upper, split)), offset
                # a byte limit exactly at each batch end, and one byte short of it
                _, views = split_batches(_slice(disk, offset, 1 << 20, upper, split)[1])
                ends = list(itertools.accumulate(len(v) for v in views))
                for limit in [e + d for e in ends for d in (0, -1) if e + d > 0]:
                    assert _slice(memory, offset, limit, upper, split) == (
                        _slice(disk, offset, limit, upper, split)), (offset, limit)
            # counts and batches from the log start, or from below the first batch (a fetch
            # parked before the log started again): the disk log keeps whole segments below
            # its log start, which the MemoryLog (one segment, never deleted) keeps too
            leo, start = disk.log_end_offset, disk.log_start_offset
            for offset in [*range(started_at), *range(start, leo + 1)]:
                for end in range(offset, leo + 2):
                    assert memory.bytes_between(offset, end) == disk.bytes_between(offset, end), (
                        offset, end)
                assert [bytes(b) for _, b in memory.iter_batches(offset)] == [
                    bytes(b) for _, b in disk.iter_batches(offset)], offset
        finally:
            disk.close()
