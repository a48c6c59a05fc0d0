"""What the offset index and the time index share: two parallel int columns in memory, mirrored to
an append-only file of fixed-size big-endian entries.

Entries are appended to the arrays on the append path and encoded to the file in bulk
(write_pending: on flush, roll and close), never one by one; the file has no checksum, and recovery
rebuilds it whenever it is not known to be good, so a crash loses only unwritten entries.
Subclasses name the columns and say what a valid entry is.
"""

import bisect
import os
import struct
from array import array


class EntryFile:
    ENTRY: struct.Struct  # two fields: (first column, second column)

    def __init__(self, path: str, base_offset: int, entries_max: int):
        self.path = path
        self.base_offset = base_offset
        self.entries_max = entries_max
        self.reset()

    # The two columns; subclasses expose them under their own names.
    first: array
    second: array

    def reset(self) -> None:
        """Forget every entry (in memory; the next rewrite() empties the file)."""
        self.first, self.second = array("q"), array("q")
        self._written = 0  # entries [0, _written) are in the file; later ones only in memory

    def __len__(self) -> int:
        return len(self.first)

    @property
    def is_full(self) -> bool:
        return len(self.first) >= self.entries_max

    def _push(self, first: int, second: int) -> None:
        self.first.append(first)
        self.second.append(second)

    # -- file -------------------------------------------------------------------------------
    def write_pending(self) -> None:
        """Append the entries not yet in the file."""
        if self._written < len(self.first):
            with open(self.path, "ab") as file:
                file.write(self._encode(self._written))
            self._written = len(self.first)

    def flush(self) -> None:
        """Write pending entries and fsync the file."""
        self.write_pending()
        with open(self.path, "ab") as file:
            os.fsync(file.fileno())

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= offset, in memory and on disk."""
        self.rewrite(bisect.bisect_left(self.relative_offsets, offset - self.base_offset))

    def rewrite(self, keep: int | None = None) -> None:
        """Rewrite the file from memory (keeping the first `keep` entries)."""
        if keep is not None:
            del self.first[keep:]
            del self.second[keep:]
        with open(self.path, "wb") as file:
            file.write(self._encode(0))
        self._written = len(self.first)

    def _read(self, entries_max: int) -> bytes | None:
        """Forget the entries in memory and read the file (at most one byte past entries_max
        entries, enough to tell it is too long); None if there is no file."""
        self.reset()
        try:
            with open(self.path, "rb") as file:
                return file.read(entries_max * self.ENTRY.size + 1)
        except FileNotFoundError:
            return None

    def _load_entries(self, data: bytes, entries_max: int, valid) -> bool:
        """Fill the columns from data while valid(first, second) holds for each entry given the
        one before; False (and empty) if data is not whole entries within the bound or an entry
        is invalid."""
        size = self.ENTRY.size
        if len(data) % size or len(data) > entries_max * size:
            return False
        for first, second in self.ENTRY.iter_unpack(data):
            if not valid(first, second):
                self.reset()
                return False
            self._push(first, second)
        self._written = len(self.first)
        return True

    def _encode(self, start: int) -> bytes:
        """The file bytes of entries [start, end)."""
        pack = self.ENTRY.pack
        return b"".join(pack(a, b) for a, b in zip(self.first[start:], self.second[start:],
                                                   strict=True))
