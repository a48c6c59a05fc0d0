"""Log: one partition's commit log on disk, a directory of segments.

    <dir>/00000000000000000000.log        batches exactly as Kafka stores them
    <dir>/00000000000000000000.index      sparse offset index (rebuilt by recovery)
    <dir>/00000000000000000000.timeindex  sparse time index (rebuilt by recovery)
    <dir>/partition-checkpoint            recovery point, high watermark, log start offset
    <dir>/leader-epoch-checkpoint         the leader epoch cache
    <dir>/.kafka_cleanshutdown            present only between close() and the next open

Opening a directory without the clean-shutdown marker runs recovery (recovery.py): every segment
from the one holding the recovery point on is scanned batch by batch (size, magic, CRC, offsets);
the first bad or torn batch and everything after it is removed, the indexes are rebuilt, later
segments deleted.

Threading: a Log is not thread-safe; the caller serialises calls (the server's core lock). A FetchSlice owns a duplicate of the segment's file descriptor, so a network thread can
sendfile() from it after the lock is released, even if the segment is deleted meanwhile.

The interface the core uses is declared in partition_log.py (PartitionLog); Log implements all
of it, as its in-memory twin impl/core/memory_log.MemoryLog does.
"""

import bisect
import os
import shutil
import struct
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.clock import wall_clock_ms
from kafkaref.impl.protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    check_batch,
    log_append_time_header,
    parse_header,
    split_batches,
)
from kafkaref.impl.storage import checkpoint
from kafkaref.impl.storage.config import LogConfig
from kafkaref.impl.storage.fetch import FetchSlice
from kafkaref.impl.storage.partition_log import AppendInfo
from kafkaref.impl.storage.recovery import (
    CHECKPOINT_FILE,
    CHECKPOINT_KEYS,
    CLEAN_SHUTDOWN_FILE,
    RecoveryReport,
    open_directory,
    remove_clean_shutdown_marker,
)
from kafkaref.impl.storage.segment import DURABLE_SUFFIX, LogSegment

_STAMP_PREFIX = struct.Struct(">qii")  # BaseOffset, Length, PartitionLeaderEpoch
_PREFIX_SIZE = _STAMP_PREFIX.size
_NO_ERROR = ErrorCode.none
_new_tuple = tuple.__new__  # builds a NamedTuple without its Python-level __new__ (hot path)


# Kafka's name: the id of the topic a partition directory belongs to (KIP-516), so a broker
# that was down while its topic was deleted and created again knows the directory is stray.
PARTITION_METADATA_FILE = "partition.metadata"


