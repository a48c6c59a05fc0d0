"""Sparse offset index of one segment: 8-byte entries (int32 offset - base, int32 position).

Following Kafka, an entry maps the LAST offset of a batch to the byte position where that batch
starts, one entry per index_interval_bytes of log appended. A lookup for a target returns the
greatest entry whose offset is <= target (or the segment start); the caller then scans batch
headers forward from that position until a batch's last offset >= target.

Entries live in memory (two int arrays, at most segment_index_bytes / 8 of them, like Kafka's mmap)
and reach the file in bulk (entry_file.py).
"""

import bisect
import struct

from kafkaref.impl.storage.entry_file import EntryFile

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size


class OffsetIndex(EntryFile):
    ENTRY = ENTRY

    @property
    def relative_offsets(self):
        return self.first

    @property
    def positions(self):
        return self.second

    # -- building -------------------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        """Add an entry; offsets and positions must strictly grow."""
        relative = offset - self.base_offset
        offsets, positions = self.first, self.second
        if offsets and (relative <= offsets[-1] or position <= positions[-1]):
            raise ValueError(f"index entry ({offset}, {position}) does not grow the index")
        if len(offsets) >= self.entries_max:
            raise ValueError("index is full")
        self._push(relative, position)

    # -- lookups ----------------------------------------------------------------------------
    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry with offset <= target, else (base, 0)."""
        slot = self._slot(offset)
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + self.first[slot], self.second[slot]

    def _slot(self, offset: int) -> int:
        """Index of the greatest entry with offset <= target (-1: none)."""
        return bisect.bisect_right(self.first, offset - self.base_offset) - 1

    # -- file -------------------------------------------------------------------------------
    def load(self, log_size: int) -> bool:
        """Read entries from the file; False (and empty) if the file fails the sanity check:
        offsets and positions strictly growing, positions inside the log."""
        data = self._read(self.entries_max)
        if data is None:
            return log_size == 0
        last = [-1, -1]

        def valid(relative: int, position: int) -> bool:
            if relative <= last[0] or position <= last[1] or position >= log_size:
                return False
            last[:] = relative, position
            return True

        return self._load_entries(data, self.entries_max, valid)


class OffByOneIndex(OffsetIndex):
    """Mutant M6 (impl/storage/rules.py puts it in OffsetIndex's place): a lookup answers the
    entry after the right one, when there is one."""

    def _slot(self, offset: int) -> int:
        slot = super()._slot(offset)
        return slot + 1 if slot + 1 < len(self.second) else slot
