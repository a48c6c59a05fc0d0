"""An in-memory log with the interface the core uses; the naive twin of impl/storage's Log.

Holds whole batches (already stamped with offsets and epochs) in a list. Deliberately simple:
the core's tests and the lockstep checks run on it; the real broker runs on the segmented log
through the same methods.
"""

from __future__ import annotations

import bisect

from kafkaref.impl.core.batches import positioned_headers
from kafkaref.impl.core.epoch_cache import EpochCache
from kafkaref.impl.protocol.records import BatchHeader


class MemoryLog:
    def __init__(self, log_start_offset: int = 0, flush_interval_messages: int | None = None):
        self.log_start_offset = log_start_offset
        # Kafka's flush.messages: fsync once this many records are unflushed (None: never)
        self.flush_interval_messages = flush_interval_messages
        self.high_watermark = 0  # the checkpointed hw (exact: written on every change)
        self.log_end_offset = log_start_offset
        self._bases: list[int] = []
        self._batches: list[tuple[BatchHeader, bytes]] = []
        self.epochs = EpochCache()
        self.flushed_offset = log_start_offset

    def append(self, data: bytes) -> None:
        """Append stamped batches; their offsets must continue the log exactly."""
        error, positioned = positioned_headers(data)
        if error.value != 0:
            raise ValueError(f"malformed batches: {error.name}")
        for position, header in positioned:
            if header.base_offset != self.log_end_offset:
                raise ValueError(f"append at {header.base_offset}, leo {self.log_end_offset}")
            raw = bytes(data[position : position + header.size_bytes])
            self.epochs.assign(header.partition_leader_epoch, header.base_offset)
            self._bases.append(header.base_offset)
            self._batches.append((header, raw))
            self.log_end_offset = header.next_offset
        every = self.flush_interval_messages
        if every is not None and self.log_end_offset - self.flushed_offset >= every:
            self.flush()

    def set_segment_bytes(self, segment_bytes: int | None) -> None:
        """The topic's segment.bytes (Log.set_segment_bytes): nothing to do, a MemoryLog is
        one segment that never rolls."""

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one: bool = True) -> bytes:
        """Whole batches from the one holding `offset`, below max_offset, within max_bytes
        (but at least one batch when min_one)."""
        index = max(0, bisect.bisect_right(self._bases, offset) - 1)
        out, size = [], 0
        for header, raw in self._batches[index:]:
            if header.last_offset < offset:
                continue
            if header.base_offset >= max_offset or header.next_offset > max_offset:
                break
            if size + len(raw) > max_bytes and not (min_one and not out):
                break
            out.append(raw)
            size += len(raw)
        return b"".join(out)

    def bytes_between(self, start_offset: int, end_offset: int) -> int:
        """Bytes of the batches holding offsets in [start_offset, end_offset)."""
        index = max(0, bisect.bisect_right(self._bases, start_offset) - 1)
        total = 0
        for header, raw in self._batches[index:]:
            if header.base_offset >= end_offset:
                break
            if header.last_offset >= start_offset:
                total += len(raw)
        return total

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

    def batches(self) -> list[tuple[BatchHeader, bytes]]:
        return list(self._batches)

    def flush(self) -> None:
        self.flushed_offset = self.log_end_offset

    def set_high_watermark(self, hw: int) -> None:
        self.high_watermark = hw

    def crash(self) -> None:
        """An unclean shutdown: what was not flushed is lost (the epoch cache is trimmed to the
        recovered end, as recovery does); the checkpointed hw cannot pass the recovered end."""
        self.truncate_to(self.flushed_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