class Log:
    """The segmented log of one partition; see the module docstring for layout and recovery."""

    def __init__(
        self,
        directory: str,
        config: LogConfig = LogConfig(),  # noqa: B008 (a frozen value)
        clock_ms: Callable[[], int] = wall_clock_ms,
        recover_from_start: bool = False,
    ):
        """Open (creating if needed) the log in directory, recovering it if it was not closed
        cleanly. recover_from_start scans every segment instead of those past the recovery
        point (what a corruption check wants)."""
        self.directory = directory
        self.config = config
        self._opened_config = config  # the broker's settings, before any topic override
        self.clock_ms = clock_ms
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.high_watermark = 0
        self.recovery_point = 0
        self._leo = 0
        self._last_flush_ms = clock_ms()
        self._last_checkpoint_ms = clock_ms()
        self._checkpointed: tuple[int, int, int] | None = None  # what the file last said
        # Checkpoint writes of one log serialize: the broker's ticker writes due ones without
        # its core lock (they fsync: 8-12 ms here) while request paths (roll, truncation, log
        # start) write theirs under it; two writers must not share the temp file.
        self._checkpoint_lock = threading.Lock()
        self._closed = False
        self._deleted = False
        # Decided once (the config is frozen) rather than on every append:
        self._flush_policy = config.flush_messages is not None or config.flush_ms is not None
        # append_as_leader's one-batch writev path takes unchecked bytes when it checks frames only
        self._frame_only_leader = not config.validate_records
        os.makedirs(directory, exist_ok=True)
        self.recovery = self._open(recover_from_start)

    # =========================================================================================
    # Offsets
    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets (leo)."""
        return self._leo

    leo = log_end_offset

    @property
    def flushed_offset(self) -> int:
        """Everything below this offset is fsynced (the recovery point)."""
        return self.recovery_point

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def segment_bases(self) -> tuple[int, ...]:
        """Base offsets of the segments, oldest first."""
        return tuple(self._bases)

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self.segments)

    def set_segment_bytes(self, segment_bytes: int | None) -> None:
        """The topic's segment.bytes (None: back to the broker's log.segment.bytes, the value
        the log was opened with). The active segment rolls at it from the next append on and
        new segments are made with it, as Kafka's shouldRoll reads the log's current config
        (UnifiedLog.updateConfig); segments already rolled keep their size."""
        value = self._opened_config.segment_bytes if segment_bytes is None else segment_bytes
        if value == self.config.segment_bytes:
            return
        self.config = attrs.evolve(self.config, segment_bytes=value)  # validates the value
        for segment in self.segments:  # any of them may become active again by truncation
            segment.set_segment_bytes(value)

    def set_high_watermark(self, offset: int) -> None:
        """Remember the hw to checkpoint (clamped to [log start, leo]); the partition owns it."""
        self.high_watermark = max(self.log_start_offset, min(offset, self._leo))

    # =========================================================================================
    # Appends
    def append(self, data, checked: Sequence[BatchHeader] | None = None) -> AppendInfo:
        """Append batches already stamped with offsets and leader epochs (a follower's copy of
        its leader's). checked: their headers, when the caller checked every frame (size,
        magic, CRC) itself, as the core does; otherwise each frame is checked here, and nothing
        is written unless all pass. Raises ValueError if the offsets do not continue the log (a
        caller bug, as in MemoryLog); gaps forward are allowed (compaction). Each batch's
        leader epoch goes into the epoch cache."""
        self._check_open()
        if checked is not None:
            batches, headers = _batches_of(data, checked), list(checked)
        else:
            error, batches = split_batches(data)
            if error != ErrorCode.none:
                return AppendInfo(error, log_start_offset=self.log_start_offset)
            headers = []
        expected = self._leo
        for index, batch in enumerate(batches):
            if checked is None:
                error = self.config.rules.check_frame(batch)
                if error != ErrorCode.none:
                    return AppendInfo(error, log_start_offset=self.log_start_offset)
                headers.append(parse_header(batch))
            header = headers[index]
            if header.base_offset < expected:
                raise ValueError(f"batch at offset {header.base_offset} below expected {expected}")
            expected = header.next_offset
        return self._append_checked(batches, headers)

    def wall_ms(self) -> int:
        """The wall clock this log runs on (PartitionLog.wall_ms)."""
        return self.clock_ms()

    def append_as_leader(self, data, leader_epoch: int,
                         checked: Sequence[BatchHeader] | None = None,
                         log_append_time: bool = False) -> AppendInfo:
        """Assign offsets from the log end to producer batches, stamp offsets and leader_epoch
        in place (outside the CRC) and append. Errors come back as values; nothing is written
        then.

        checked: the batches' headers, when the caller validated data itself (the core does:
        sizes, magic, CRC, codec, every record); nothing is checked again here. Without them
        the log validates each batch first: base offset 0, frame (CRC) and codec, and every
        record if config.validate_records (a tool or a test handing it unchecked bytes).

        log_append_time: a LogAppendTime topic's append; every batch also gets this log's
        wall-clock time, read once (records.log_append_time_header)."""
        append_time = self.clock_ms() if log_append_time else None
        if checked is not None:
            self._check_open()
            if len(checked) == 1:
                return self._append_one_stamped(data, checked[0], leader_epoch, append_time)
            return self._stamp_and_append(_batches_of(data, checked), checked, leader_epoch,
                                          append_time)
        if self._frame_only_leader and not self._closed and append_time is None:
            # The common case: exactly one batch, frame checks only. checked_header checks
            # Length against len(data) (so this is one whole batch), magic and the CRC-32C;
            # anything it refuses, and any base offset but 0, takes the general path below,
            # which finds the same error (or splits several batches).
            error, header = self.config.rules.checked_header(data)
            if error is _NO_ERROR and header[0] == 0:
                return self._append_one_stamped(data, header, leader_epoch)
        self._check_open()
        error, batches = split_batches(data)
        if error == ErrorCode.none and not batches:
            error = ErrorCode.invalid_record
        if error != ErrorCode.none:
            return AppendInfo(error, log_start_offset=self.log_start_offset)
        for batch in batches:
            error = self.config.rules.check_producer_batch(batch, self.config)
            if error != ErrorCode.none:
                return AppendInfo(error, log_start_offset=self.log_start_offset)
        return self._stamp_and_append(batches, [parse_header(b) for b in batches], leader_epoch,
                                      append_time)

    def _stamp_and_append(self, batches, headers, leader_epoch: int,
                          append_time: int | None = None) -> AppendInfo:
        """The general leader path: each batch as a stamped 16-byte prefix and the caller's
        bytes after it (one writev, no copy), offsets from the leo. With an append_time (a
        LogAppendTime topic) the stamped prefix is the whole 61-byte header, its timestamp
        type, MaxTimestamp and CRC rewritten too."""
        stamped, stamped_headers = [], []
        next_offset = self._leo
        for batch, header in zip(batches, headers, strict=True):
            if append_time is None:
                header = BatchHeader(next_offset, header[1], leader_epoch, *header[3:])
                prefix = _STAMP_PREFIX.pack(next_offset, header[1], leader_epoch)
                stamped.append((prefix, batch[_PREFIX_SIZE:]))  # written with one writev
            else:
                head = log_append_time_header(batch, next_offset, leader_epoch, append_time)
                header = parse_header(head)
                stamped.append((bytes(head), batch[HEADER_SIZE:]))
            stamped_headers.append(header)
            next_offset = header.next_offset
        self.epochs.assign(leader_epoch, self._leo)
        info = self._append_checked(stamped, stamped_headers)
        return info if append_time is None else info._replace(log_append_time=append_time)

    def _append_one_stamped(self, data, header, leader_epoch: int,
                            append_time: int | None = None) -> AppendInfo:
        """Append one checked producer batch at the leo: the per-append work of the hot path,
        kept to what every append must do (roll check, one writev, accounting).

        Only BaseOffset and PartitionLeaderEpoch change (outside the CRC): a stamped copy of the
        first 16 bytes and the caller's bytes after them go out in one writev(), so the batch
        is never copied in user space. Same rules as _append_checked (its naive twin). With an
        append_time (a LogAppendTime topic) the stamped copy is the whole 61-byte header, its
        timestamp type, MaxTimestamp and CRC rewritten too."""
        leo = self._leo
        length = header[1]
        size = length + LOG_OVERHEAD
        last_offset = leo + header[6]
        segment = self.segments[-1]
        if segment.needs_roll_at(last_offset, size, self.clock_ms(),
                                 header[8] if append_time is None else append_time):
            segment = self._roll(leo)
        epochs = self.epochs.entries
        # assign() is a no-op only for the latest epoch again (its entries start below the leo);
        # any other epoch, an older one included, goes through Kafka's assign rule
        if not epochs or leader_epoch != epochs[-1][0]:
            self.epochs.assign(leader_epoch, leo)
        if append_time is None:
            parts = (_STAMP_PREFIX.pack(leo, length, leader_epoch), memoryview(data)[_PREFIX_SIZE:])
            segment.append_parts(parts, size, last_offset, header[8])
        else:
            head = log_append_time_header(data, leo, leader_epoch, append_time)
            segment.append_parts((head, memoryview(data)[HEADER_SIZE:]), size, last_offset,
                                 append_time)
        self._leo = last_offset + 1
        if self._flush_policy:
            self._maybe_flush()
        return _new_tuple(AppendInfo, (_NO_ERROR, leo, last_offset, 1, size, self.log_start_offset,
                                       -1 if append_time is None else append_time))

    def _append_checked(self, batches, headers: list[BatchHeader]) -> AppendInfo:
        if not batches:
            return AppendInfo(ErrorCode.none, log_start_offset=self.log_start_offset)
        total = 0
        now_ms = self.clock_ms()
        for index, batch in enumerate(batches):
            header = headers[index]
            size = header[1] + LOG_OVERHEAD  # batch may be a (prefix, rest) pair for writev
            segment = self.segments[-1]
            if segment.needs_roll(header, size, now_ms):
                segment = self._roll(header.base_offset)
            segment.append(batch, header)
            self._leo = header.next_offset
            self.epochs.assign(header.partition_leader_epoch, header.base_offset)
            total += size
        if self._flush_policy:
            self._maybe_flush()
        return AppendInfo(
            ErrorCode.none,
            headers[0].base_offset,
            headers[-1].last_offset,
            len(batches),
            total,
            self.log_start_offset,
        )

    def _roll(self, base_offset: int) -> LogSegment:
        """Start a new active segment at base_offset; the old one is closed for appends and
        fsynced, so the recovery point moves to the new base."""
        old = self.active_segment
        if base_offset <= old.base_offset and old.size:
            raise ValueError(f"roll to {base_offset} would not follow segment {old.base_offset}")
        if old.size == 0:  # an empty segment whose offsets no longer fit: replace it
            old.delete()
            self.segments.pop()
            self._bases.pop()
        else:
            old.on_become_inactive()
            old.flush()
        segment = LogSegment.create(self.directory, base_offset, self.config, self.clock_ms())
        checkpoint.fsync_directory(self.directory)
        self.segments.append(segment)
        self._bases.append(base_offset)
        # every segment below the new one is flushed now (each at its own roll, the old one
        # above; the recovery point never lies below the active segment's base): Kafka's roll
        # flushes up to the new base and moves the recovery point there
        self.recovery_point = max(self.recovery_point, base_offset)
        self.write_checkpoint()
        return self.config.rules.rolled(segment)  # where the triggering batch goes (M13: lost)

    def roll(self) -> None:
        """Roll now (if the active segment holds anything): a new segment starts at the leo."""
        self._check_open()
        if self.active_segment.size:
            self._roll(self._leo)

    # =========================================================================================
    # Reads
    def read_slice(
        self,
        offset: int,
        max_bytes: int,
        upper_offset: int | None = None,
        min_one: bool = True,
    ) -> FetchSlice:
        """Whole batches from the one holding `offset`, from one segment, as a file byte range.

        The range ends before the first batch that reaches upper_offset (the hw for consumers,
        the leo for followers; default leo) and within max_bytes, except that min_one returns
        at least the first batch however large. (Kafka may cut the last batch at max_bytes;
        kafkaref returns whole batches only, which every client accepts.) The range may start
        below `offset` (the batch holding it); clients skip those records.
        OFFSET_OUT_OF_RANGE if offset < log start or > leo. The caller closes the slice.
        """
        self._check_open()
        upper = self._leo if upper_offset is None else min(upper_offset, self._leo)
        if offset < self.log_start_offset or offset > self._leo:
            return FetchSlice.empty(ErrorCode.offset_out_of_range, offset)
        if offset >= upper:
            return FetchSlice.empty(ErrorCode.none, offset)
        for segment, found in self._from_offset(offset, upper):
            return self._slice_of(segment, found, upper, max_bytes, min_one)
        return FetchSlice.empty(ErrorCode.none, offset)

    def _from_offset(self, offset: int, below: int | None = None):
        """(segment, (position, header)) for the segment holding `offset` and each later one,
        with the batch there holding `offset` or the first past it (segments with nothing at or
        past `offset` are skipped); stops at a segment starting at or past `below`. Walks a
        copy of the segment list: iter_batches' caller may truncate or delete meanwhile."""
        slot = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for segment in list(self.segments[slot:]):
            if below is not None and segment.base_offset >= below:
                return
            found = segment.translate_offset(offset)
            if found is not None:
                yield segment, found

    def _slice_of(self, segment, found, upper: int, max_bytes: int, min_one: bool) -> FetchSlice:
        start, first = found
        if first.next_offset > upper:
            return FetchSlice.empty(ErrorCode.none, first.base_offset)
        end, next_offset = segment.size, segment.next_offset
        if upper < segment.next_offset:
            bound = segment.translate_offset(upper, start)
            if bound is not None:
                end, next_offset = bound[0], bound[1].base_offset
        if end - start > max_bytes:
            end, next_offset = segment.boundary_at_or_before(start + max(max_bytes, 0), start)
            if end == start and min_one:
                end, next_offset = start + first.size_bytes, first.next_offset
        if end <= start:
            return FetchSlice.empty(ErrorCode.none, first.base_offset)
        return FetchSlice(ErrorCode.none, os.dup(segment.fd), segment.log_path, start, end - start,
                          first.base_offset, next_offset)

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one: bool = True) -> bytes:
        """read_slice() as bytes (MemoryLog's signature), every batch's CRC checked on the way
        out: the bytes stop before a corrupt batch. b"" when out of range or nothing."""
        return self.read_checked(offset, max_bytes, max_offset, min_one)[1]

    def read_checked(self, offset: int, max_bytes: int, max_offset: int | None = None,
                     min_one: bool = True) -> tuple[ErrorCode, bytes]:
        """Like read(), with an error: OFFSET_OUT_OF_RANGE, or CORRUPT_MESSAGE when a batch
        in the range fails its CRC (the bytes before it are still returned)."""
        with self.read_slice(offset, max_bytes, max_offset, min_one) as fetched:
            if fetched.error != ErrorCode.none:
                return fetched.error, b""
            return fetched.read_verified()

    def bytes_between(self, start_offset: int, end_offset: int) -> int:
        """Bytes of the batches holding offsets in [start_offset, end_offset): what a fetch
        from start_offset could return below end_offset (DelayedFetch's min_bytes check)."""
        self._check_open()
        end_offset = min(end_offset, self._leo)
        if start_offset >= end_offset:
            return 0
        total = 0
        for segment, found in self._from_offset(start_offset, end_offset):
            stop = segment.size
            if end_offset < segment.next_offset:
                bound = segment.translate_offset(end_offset, found[0])
                if bound is not None:
                    position, header = bound
                    stop = position + (header.size_bytes if header.base_offset < end_offset else 0)
            total += max(0, stop - found[0])
        return total

    def iter_batches(self, start_offset: int | None = None) -> Iterator[tuple[BatchHeader, bytes]]:
        """(header, bytes) of every batch from the one holding start_offset; one batch in memory
        at a time. For tests, tools and conformance checks, not the fetch path."""
        self._check_open()
        offset = self.log_start_offset if start_offset is None else start_offset
        for segment, found in self._from_offset(offset):
            for position, header in segment.scan_headers(found[0]):
                yield header, os.pread(segment.fd, header.size_bytes, position)

    def verify(self) -> list[str]:
        """Read every byte of every segment and report what is wrong (empty list: nothing).
        Each .log must be whole batches with valid CRCs and increasing offsets, ending where
        the log says; every index entry must point at the start of the batch it names. A tool
        and test oracle: it reads the whole log."""
        self._check_open()
        problems = []
        previous_next = None
        for segment in self.segments:
            end = 0
            for position, header in segment.scan_headers(0):
                raw = os.pread(segment.fd, header.size_bytes, position)
                if check_batch(raw) != ErrorCode.none:
                    problems.append(f"{segment.log_path}@{position}: bad batch")
                if previous_next is not None and header.base_offset < previous_next:
                    problems.append(f"{segment.log_path}@{position}: offsets go backwards")
                previous_next = header.next_offset
                end = position + header.size_bytes
            if end != segment.size:
                problems.append(f"{segment.log_path}: {segment.size - end} bytes after the last "
                                f"whole batch")
            for relative, position in zip(segment.index.relative_offsets,
                                          segment.index.positions, strict=True):
                header = segment.read_header(position)
                if header is None or header.last_offset != segment.base_offset + relative:
                    problems.append(f"{segment.index.path}: entry {relative} -> {position} "
                                    f"points at no batch ending there")
        if self.segments and self.active_segment.next_offset != self._leo:
            problems.append(f"leo {self._leo} but the last segment ends at "
                            f"{self.active_segment.next_offset}")
        return problems

    def batches(self) -> list[tuple[BatchHeader, bytes]]:
        """Every batch with its header (MemoryLog's method). Loads the whole log: tests only."""
        return list(self.iter_batches())

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch whose max timestamp >= timestamp (ListOffsets
        by time, at batch granularity); None if there is none."""
        self._check_open()
        for segment in self.segments:
            if segment.max_timestamp < timestamp:
                continue
            start_offset = segment.timeindex.lookup(timestamp)
            found = segment.translate_offset(start_offset)
            position = found[0] if found is not None else segment.size
            for _, header in segment.scan_headers(position):
                if header.max_timestamp >= timestamp:
                    return header.base_offset, header.max_timestamp
        return None

    # =========================================================================================
    # Truncation and retention
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= offset (a batch straddling it goes whole, so
        the leo may end below offset). No-op if offset >= leo. Truncating below the first segment
        empties the log and restarts it at offset."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self._leo:
            # As Kafka's UnifiedLog.truncateTo: the epoch cache is cut at the leo even so. A
            # broker that led an epoch without appending keeps an entry starting at its leo,
            # which conflicts with the new leader's; kept, its fetches named that epoch, the
            # leader answered the same divergence, and the follower never caught up.
            self.epochs.truncate_from_end(self._leo)
            return
        if offset < self.segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return
        while len(self.segments) > 1 and self.segments[-1].base_offset > offset:
            self.segments.pop().delete()
            self._bases.pop()
        segment = self.active_segment
        segment.truncate_to(offset)
        os.fsync(segment.fd)  # a truncation that a crash could undo would resurrect records
        self._drop_empty_tail_segments()
        self._leo = self.active_segment.next_offset
        self._after_truncation()

    def _drop_empty_tail_segments(self) -> None:
        """An empty last segment (left by a truncation or a crash) goes, unless it is the only
        one: the log then ends where its data ends, not at an empty segment's base offset."""
        while len(self.segments) > 1 and self.segments[-1].size == 0:
            self.segments.pop().delete()
            self._bases.pop()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and start again, empty, at offset (log start = leo = offset): a
        follower whose log ends below its leader's log start (Kafka's truncateFullyAndStartAt),
        or a log recovered to an end below its log start."""
        self._check_open()
        for segment in self.segments:
            segment.delete()
        self.segments = [LogSegment.create(self.directory, offset, self.config, self.clock_ms())]
        self._bases = [offset]
        self._leo = offset
        self.log_start_offset = self.high_watermark = self.recovery_point = offset
        self.epochs.clear()
        self._after_truncation()

    def _after_truncation(self) -> None:
        self.epochs.truncate_from_end(self._leo)
        self.high_watermark = min(self.high_watermark, self._leo)
        self.recovery_point = min(self.recovery_point, self._leo)
        self.log_start_offset = min(self.log_start_offset, self._leo)
        checkpoint.fsync_directory(self.directory)
        self.write_checkpoint()

    # Retention: Kafka's UnifiedLog.deleteOldSegments, run by the broker's retention task
    # (ReplicaManager.run_retention_checks; docs/storage.md, "Retention")
    def delete_old_segments(self, retention_ms: int | None = None,
                            retention_bytes: int | None = None, delete: bool = True) -> int:
        """Delete whole segments, oldest first, in Kafka's three passes: those wholly below the
        log start (always), then, when the topic's cleanup.policy has "delete", those that take
        the log over retention_bytes, then those whose largest timestamp is more than
        retention_ms before now (-1: no limit; None: this log's config, the broker's
        log.retention.*). Each pass stops at the first segment it keeps, and never deletes a
        segment holding an offset at or above the high watermark. Deleting every segment rolls
        a new empty one at the leo first; the log start moves to the first kept segment's base
        offset. Returns how many segments were deleted."""
        self._check_open()
        retention_ms = self.config.retention_ms if retention_ms is None else retention_ms
        retention_bytes = self.config.retention_bytes if retention_bytes is None else (
            retention_bytes)
        deleted = self._delete_oldest(self._below_log_start())
        if delete:
            deleted += self._delete_oldest(self._over_size(retention_bytes))
            deleted += self._delete_oldest(self._too_old(retention_ms))
        return deleted

    def _below_log_start(self) -> Callable[[int], bool]:
        """deleteLogStartOffsetBreachedSegments: the next segment starts at or below it."""
        return lambda i: i + 1 < len(self.segments) and (
            self.segments[i + 1].base_offset <= self.log_start_offset)

    def _over_size(self, retention_bytes: int) -> Callable[[int], bool]:
        """deleteRetentionSizeBreachedSegments: oldest first while the log stays at or over
        retention_bytes without the segment."""
        excess = self.size_bytes - retention_bytes
        if retention_bytes < 0 or excess < 0:
            return lambda i: False

        def over(i: int) -> bool:
            nonlocal excess
            if excess - self.segments[i].size < 0:
                return False
            excess -= self.segments[i].size
            return True
        return over

    def _too_old(self, retention_ms: int) -> Callable[[int], bool]:
        """deleteRetentionMsBreachedSegments: the segment's largest timestamp (its file's last
        modification without one) is more than retention_ms before now, read once a pass."""
        if retention_ms < 0:
            return lambda i: False
        now = self.clock_ms()
        return lambda i: now - self.segments[i].largest_timestamp() > retention_ms

    def _delete_oldest(self, deletable: Callable[[int], bool]) -> int:
        """Kafka's deletableSegments then deleteSegments: the oldest segments for which
        `deletable` holds, up to the first it refuses, the one holding the hw, or an empty last
        segment; if that is all of them, a new segment is rolled at the leo first."""
        count = 0
        while count < len(self.segments):
            last = count + 1 == len(self.segments)
            upper = self._leo if last else self.segments[count + 1].base_offset
            if self.high_watermark < upper or (last and self.segments[count].size == 0):
                break
            if not deletable(count):
                break
            count += 1
        if count == 0:
            return 0
        if count == len(self.segments):
            self._roll(self._leo)  # a log always has a segment: the new one is where it starts
        self._advance_log_start(self.segments[count].base_offset)
        for _ in range(count):
            self.segments.pop(0).delete()
            self._bases.pop(0)
        return count

    def increment_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: records below offset (<= hw) become unreadable; whole segments below
        it are deleted."""
        self._check_open()
        if offset <= self.log_start_offset:
            return
        if offset > self.high_watermark:
            raise ValueError(f"log start {offset} above the high watermark {self.high_watermark}")
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            self.segments.pop(0).delete()
            self._bases.pop(0)
        self._advance_log_start(offset)

    def _advance_log_start(self, offset: int) -> None:
        self.log_start_offset = max(self.log_start_offset, offset)
        # nothing below the log start is ever recovered: the recovery point moves up with it
        # (Kafka's UnifiedLog.updateLogStartOffset)
        self.recovery_point = max(self.recovery_point, self.log_start_offset)
        self.epochs.truncate_from_start(self.log_start_offset)
        checkpoint.fsync_directory(self.directory)
        self.write_checkpoint()

    # =========================================================================================
    # Durability
    def flush(self) -> None:
        """fsync every segment holding unflushed bytes and their indexes; the recovery point
        moves to the leo and is checkpointed."""
        self._check_open()
        for segment in self.segments:
            if segment.flushed_size != segment.size or segment.base_offset >= self.recovery_point:
                segment.flush()
        self.recovery_point = self._leo
        self._last_flush_ms = self.clock_ms()
        self.write_checkpoint()

    def maybe_flush(self) -> bool:
        """Apply the flush policy now (call it on clock ticks); True if it flushed. Otherwise
        checkpoint the hw and log start if they moved and checkpoint_interval_ms has passed."""
        if self._deleted:
            return False  # its topic was deleted after the ticker picked it: nothing to do
        self._check_open()
        if self._maybe_flush():
            return True
        due = self.clock_ms() - self._last_checkpoint_ms >= self.config.checkpoint_interval_ms
        if due and self._checkpointed != self._checkpoint_state():
            self.write_checkpoint()
        return False

    def _maybe_flush(self) -> bool:
        # Kafka's unflushedMessages: the offsets past the recovery point (LocalLog), so a roll
        # (which moves the recovery point) and a truncation below it count as Kafka counts them
        unflushed = self._leo - self.recovery_point
        if unflushed <= 0:
            return False
        by_count = (
            self.config.flush_messages is not None
            and unflushed >= self.config.flush_messages
        )
        by_time = (
            self.config.flush_ms is not None
            and self.clock_ms() - self._last_flush_ms >= self.config.flush_ms
        )
        if by_count or by_time:
            self.flush()
            return True
        return False

    def _checkpoint_state(self) -> tuple[int, int, int]:
        return self.recovery_point, self.high_watermark, self.log_start_offset

    def write_checkpoint(self) -> None:
        """Persist recovery point, hw and log start (temp file, fsync, rename); safe from two
        threads at once (the later writer's snapshot wins)."""
        with self._checkpoint_lock:
            state = self._checkpoint_state()
            checkpoint.write_entries(
                os.path.join(self.directory, CHECKPOINT_FILE),
                list(zip(CHECKPOINT_KEYS, state, strict=True)),
            )
            self._checkpointed = state
            self._last_checkpoint_ms = self.clock_ms()

    @property
    def checkpoints_off_lock(self) -> bool:
        """True if maybe_flush() can only write a due checkpoint (no flush policy, Kafka's
        default), so a caller may tick the log beside appends. A flush policy fsyncs segments,
        which must not run beside appends."""
        return not self._flush_policy

    def close(self) -> None:
        """Clean shutdown: flush, checkpoint, write the marker that lets the next open skip
        recovery, close every file. Idempotent."""
        if self._closed:
            return
        self.active_segment.on_become_inactive()
        self.flush()
        for segment in self.segments:
            segment.close()
        marker = os.path.join(self.directory, CLEAN_SHUTDOWN_FILE)
        checkpoint.write_atomically(marker, "")
        self._closed = True

    @property
    def topic_id(self) -> str | None:
        """The topic id this log was written for (Kafka's partition.metadata), None if none
        was recorded (a log older than topic ids, or never hosted through a metadata image)."""
        return recorded_topic_id(self.directory)

    def record_topic_id(self, topic_id: str) -> None:
        if topic_id and self.topic_id != topic_id:
            checkpoint.write_atomically(os.path.join(self.directory, PARTITION_METADATA_FILE),
                                        f"version: 0\ntopic_id: {topic_id}\n")

    def delete(self) -> None:
        """The partition's topic was deleted: close every file and remove the directory.
        Kafka renames it to <dir>.<id>-delete and removes it after file.delete.delay.ms; here
        it goes at once (the rename first, so a crash midway never leaves a directory a broker
        would reopen as the partition). Holds the checkpoint lock: a checkpoint the ticker
        writes off the core lock finishes first, and later ones see the log closed."""
        with self._checkpoint_lock:
            if not self._closed:
                for segment in self.segments:
                    segment.close_files()
                self._closed = True
            self._deleted = True
            if os.path.isdir(self.directory):
                doomed = f"{self.directory}.{uuid.uuid4().hex}-delete"
                os.replace(self.directory, doomed)
                shutil.rmtree(doomed, ignore_errors=True)

    def crash(self) -> dict[str, int]:
        """Simulate a process or power failure: close every file without flushing, writing
        pending index entries, or leaving the clean-shutdown marker. Returns, per .log file,
        the size known durable (fsynced): a power loss may cut the file back to anywhere
        between that size and its current size. For tests and chaos."""
        durable = {}
        if self._closed:
            return durable
        for segment in self.segments:
            durable[segment.log_path] = segment.flushed_size
            segment.close_files()
        self._closed = True
        return durable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"log {self.directory} is closed")

    # =========================================================================================
    # Opening (loading or recovering the directory: recovery.py)
    def _open(self, recover_from_start: bool) -> RecoveryReport:
        if self.config.lose_unflushed_on_crash:
            lose_unflushed(self.directory)
        opened = open_directory(self.directory, self.config, self.clock_ms(), recover_from_start)
        self.segments, self.epochs = opened.segments, opened.epochs
        self._bases = [segment.base_offset for segment in self.segments]
        self._drop_empty_tail_segments()
        self._leo = self.active_segment.next_offset
        saved = opened.checkpoint
        start = saved["log_start_offset"] if saved else self.segments[0].base_offset
        self.log_start_offset = max(start, self.segments[0].base_offset)
        self.high_watermark = 0
        if self._leo < self.log_start_offset:
            # recovered to an end below the log start (DeleteRecords moved it past what a
            # crash kept): start again, empty, at the log start (Kafka's LogLoader)
            self.truncate_fully_and_start_at(self.log_start_offset)
        self.set_high_watermark(saved["high_watermark"] if saved else 0)
        self.recovery_point = self._leo
        self.epochs.truncate_from_end(self._leo)
        self.epochs.truncate_from_start(self.log_start_offset)
        # Everything is durable now, and each segment was opened counting its whole file as
        # durable (LogSegment.flushed_size): what lies below the recovery point was flushed
        # before the stop, and the recovery scan fsynced every segment it kept past it.
        self.write_checkpoint()
        self.epochs.persist()
        remove_clean_shutdown_marker(self.directory)  # only now: the state above is on disk
        return opened.report


