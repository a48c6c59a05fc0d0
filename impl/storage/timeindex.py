"""Sparse time index of one segment: 12-byte entries (int64 timestamp, int32 offset - base).

An entry says "the greatest timestamp seen up to here is T, first reached at offset O". Entries are
added at the same points as offset index entries (and once more when the segment is closed or
rolled) and only when T grows, so timestamps and offsets are both increasing. Rebuilt by recovery.
"""

import bisect
import struct

from kafkaref.impl.storage.entry_file import EntryFile

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size


class TimeIndex(EntryFile):
    ENTRY = ENTRY

    @property
    def timestamps(self):
        return self.first

    @property
    def relative_offsets(self):
        return self.second

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if it raises the greatest timestamp; no-op when full."""
        relative = offset - self.base_offset
        if self.first and (timestamp <= self.first[-1] or relative < self.second[-1]):
            return
        if self.is_full and not skip_full_check:
            return
        self._push(timestamp, relative)

    @property
    def last_timestamp(self) -> int | None:
        return self.first[-1] if self.first else None

    def lookup(self, timestamp: int) -> int:
        """Offset to start scanning from for the first record with timestamp >= target."""
        slot = bisect.bisect_left(self.first, timestamp) - 1
        return self.base_offset + self.second[slot] if slot >= 0 else self.base_offset

    def load(self, log_size: int) -> bool:
        """Read entries from the file; False (and empty) if it fails the sanity check:
        timestamps growing, offsets not falling and not below the segment's base (an entry may
        lie past the last offset index entry, as the closing one does, and the segment's end is
        not known yet when its indexes load; an int32 cannot lie past a segment's range). A
        missing file passes only for an empty segment, as the offset index's does: the segment's
        largest timestamp is read from this index on load, and an empty one in front of batches
        makes it wrong for Log.offset_for_timestamp (which skips the segment) and for time
        retention (Kafka falls back to the file's mtime there; kafkaref recovers the segment,
        which rebuilds both indexes)."""
        # +1 entry of slack: the closing entry may exceed the limit (skip_full_check)
        data = self._read(self.entries_max + 1)
        if data is None:
            return log_size == 0
        last = [None, None]

        def valid(timestamp: int, relative: int) -> bool:
            if last[0] is not None and (timestamp <= last[0] or relative < last[1]):
                return False
            if relative < 0:
                return False
            last[:] = timestamp, relative
            return True

        return self._load_entries(data, self.entries_max + 1, valid)
