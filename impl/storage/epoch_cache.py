"""Leader epoch cache: (epoch, start offset) pairs, persisted as `leader-epoch-checkpoint`.

Every change is written through atomically (temp file, fsync, rename) as Kafka does, so the cache
on disk never runs ahead of what it describes by more than the log's unflushed tail; recovery
then truncates it to the recovered log end. Lookups follow Kafka's LeaderEpochFileCache.
"""

import bisect

from kafkaref.impl.storage.checkpoint import read_entries, write_entries

UNDEFINED = -1
FILE_NAME = "leader-epoch-checkpoint"


class LeaderEpochCache:
    def __init__(self, path: str | None, entries=()):
        self.path = path  # None: in memory only
        self.entries: list[tuple[int, int]] = list(entries)

    @classmethod
    def load(cls, path: str) -> "LeaderEpochCache | None":
        """The cache stored at path; None if the file is missing or malformed (rebuild it)."""
        raw = read_entries(path)
        if raw is None:
            return None
        try:
            entries = [(int(epoch), offset) for epoch, offset in raw]
        except ValueError:
            return None
        for (e1, o1), (e2, o2) in zip(entries, entries[1:], strict=False):
            if e2 <= e1 or o2 < o1:
                return None
        if any(epoch < 0 or offset < 0 for epoch, offset in entries):
            return None
        return cls(path, entries)

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED

    def start_offset_of(self, epoch: int) -> int | None:
        for known, start in self.entries:
            if known == epoch:
                return start
        return None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that epoch starts at start_offset, as Kafka's LeaderEpochFileCache.assign: no
        change when it is the latest epoch already starting at or before start_offset;
        otherwise trailing entries with an epoch >= `epoch` or a start >= start_offset are
        dropped first (so the cache stays strictly increasing in both: an epoch without records
        has no range, and an older epoch appended again replaces newer empty ones)."""
        if epoch < 0 or start_offset < 0:
            return
        if self.entries and self.entries[-1][0] == epoch and start_offset >= self.entries[-1][1]:
            return
        while self.entries and (self.entries[-1][0] >= epoch or self.entries[-1][1] >= start_offset):
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        self._persist()

    def truncate_from_end(self, end_offset: int) -> None:
        """The log now ends at end_offset: drop epochs that start at or after it."""
        before = len(self.entries)
        while self.entries and self.entries[-1][1] >= end_offset:
            self.entries.pop()
        if len(self.entries) != before:
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at start_offset: epochs wholly before it go; the one covering it
        is moved to start there."""
        kept = [(e, o) for e, o in self.entries if o >= start_offset]
        covering = [(e, o) for e, o in self.entries if o < start_offset]
        if covering and (not kept or kept[0][1] > start_offset):
            kept.insert(0, (covering[-1][0], start_offset))
        if kept != self.entries:
            self.entries = kept
            self._persist()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's endOffsetFor answers it:
        the latest epoch ends at the log end; an epoch below the first known one ends where the
        first starts; otherwise the largest known epoch <= the request, ending where the next
        known epoch starts; (-1, -1) for UNDEFINED or an epoch above every known one."""
        if epoch == UNDEFINED or not self.entries:
            return UNDEFINED, UNDEFINED
        if epoch == self.latest_epoch:
            return epoch, log_end_offset
        epochs = [known for known, _ in self.entries]
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(epochs):
            return UNDEFINED, UNDEFINED
        if higher == 0:
            return epoch, self.entries[0][1]
        return self.entries[higher - 1][0], self.entries[higher][1]

    def clear(self) -> None:
        self.entries = []
        self._persist()

    def persist(self) -> None:
        """Write the cache to its checkpoint file now."""
        self._persist()

    def _persist(self) -> None:
        if self.path is not None:
            write_entries(self.path, self.entries)
