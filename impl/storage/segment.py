"""One log segment: `<base>.log` (batches back to back), `<base>.index`, `<base>.timeindex`.

The .log file is held open as one O_APPEND file descriptor: appends are single write() calls,
reads are pread() or sendfile() on that descriptor (or a dup of it), so no segment is ever held in
memory. Offsets in a segment only grow; positions are int32, so a segment stays below 2 GiB.
"""

import bisect
import mmap
import os

from kafkaref.impl.protocol.crc import crc_matches, crc_matches_in_file
from kafkaref.impl.protocol.records import (
    HEADER,
    HEADER_SIZE,
    INT32_MAX,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    parse_header,
)
from kafkaref.impl.storage.checkpoint import write_atomically
from kafkaref.impl.storage.config import RECOVERY_WINDOW_BYTES, SCAN_CHUNK_BYTES, LogConfig
from kafkaref.impl.storage.timeindex import TimeIndex

NO_TIMESTAMP = -1
DURABLE_SUFFIX = ".durable"  # power-loss mode: the size of NAME.log known fsynced


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's segment file name: the base offset as 20 zero-padded digits."""
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    def __init__(self, directory: str, base_offset: int, config: LogConfig, created_ms: int):
        self.base_offset = base_offset
        self.config = config
        self.log_path = os.path.join(directory, file_name(base_offset, ".log"))
        self.index = config.rules.offset_index(  # OffsetIndex, unless mutant M6 is on
            os.path.join(directory, file_name(base_offset, ".index")),
            base_offset,
            config.index_entries_max,
        )
        self.timeindex = TimeIndex(
            os.path.join(directory, file_name(base_offset, ".timeindex")),
            base_offset,
            config.time_index_entries_max,
        )
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.flushed_size = self.size  # bytes known durable; the Log lowers this for new files
        self.created_ms = created_ms
        # Kafka's rollingBasedTimestamp: the first batch's max timestamp, read when first needed
        self._rolling_base_ms: int | None = None
        self.next_offset = base_offset  # exact once loaded or recovered
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_last_index_entry = 0
        # read on every append (the config is frozen)
        self._index_interval_bytes = config.index_interval_bytes
        self._segment_bytes = config.segment_bytes
        self._segment_ms = config.segment_ms

    @classmethod
    def create(cls, directory: str, base_offset: int, config: LogConfig, now_ms: int):
        """A new empty segment (stale files of the same name are removed first)."""
        for suffix in (".log", ".index", ".timeindex"):
            path = os.path.join(directory, file_name(base_offset, suffix))
            if os.path.exists(path):
                os.unlink(path)
        segment = cls(directory, base_offset, config, now_ms)
        segment.flushed_size = 0
        return segment

    # -- appending ----------------------------------------------------------------------------
    def append(self, batch, header: BatchHeader) -> None:
        """Write one (already checked and stamped) batch at the end; maybe add index entries.

        batch is a bytes-like object, or a tuple of them written with one writev() (the leader
        path passes a freshly stamped 16-byte prefix and the client's bytes after it, so the
        batch is never copied in user space)."""
        position = self.size
        if isinstance(batch, tuple):
            size = sum(len(part) for part in batch)
            written = os.writev(self.fd, batch)
        else:
            size = len(batch)
            written = os.write(self.fd, batch)
        if written != size:  # a short write on a regular file means a full disk
            os.ftruncate(self.fd, position)
            raise OSError(f"short write to {self.log_path}: {written} of {size} bytes")
        self.size = position + written
        base_offset, last_offset_delta, max_timestamp = header[0], header[6], header[8]
        self._account(base_offset + last_offset_delta, max_timestamp, position, written)

    def append_parts(self, parts: tuple, size: int, last_offset: int,
                     max_timestamp: int) -> None:
        """append() for the leader's hot path: parts (written with one writev) make one checked,
        stamped batch of `size` bytes whose fields the caller already has."""
        position = self.size
        written = os.writev(self.fd, parts)
        if written != size:  # a short write on a regular file means a full disk
            os.ftruncate(self.fd, position)
            raise OSError(f"short write to {self.log_path}: {written} of {size} bytes")
        self.size = position + written
        self._account(last_offset, max_timestamp, position, written)

    def _account(self, last_offset, max_timestamp, position, size) -> None:
        """Bookkeeping for a batch just written (or found by recovery) at position: greatest
        timestamp, an index entry when index_interval_bytes have passed since the last one.
        The time index names a batch by its last offset, as Kafka's does (LogSegment.append and
        recover): a truncation removes an entry exactly when it removes the batch, also a batch
        straddling the truncation point (named by its base offset, the entry outlived it and the
        segment kept the timestamp of records it no longer held)."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        since = self.bytes_since_last_index_entry
        if since > self._index_interval_bytes and not self.index.is_full:
            self.index.append(last_offset, position)
            self.timeindex.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = size
        else:
            self.bytes_since_last_index_entry = since + size
        self.next_offset = last_offset + 1

    def on_become_inactive(self) -> None:
        """On roll or close: record the segment's greatest timestamp in the time index."""
        # skip_full_check may go one entry past the limit, never more (TimeIndex.load allows 1)
        if self.max_timestamp != NO_TIMESTAMP and len(self.timeindex) <= self.timeindex.entries_max:
            self.timeindex.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
            )

    def set_segment_bytes(self, segment_bytes: int) -> None:
        """Roll at this size from now on (the topic's segment.bytes changed)."""
        self._segment_bytes = segment_bytes

    def largest_timestamp(self) -> int:
        """What time-based retention compares with now: the greatest record timestamp, or the
        .log file's last modification (ms) when no batch carries one (Kafka's
        LogSegment.largestTimestamp)."""
        if self.max_timestamp != NO_TIMESTAMP:
            return self.max_timestamp
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def needs_roll(self, header: BatchHeader, batch_size: int, now_ms: int) -> bool:
        """Kafka's shouldRoll: size, age, a full index, or an offset that no longer fits."""
        return self.needs_roll_at(header[0] + header[6], batch_size, now_ms, header[8])

    def needs_roll_at(self, last_offset: int, batch_size: int, now_ms: int,
                      max_timestamp: int) -> bool:
        """needs_roll() for a batch ending at last_offset with this max timestamp (the hot path
        has no BatchHeader). Age is Kafka's timeWaitedForRoll: the batch's max timestamp minus
        the first batch's, or, when the first batch has none, now minus the segment's creation;
        it rolls past segment.ms (so a batch stamped a week after the segment's first rolls it)."""
        if last_offset - self.base_offset > INT32_MAX:  # the last offset must fit
            return True
        size = self.size
        if size == 0:
            return False
        first = self._rolling_base_ms
        if first is None:
            first = self._load_rolling_base()
        waited = max_timestamp - first if first >= 0 else now_ms - self.created_ms
        return (
            size + batch_size > self._segment_bytes
            or waited > self._segment_ms
            or self.index.is_full
            or self.timeindex.is_full
        )

    def _load_rolling_base(self) -> int:
        """The first batch's max timestamp (NO_TIMESTAMP if it has none), remembered."""
        header = self.read_header(0)
        first = header.max_timestamp if header is not None else NO_TIMESTAMP
        self._rolling_base_ms = first
        return first

    # -- reading ------------------------------------------------------------------------------
    def read_header(self, position: int) -> BatchHeader | None:
        """The header of the batch at position; None if it is not a plausible whole batch."""
        header = parse_header(os.pread(self.fd, HEADER_SIZE, position))
        if header is None or header.size_bytes < HEADER_SIZE:
            return None
        if position + header.size_bytes > self.size or header.magic != MAGIC_V2:
            return None
        return header

    def scan_headers(self, position: int, end: int | None = None):
        """Yield (position, header) for consecutive batches from position up to end.

        Reads SCAN_CHUNK_BYTES at a time so that small batches cost one pread per chunk; stops
        quietly at the first implausible header (recovery deals with those).
        """
        end = self.size if end is None else min(end, self.size)
        chunk = b""
        chunk_start = position
        while position + HEADER_SIZE <= end:
            if position + HEADER_SIZE > chunk_start + len(chunk):
                chunk_start = position
                chunk = os.pread(self.fd, max(SCAN_CHUNK_BYTES, HEADER_SIZE), position)
            header = parse_header(chunk, position - chunk_start)
            if header is None or header.size_bytes < HEADER_SIZE or header.magic != MAGIC_V2:
                return
            if position + header.size_bytes > end:
                return
            yield position, header
            position += header.size_bytes

    def translate_offset(self, offset: int, start_position: int = 0):
        """(position, header) of the first batch whose last offset >= offset, or None.

        The index has no checksum: if the batch at the looked-up position does not end at the
        entry's offset, the entry is not trusted and the scan starts from start_position."""
        entry_offset, position = self.index.lookup(offset)
        if position > start_position and not self._entry_holds(entry_offset, position):
            position = start_position
        for found, header in self.scan_headers(max(position, start_position)):
            if header.last_offset >= offset:
                return found, header
        return None

    def _entry_holds(self, entry_offset: int, position: int) -> bool:
        header = self.read_header(position)
        return header is not None and header.last_offset == entry_offset

    def boundary_at_or_before(self, limit: int, start_position: int) -> tuple[int, int | None]:
        """(position, offset after the batch ending there) of the greatest batch boundary <=
        limit, not below start_position (itself a boundary; offset None if nothing fits)."""
        slot = bisect.bisect_right(self.index.positions, limit) - 1
        position = start_position
        if slot >= 0 and self.index.positions[slot] > start_position:
            entry_offset = self.base_offset + self.index.relative_offsets[slot]
            if self._entry_holds(entry_offset, self.index.positions[slot]):
                position = self.index.positions[slot]
        next_offset = None
        for found, header in self.scan_headers(position, limit):
            position = found + header.size_bytes
            next_offset = header.next_offset
        if next_offset is None and position > start_position:  # the batch at position is too big
            header = self.read_header(position)
            next_offset = header.base_offset if header is not None else None
        return position, next_offset

    # -- truncation and recovery --------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every batch whose last offset >= offset."""
        found = self.translate_offset(offset)
        if found is None:
            return
        position = found[0]
        os.ftruncate(self.fd, position)
        self.size = position
        self._rolling_base_ms = None  # the first batch may be gone
        self.flushed_size = min(self.flushed_size, position)
        self._record_durable()
        self.index.truncate_to(offset)
        self.timeindex.truncate_to(offset)
        self._reload_tail_state()

    def _reload_tail_state(self) -> None:
        """Recompute next offset, max timestamp and index spacing from the last index entry.
        The scan from that entry meets its batch first (load and truncate_to keep only entries
        whose batch is whole), so every next offset comes from a batch header."""
        start = self.index.positions[-1] if len(self.index) else 0
        self.next_offset = self.base_offset
        last = self.timeindex.last_timestamp
        self.max_timestamp = NO_TIMESTAMP if last is None else last
        self.offset_of_max_timestamp = self.base_offset
        if len(self.timeindex):
            self.offset_of_max_timestamp = self.base_offset + self.timeindex.relative_offsets[-1]
        self.bytes_since_last_index_entry = 0
        for position, header in self.scan_headers(start):
            if position == start and len(self.index):
                self.bytes_since_last_index_entry = header.size_bytes
                self.next_offset = header.next_offset
                continue
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
            self.bytes_since_last_index_entry += header.size_bytes
            self.next_offset = header.next_offset

    def load(self) -> bool:
        """Open an existing segment after a clean shutdown: load both indexes and find the end.

        False if an index fails its sanity check or the tail is not whole batches (the caller then
        recovers the segment)."""
        if self.size > INT32_MAX or not self.index.load(self.size):
            return False
        if len(self.index) and not self._entry_holds(
            self.base_offset + self.index.relative_offsets[-1], self.index.positions[-1]
        ):
            return False
        if not self.timeindex.load(self.size):
            return False
        self._reload_tail_state()
        start = self.index.positions[-1] if len(self.index) else 0
        end = start
        for position, header in self.scan_headers(start):
            end = position + header.size_bytes
        return end == self.size

    def recover(self, next_base_offset: int | None = None) -> "SegmentRecovery":
        """Scan every batch from position 0: size, magic, CRC and offsets. Stop at the first bad
        or torn batch and cut the file there (config.rules.cut_torn_tail, unless mutant M8 keeps
        it); rebuild both indexes. Memory: one RECOVERY_WINDOW_BYTES map, whatever the segment size.
        next_base_offset (the next segment's base) bounds the offsets a batch here may hold."""
        self.index.reset()
        self.timeindex.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.bytes_since_last_index_entry = 0
        epochs: list[tuple[int, int]] = []
        valid = self._scan_valid_batches(epochs, next_base_offset)
        truncated = self.size - valid
        if truncated:
            self.config.rules.cut_torn_tail(self, valid)
        self.index.rewrite()
        self.timeindex.rewrite()
        return SegmentRecovery(valid, truncated, epochs)

    def cut_at(self, size: int) -> None:
        """Cut the file to its first `size` bytes (recovery: after the last valid batch)."""
        self._rolling_base_ms = None
        os.ftruncate(self.fd, size)
        self.size = size
        self.flushed_size = min(self.flushed_size, size)

    def _scan_valid_batches(self, epochs: list, next_base_offset: int | None = None) -> int:
        """Byte length of the valid prefix; accounts each valid batch as if appended.

        Reads through read-only memory maps of RECOVERY_WINDOW_BYTES at a time (the CRC runs
        straight over the page cache, no copy); a batch larger than a window is checked with
        bounded preads instead."""
        file_size = self.size
        window = _Window(self.fd, file_size)
        position = 0  # file position of the batch being checked
        last_epoch = -1
        try:
            while position + HEADER_SIZE <= file_size:
                view = window.covering(position, HEADER_SIZE)
                fields = HEADER.unpack_from(view, position - window.start)
                base_offset, length, epoch, magic, crc = fields[:5]
                size = length + LOG_OVERHEAD
                last_offset = base_offset + fields[6]
                if (
                    magic != MAGIC_V2
                    or size < HEADER_SIZE
                    or position + size > file_size
                    or position + size > INT32_MAX  # positions are int32 in the index
                    or base_offset < self.next_offset
                    or fields[6] < 0
                    or fields[12] < 0
                    or last_offset - self.base_offset > INT32_MAX
                    # the next file's name bounds this segment's offsets: a batch reaching past
                    # it has a damaged BaseOffset (which the CRC does not cover)
                    or (next_base_offset is not None and last_offset >= next_base_offset)
                ):
                    break
                view = window.covering(position, size)
                if view is not None:
                    start = position - window.start
                    good = crc_matches(view[start : start + size], crc)
                else:
                    good = crc_matches_in_file(self.fd, position, size, crc)
                if not good:
                    break
                self._account(last_offset, fields[8], position, size)
                if epoch > last_epoch:
                    epochs.append((epoch, base_offset))
                    last_epoch = epoch
                position += size
        finally:
            window.close()
        return position

    # -- durability and lifetime --------------------------------------------------------------
    def flush(self) -> None:
        os.fsync(self.fd)
        self.flushed_size = self.size
        self._record_durable()
        self.index.flush()
        self.timeindex.flush()

    def close(self) -> None:
        self.index.write_pending()
        self.timeindex.write_pending()
        self.close_files()

    def close_files(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _record_durable(self) -> None:
        """Power-loss mode (LogConfig.lose_unflushed_on_crash): note the durable size."""
        if self.config.lose_unflushed_on_crash:
            write_atomically(self.log_path + DURABLE_SUFFIX, str(self.flushed_size))

    def delete(self) -> None:
        self.close_files()
        for path in (self.log_path, self.index.path, self.timeindex.path,
                     self.log_path + DURABLE_SUFFIX):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


class _Window:
    """A read-only memory map of part of a file, moved forward as a scan proceeds."""

    def __init__(self, fd: int, file_size: int):
        self.fd = fd
        self.file_size = file_size
        self.start = 0
        self.end = 0
        self._map = None
        self._view = None

    def covering(self, position: int, length: int):
        """A memoryview holding file bytes [position, position+length) at index
        position - self.start, remapping if needed; None if that cannot fit one window."""
        if position + length <= self.end and position >= self.start:
            return self._view
        start = position - position % mmap.ALLOCATIONGRANULARITY
        size = min(max(RECOVERY_WINDOW_BYTES, position + length - start), self.file_size - start)
        if position + length - start > RECOVERY_WINDOW_BYTES + mmap.ALLOCATIONGRANULARITY:
            return None
        self.close()
        self._map = mmap.mmap(self.fd, size, access=mmap.ACCESS_READ, offset=start)
        if hasattr(self._map, "madvise"):
            self._map.madvise(mmap.MADV_SEQUENTIAL)
        self._view = memoryview(self._map)
        self.start, self.end = start, start + size
        return self._view

    def close(self) -> None:
        if self._view is not None:
            self._view.release()
            self._map.close()
        self._view = self._map = None
        self.start = self.end = 0


class SegmentRecovery:
    """What recovering one segment found: valid bytes, bytes cut off, (epoch, start) changes."""

    __slots__ = ("valid_bytes", "truncated_bytes", "epochs")

    def __init__(self, valid_bytes: int, truncated_bytes: int, epochs: list[tuple[int, int]]):
        self.valid_bytes = valid_bytes
        self.truncated_bytes = truncated_bytes
        self.epochs = epochs
