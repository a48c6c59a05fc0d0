"""Sparse time index of one segment: 12-byte entries (int64 timestamp, int32 offset - base).

An entry says "the greatest timestamp seen up to here is T, first reached at offset O". Entries are
added at the same points as offset index entries (and once more when the segment is closed or
rolled) and only when T grows, so timestamps and offsets are both increasing. Rebuilt by recovery.
"""

import bisect
import os
import struct
from array import array

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size


class TimeIndex:
    def __init__(self, path: str, base_offset: int, entries_max: int):
        self.path = path
        self.base_offset = base_offset
        self.entries_max = entries_max
        self.timestamps = array("q")
        self.relative_offsets = array("q")
        self._written = 0  # entries [0, _written) are in the file; later ones only in memory

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if it raises the greatest timestamp; no-op when full."""
        relative = offset - self.base_offset
        if self.timestamps and (
            timestamp <= self.timestamps[-1] or relative < self.relative_offsets[-1]
        ):
            return
        if self.is_full and not skip_full_check:
            return
        self.timestamps.append(timestamp)
        self.relative_offsets.append(relative)  # encoded for the file by write_pending()

    @property
    def is_full(self) -> bool:
        return len(self.timestamps) >= self.entries_max

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def last_timestamp(self) -> int | None:
        return self.timestamps[-1] if self.timestamps else None

    def lookup(self, timestamp: int) -> int:
        """Offset to start scanning from for the first record with timestamp >= target."""
        slot = bisect.bisect_left(self.timestamps, timestamp) - 1
        return self.base_offset + self.relative_offsets[slot] if slot >= 0 else self.base_offset

    def reset(self) -> None:
        """Forget every entry (in memory; the next rewrite() empties the file)."""
        self.timestamps, self.relative_offsets = array("q"), array("q")
        self._written = 0

    def write_pending(self) -> None:
        """Append the entries not yet in the file."""
        if self._written < len(self.timestamps):
            with open(self.path, "ab") as file:
                file.write(_encode(self.timestamps, self.relative_offsets, self._written))
            self._written = len(self.timestamps)

    def flush(self) -> None:
        self.write_pending()
        with open(self.path, "ab") as file:
            os.fsync(file.fileno())

    def truncate_to(self, offset: int) -> None:
        keep = bisect.bisect_left(self.relative_offsets, offset - self.base_offset)
        self.rewrite(keep)

    def rewrite(self, keep: int | None = None) -> None:
        if keep is not None:
            del self.timestamps[keep:]
            del self.relative_offsets[keep:]
        with open(self.path, "wb") as file:
            file.write(_encode(self.timestamps, self.relative_offsets, 0))
        self._written = len(self.timestamps)

    def load(self, next_relative_offset: int) -> bool:
        """Read entries from the file; False (and empty) if it fails the sanity check."""
        self.timestamps, self.relative_offsets = array("q"), array("q")
        self._written = 0
        try:
            with open(self.path, "rb") as file:
                # +1 entry of slack: the closing entry may exceed the limit (skip_full_check)
                data = file.read((self.entries_max + 1) * ENTRY_SIZE + 1)
        except FileNotFoundError:
            return True
        if len(data) % ENTRY_SIZE or len(data) > (self.entries_max + 1) * ENTRY_SIZE:
            return False
        for timestamp, relative in ENTRY.iter_unpack(data):
            if self.timestamps and (
                timestamp <= self.timestamps[-1] or relative < self.relative_offsets[-1]
            ):
                self.timestamps, self.relative_offsets = array("q"), array("q")
                return False
            if not 0 <= relative < max(next_relative_offset, 1):
                self.timestamps, self.relative_offsets = array("q"), array("q")
                return False
            self.timestamps.append(timestamp)
            self.relative_offsets.append(relative)
        self._written = len(self.timestamps)
        return True


def _encode(timestamps: array, relative_offsets: array, start: int) -> bytes:
    """The file bytes of entries [start, end)."""
    return b"".join(
        ENTRY.pack(t, r) for t, r in zip(timestamps[start:], relative_offsets[start:], strict=True)
    )
