"""MemoryLog: a partition's log in memory, the naive twin of impl/storage's Log.

Holds whole batches (already stamped with offsets and epochs) in a list. Deliberately simple:
the core's tests and the lockstep checks run on it; the real broker runs on the segmented log.
Both implement the whole PartitionLog interface (impl/storage/partition_log.py), the one the
core uses, and properties/tests/storage/test_storage_partition_log.py holds them to the same
contract. What a MemoryLog does not have: files (a flush only moves flushed_offset; crash()
loses what was not flushed), segments (set_segment_bytes changes nothing, retention deletes
nothing) and corruption (read returns what was appended).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator, Sequence

from kio.schema.errors import ErrorCode

from kafkaref.impl.clock import wall_clock_ms
from kafkaref.impl.core.epoch_cache import EpochCache
from kafkaref.impl.protocol import records
from kafkaref.impl.protocol.records import BatchHeader
from kafkaref.impl.storage.partition_log import AppendInfo


class MemoryLog:
    def __init__(self, log_start_offset: int = 0, flush_interval_messages: int | None = None,
                 wall_ms: Callable[[], int] = wall_clock_ms):
        # Kafka's flush.messages: fsync once this many records are unflushed (None: never)
        self.flush_interval_messages = flush_interval_messages
        # the wall clock a LogAppendTime topic's batches are stamped with, as a storage Log's
        # clock_ms (impl/clock.py); tests inject a fake one
        self._wall_ms = wall_ms
        self._empty(log_start_offset)

    def _empty(self, log_start_offset: int) -> None:
        self.log_start_offset = log_start_offset
        self.high_watermark = 0  # the checkpointed hw (exact: written on every change)
        self.log_end_offset = log_start_offset
        self._bases: list[int] = []
        self._batches: list[tuple[BatchHeader, bytes]] = []
        self.epochs = EpochCache()
        self.flushed_offset = log_start_offset
        self.topic_id: str | None = None

    # -- appends ----------------------------------------------------------------------------
    def append(self, data, checked: Sequence[BatchHeader] | None = None) -> AppendInfo:
        """Append stamped batches (a follower's copy); ValueError for one below the leo. checked:
        their headers, the caller checked the frames (else they are checked here)."""
        error, positioned = self._positioned(data, checked)
        if error != ErrorCode.none:
            return AppendInfo(error, log_start_offset=self.log_start_offset)
        expected = self.log_end_offset
        for _, header in positioned:
            if header.base_offset < expected:
                raise ValueError(f"append at {header.base_offset}, leo {self.log_end_offset}")
            expected = header.next_offset
        return self._append_stamped(data, positioned)

    def wall_ms(self) -> int:
        """The wall clock this log runs on (PartitionLog.wall_ms)."""
        return self._wall_ms()

    def append_as_leader(self, data, leader_epoch: int,
                         checked: Sequence[BatchHeader] | None = None,
                         log_append_time: bool = False) -> AppendInfo:
        """Producer batches stamped with offsets from the leo and leader_epoch (a copy: the
        caller's bytes are not changed), then appended. checked: as in append.
        log_append_time: a LogAppendTime topic's append, every batch also stamped with one
        reading of wall_ms (records.log_append_time_header)."""
        error, positioned = self._positioned(data, checked)
        if error == ErrorCode.none and not positioned:
            error = ErrorCode.invalid_record
        if error == ErrorCode.none and checked is None and any(
                h.base_offset != 0 for _, h in positioned):
            error = ErrorCode.invalid_record  # a producer's batch starts at offset 0
        if error != ErrorCode.none:
            return AppendInfo(error, log_start_offset=self.log_start_offset)
        append_time = self._wall_ms() if log_append_time else None
        buffer = bytearray(data)
        view = memoryview(buffer)
        next_offset, stamped = self.log_end_offset, []
        for position, header in positioned:
            if log_append_time:
                end = position + header.size_bytes
                head = records.log_append_time_header(view[position:end], next_offset,
                                                      leader_epoch, append_time)
                view[position : position + records.HEADER_SIZE] = head
                stamped.append((position, records.parse_header(head)))
            else:
                records.stamp_batch(view[position:], next_offset, leader_epoch)
                stamped.append((position, BatchHeader(next_offset, header[1], leader_epoch,
                                                      *header[3:])))
            next_offset += header.last_offset_delta + 1
        del view  # release the export before reading the buffer
        info = self._append_stamped(bytes(buffer), stamped)
        return info._replace(log_append_time=append_time) if log_append_time else info

    @staticmethod
    def _positioned(data, checked) -> tuple[ErrorCode, list[tuple[int, BatchHeader]]]:
        """(error, [(byte position, header)]): from the caller's headers, or split and checked
        here (size, magic, CRC of each frame)."""
        if checked is not None:
            positioned, position = [], 0
            for header in checked:
                positioned.append((position, header))
                position += header.size_bytes
            return ErrorCode.none, positioned
        error, views = records.split_batches(data)
        positioned, position = [], 0
        for view in views if error == ErrorCode.none else ():
            error = records.check_batch(view)
            if error != ErrorCode.none:
                break  # the first bad batch is the answer
            positioned.append((position, records.parse_header(view)))
            position += len(view)
        return error, positioned

    def _append_stamped(self, data, positioned) -> AppendInfo:
        total = 0
        for position, header in positioned:
            raw = bytes(data[position : position + header.size_bytes])
            self.epochs.assign(header.partition_leader_epoch, header.base_offset)
            self._bases.append(header.base_offset)
            self._batches.append((header, raw))
            self.log_end_offset = header.next_offset
            total += len(raw)
        self.maybe_flush()
        if not positioned:
            return AppendInfo(ErrorCode.none, log_start_offset=self.log_start_offset)
        return AppendInfo(ErrorCode.none, positioned[0][1].base_offset,
                          positioned[-1][1].last_offset, len(positioned), total,
                          self.log_start_offset)

    @property
    def size_bytes(self) -> int:
        """Bytes of the batches held (DescribeLogDirs' partition size)."""
        return sum(len(raw) for _, raw in self._batches)

    def set_segment_bytes(self, segment_bytes: int | None) -> None:
        """The topic's segment.bytes (Log.set_segment_bytes): nothing to do, a MemoryLog is
        one segment that never rolls."""

    # -- reads ------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one: bool = True) -> bytes:
        """Whole batches from the one holding `offset`, ending at or below max_offset (default
        the leo), within max_bytes (but at least one batch when min_one); b"" out of range."""
        if offset < self.log_start_offset or offset > self.log_end_offset:
            return b""
        max_offset = self.log_end_offset if max_offset is None else max_offset
        out, size = [], 0
        for header, raw in self._batches[self._slot(offset):]:
            if header.last_offset < offset:
                continue
            if header.base_offset >= max_offset or header.next_offset > max_offset:
                break
            if size + len(raw) > max_bytes and not (min_one and not out):
                break  # full: a smaller later batch must not jump the queue
            out.append(raw)
            size += len(raw)
        return b"".join(out)

    def read_slice(self, offset: int, max_bytes: int, upper_offset: int | None = None,
                   min_one: bool = True) -> MemorySlice:
        """read() as a MemorySlice (what a network thread sends, as a storage FetchSlice)."""
        if offset < self.log_start_offset or offset > self.log_end_offset:
            return MemorySlice(ErrorCode.offset_out_of_range, b"", offset, offset)
        data = self.read(offset, max_bytes, upper_offset, min_one)
        if not data:
            return MemorySlice(ErrorCode.none, b"", offset, offset)
        _, positioned = records.split_batches(data)
        first, last = records.parse_header(positioned[0]), records.parse_header(positioned[-1])
        return MemorySlice(ErrorCode.none, data, first.base_offset, last.next_offset)

    def bytes_between(self, start_offset: int, end_offset: int) -> int:
        """Bytes of the batches holding offsets in [start_offset, end_offset) (none when the
        range is empty, as Log counts)."""
        if start_offset >= end_offset:
            return 0
        total = 0
        for header, raw in self._batches[self._slot(start_offset):]:
            if header.base_offset >= end_offset:
                break
            if header.last_offset >= start_offset:
                total += len(raw)
        return total

    def iter_batches(self, start_offset: int | None = None,
                     ) -> Iterator[tuple[BatchHeader, bytes]]:
        """(header, bytes) of every batch from the one holding start_offset (default: start)."""
        start = self.log_start_offset if start_offset is None else start_offset
        for header, raw in self._batches[self._slot(start):]:
            if header.last_offset >= start:
                yield header, raw

    def batches(self) -> list[tuple[BatchHeader, bytes]]:
        """Every batch with its header (tests)."""
        return list(self._batches)

    def _slot(self, offset: int) -> int:
        """Index of the batch holding offset (or the first past it)."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    # -- truncation, hw, topic id ------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= offset."""
        cut = min(offset, self.log_end_offset)
        while self._batches and self._batches[-1][0].last_offset >= offset:
            cut = min(cut, self._batches.pop()[0].base_offset)  # a straddling batch goes whole
            self._bases.pop()
        # the leo is where the data ends (as the storage log's): never past a removed batch
        self.log_end_offset = self._batches[-1][0].next_offset if self._batches else max(
            self.log_start_offset, cut
        )
        self.epochs.truncate_from_end(self.log_end_offset)
        self.flushed_offset = min(self.flushed_offset, self.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)

    def increment_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: records below offset (<= hw) become unreadable. A MemoryLog is one
        segment, and a segment holding the new start stays whole (as Log's does)."""
        if offset <= self.log_start_offset:
            return
        if offset > self.high_watermark:
            raise ValueError(f"log start {offset} above the high watermark {self.high_watermark}")
        self.log_start_offset = offset
        self.flushed_offset = max(self.flushed_offset, offset)  # as Log's recovery point
        self.epochs.truncate_from_start(offset)

    def delete_old_segments(self, retention_ms: int | None = None,
                            retention_bytes: int | None = None, delete: bool = True) -> int:
        """Retention deletes whole segments, and a MemoryLog has none (as set_segment_bytes
        changes nothing): nothing goes. DeleteRecords still moves its log start."""
        return 0

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and start again, empty, at offset (Log's)."""
        self._batches, self._bases = [], []
        self.log_start_offset = self.log_end_offset = self.flushed_offset = offset
        self.high_watermark = offset
        self.epochs.clear()

    def set_high_watermark(self, offset: int) -> None:
        """Remember the hw (clamped to [log start, leo]), as Log checkpoints it."""
        self.high_watermark = max(self.log_start_offset, min(offset, self.log_end_offset))

    def record_topic_id(self, topic_id: str) -> None:
        if topic_id:
            self.topic_id = topic_id

    # -- durability, lifecycle --------------------------------------------------------------
    def flush(self) -> None:
        self.flushed_offset = self.log_end_offset

    def maybe_flush(self) -> bool:
        """Kafka's flush.messages: flush once that many records are unflushed."""
        every = self.flush_interval_messages
        if every is not None and self.log_end_offset - self.flushed_offset >= every:
            self.flush()
            return True
        return False

    @property
    def checkpoints_off_lock(self) -> bool:
        """Without a flush policy maybe_flush does nothing, so it may run beside appends."""
        return self.flush_interval_messages is None

    def close(self) -> None:
        """A clean shutdown: everything becomes durable."""
        self.flush()

    def delete(self) -> None:
        """The topic was deleted: the log is empty again, from offset 0, with no topic id (as the
        Log a factory opens again in the deleted one's directory)."""
        self._empty(0)

    def crash(self) -> None:
        """An unclean shutdown: what was not flushed is lost (the epoch cache is trimmed to the
        recovered end, as recovery does); the checkpointed hw cannot pass the recovered end. A
        recovered end below the log start starts the log again there (Log's recovery)."""
        self.truncate_to(self.flushed_offset)
        if self.log_end_offset < self.log_start_offset:
            self.truncate_fully_and_start_at(self.log_start_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)


class MemorySlice:
    """A MemoryLog read handed out as a RecordsSlice (impl/storage/partition_log.py): the bytes
    themselves, written to a socket with os.write where a FetchSlice uses sendfile."""

    __slots__ = ("error", "data", "size", "first_offset", "next_offset")

    def __init__(self, error: ErrorCode, data: bytes, first_offset: int, next_offset: int):
        self.error, self.data, self.size = error, data, len(data)
        self.first_offset, self.next_offset = first_offset, next_offset

    def __len__(self) -> int:
        return self.size

    def read_bytes(self) -> bytes:
        return self.data

    def sendfile(self, out_fd: int, offset: int, count: int | None = None) -> int:
        count = self.size - offset if count is None else min(count, self.size - offset)
        return os.write(out_fd, self.data[offset:offset + count]) if count > 0 else 0

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> MemorySlice:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
