"""Leader epoch cache (epoch -> start offset) with Kafka's end-offset lookup.

Used by MemoryLog; impl/storage keeps its own persisted cache with the same answers.
"""

from __future__ import annotations

import bisect

UNDEFINED = -1


class EpochCache:
    def __init__(self, entries: list[tuple[int, int]] | None = None):
        self.entries: list[tuple[int, int]] = list(entries or [])  # (epoch, start_offset)

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED

    def start_offset_of(self, epoch: int) -> int | None:
        for e, start in self.entries:
            if e == epoch:
                return start
        return None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at start_offset; only ever grows epochs and offsets."""
        if self.entries and epoch <= self.entries[-1][0]:
            return
        # an older epoch that started at or after this offset never had data: drop it
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to end_offset: drop epochs starting at or after it."""
        while self.entries and self.entries[-1][1] >= end_offset:
            self.entries.pop()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest known epoch <= epoch, first offset after it); (-1, -1) if none is known."""
        if epoch == UNDEFINED or not self.entries or epoch < self.entries[0][0]:
            return UNDEFINED, UNDEFINED
        if epoch >= self.latest_epoch:
            return self.latest_epoch, log_end_offset
        epochs = [e for e, _ in self.entries]
        higher = bisect.bisect_right(epochs, epoch)
        return self.entries[higher - 1][0], self.entries[higher][1]
