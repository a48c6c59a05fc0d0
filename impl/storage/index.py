"""Sparse offset index of one segment: 8-byte entries (int32 offset - base, int32 position).

Following Kafka, an entry maps the LAST offset of a batch to the byte position where that batch
starts, one entry per index_interval_bytes of log appended. A lookup for a target returns the
greatest entry whose offset is <= target (or the segment start); the caller then scans batch
headers forward from that position until a batch's last offset >= target.

Entries live in memory (two int arrays, at most segment_index_bytes / 8 of them, like Kafka's mmap)
and are encoded and appended to the file in bulk (write_pending: on flush, roll and close), not
one by one on the append path; the file has no checksum and is rebuilt by recovery whenever it is
not known to be good (a crash loses the unwritten entries with nothing else lost).
"""

import bisect
import os
import struct
from array import array

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size


class OffsetIndex:
    def __init__(self, path: str, base_offset: int, entries_max: int, off_by_one: bool = False):
        self.path = path
        self.base_offset = base_offset
        self.entries_max = entries_max
        self.relative_offsets = array("q")
        self.positions = array("q")
        self._written = 0  # entries [0, _written) are in the file; later ones only in memory
        self._off_by_one = off_by_one  # mutant M6

    # -- building -------------------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        """Add an entry; offsets and positions must strictly grow."""
        relative = offset - self.base_offset
        offsets, positions = self.relative_offsets, self.positions
        if offsets and (relative <= offsets[-1] or position <= positions[-1]):
            raise ValueError(f"index entry ({offset}, {position}) does not grow the index")
        if len(offsets) >= self.entries_max:
            raise ValueError("index is full")
        # Only the arrays grow here (this runs on appends); write_pending() encodes the entries
        # not yet in the file, on flush, close or roll.
        offsets.append(relative)
        positions.append(position)

    @property
    def is_full(self) -> bool:
        return len(self.relative_offsets) >= self.entries_max

    def __len__(self) -> int:
        return len(self.relative_offsets)

    # -- lookups ----------------------------------------------------------------------------
    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry with offset <= target, else (base, 0)."""
        slot = bisect.bisect_right(self.relative_offsets, offset - self.base_offset) - 1
        if self._off_by_one and slot + 1 < len(self.positions):
            slot += 1
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + self.relative_offsets[slot], self.positions[slot]

    def lookup_position(self, position: int) -> int:
        """Greatest indexed batch start <= position (0 if none): a safe place to scan from."""
        slot = bisect.bisect_right(self.positions, position) - 1
        return self.positions[slot] if slot >= 0 else 0

    # -- file -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every entry (in memory; the next rewrite() empties the file)."""
        self.relative_offsets, self.positions = array("q"), array("q")
        self._written = 0

    def write_pending(self) -> None:
        """Append the entries not yet in the file (encoded from the arrays, at most the
        index's bounded size)."""
        if self._written < len(self.relative_offsets):
            with open(self.path, "ab") as file:
                file.write(_encode(self.relative_offsets, self.positions, self._written))
            self._written = len(self.relative_offsets)

    def flush(self) -> None:
        """Write pending entries and fsync the file."""
        self.write_pending()
        with open(self.path, "ab") as file:
            os.fsync(file.fileno())

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= offset, in memory and on disk."""
        keep = bisect.bisect_left(self.relative_offsets, offset - self.base_offset)
        self.rewrite(keep)

    def rewrite(self, keep: int | None = None) -> None:
        """Rewrite the file from memory (keeping the first `keep` entries)."""
        if keep is not None:
            del self.relative_offsets[keep:]
            del self.positions[keep:]
        with open(self.path, "wb") as file:
            file.write(_encode(self.relative_offsets, self.positions, 0))
        self._written = len(self.relative_offsets)

    def load(self, log_size: int) -> bool:
        """Read entries from the file; False (and empty) if the file fails the sanity check."""
        self.relative_offsets, self.positions = array("q"), array("q")
        self._written = 0
        try:
            with open(self.path, "rb") as file:
                data = file.read(self.entries_max * ENTRY_SIZE + 1)
        except FileNotFoundError:
            return log_size == 0
        if len(data) % ENTRY_SIZE or len(data) > self.entries_max * ENTRY_SIZE:
            return False
        previous = (-1, -1)
        for relative, position in ENTRY.iter_unpack(data):
            if relative <= previous[0] or position <= previous[1] or position >= log_size:
                self.relative_offsets, self.positions = array("q"), array("q")
                return False
            self.relative_offsets.append(relative)
            self.positions.append(position)
            previous = (relative, position)
        self._written = len(self.relative_offsets)
        return True


def _encode(relative_offsets: array, positions: array, start: int) -> bytes:
    """The file bytes of entries [start, end)."""
    return b"".join(
        ENTRY.pack(r, p)
        for r, p in zip(relative_offsets[start:], positions[start:], strict=True)
    )