def _batches_of(data, headers: Sequence[BatchHeader]) -> list[memoryview]:
    """data cut into its batches by sizes the caller already checked (no parsing)."""
    view, position, batches = memoryview(data), 0, []
    for header in headers:
        size = header[1] + LOG_OVERHEAD
        batches.append(view[position:position + size])
        position += size
    return batches


def recorded_topic_id(directory: str) -> str | None:
    """The topic id in directory's partition.metadata, or None (no file, or unreadable: a line
    that is not one `name: value`, which Kafka's reader refuses too, is damage, not an id)."""
    try:
        with open(os.path.join(directory, PARTITION_METADATA_FILE)) as f:
            fields = dict(line.split(": ") for line in f.read().splitlines() if ": " in line)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return fields.get("topic_id") or None


def lose_unflushed(directory: str) -> None:
    """Power-loss mode, on opening: unless the log was closed cleanly, cut every segment back
    to the size its last fsync made durable (recorded beside it; none recorded: nothing)."""
    if os.path.exists(os.path.join(directory, CLEAN_SHUTDOWN_FILE)):
        return
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".log"):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path + DURABLE_SUFFIX) as handle:
                durable = int(handle.read().strip() or 0)
        except (FileNotFoundError, ValueError):
            durable = 0
        if os.path.getsize(path) > durable:
            os.truncate(path, durable)
