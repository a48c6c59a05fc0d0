"""PartitionLog: the storage one partition replica's core sees, declared once.

impl/core (Partition, the replica manager, the offsets coordinator), impl/replication (the
follower's apply step) and impl/server (the ticker, shutdown) use a partition's log through these
members and no others: no getattr / hasattr on a log. Two classes implement all of it:

    impl/storage/log.py      Log        segments on disk: what a broker runs on
    impl/core/memory_log.py  MemoryLog  a list in memory: the naive twin the core's tests and the
                                        lockstep checks run on

properties/tests/storage/test_storage_partition_log.py runs one contract suite against both.

Who checks what (docs/storage.md, "One append path"): the core validates a producer's batch once
(sizes, magic, CRC, codec, every record) and hands the log the headers it parsed with the
bytes; the log then only stamps offsets and the leader epoch (and a LogAppendTime topic's
append time) and writes. A caller handing a log bytes nobody checked (a tool, a storage test)
passes no headers, and the log checks the frames itself before writing them the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, Protocol

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import BatchHeader
from kafkaref.impl.storage.epoch_cache import LeaderEpochCache


class AppendInfo(NamedTuple):
    """Outcome of an append: error is ErrorCode.none when every batch was written. An append
    that wrote nothing (an error, or no batches) names no offsets: first and last -1.
    (An immutable NamedTuple rather than attrs: one is built per append, on the hot path.)"""

    error: ErrorCode
    first_offset: int = -1
    last_offset: int = -1
    batches: int = 0
    bytes: int = 0
    log_start_offset: int = 0
    # the time a LogAppendTime append stamped its batches with (the log's wall clock), else -1
    log_append_time: int = -1


class RecordsSlice(Protocol):
    """Whole batches of a log as a range a network thread sends without copying (read_slice)."""

    error: ErrorCode  # NONE, or OFFSET_OUT_OF_RANGE for an offset outside [log start, leo]
    size: int  # bytes in the range, whole batches only
    first_offset: int  # base offset of the range's first batch (the offset asked, when empty)
    next_offset: int  # the offset to read next: just past the range's last batch

    def __len__(self) -> int:
        """size: what a fetch response's records field counts."""

    def read_bytes(self) -> bytes:
        """The range's bytes, as sendfile would send them."""

    def sendfile(self, out_fd: int, offset: int = 0, count: int | None = None) -> int:
        """Write part of the range (from offset in it) to out_fd; bytes written, maybe fewer."""

    def close(self) -> None:
        """Release what the range holds (a file descriptor); idempotent."""

    def __enter__(self) -> RecordsSlice:
        """A slice is a context manager that closes it."""

    def __exit__(self, *exc) -> None:
        """close()."""


class PartitionLog(Protocol):
    """One partition replica's log, as the core uses it (module docstring: who implements it)."""

    log_start_offset: int  # the first offset still held; reads below it are out of range
    high_watermark: int  # the hw last given to set_high_watermark: what a reopened log recalls
    epochs: LeaderEpochCache  # where each leader epoch starts (kept in step with appends)

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets (leo)."""

    @property
    def flushed_offset(self) -> int:
        """Everything below it survives a crash."""

    @property
    def size_bytes(self) -> int:
        """Bytes the log holds (DescribeLogDirs' partition size)."""

    @property
    def topic_id(self) -> str | None:
        """The topic id record_topic_id recorded; None if none was."""

    def wall_ms(self) -> int:
        """The log's wall clock (impl/clock.py: what record timestamps are in): a LogAppendTime
        topic's batches are stamped with it, a CreateTime topic's leader bounds its producers'
        timestamps by it."""

    @property
    def checkpoints_off_lock(self) -> bool:
        """True if maybe_flush may run beside appends (all it can do is write a checkpoint)."""

    def append_as_leader(self, data, leader_epoch: int,
                         checked: Sequence[BatchHeader] | None = None,
                         log_append_time: bool = False) -> AppendInfo:
        """Stamp producer batches with offsets from the leo and leader_epoch and write them;
        checked: their headers, the caller validated them (None: the log checks each frame and
        base offset 0 first). log_append_time: the topic's message.timestamp.type is
        LogAppendTime, so each batch is also stamped with the log's wall-clock time, read once
        per append (records.log_append_time_header), which AppendInfo.log_append_time gives.
        Errors are values; nothing is written then."""

    def append(self, data, checked: Sequence[BatchHeader] | None = None) -> AppendInfo:
        """Write batches already stamped (a follower's copy); gaps forward are allowed, a batch
        below the leo is a caller bug (ValueError); checked as in append_as_leader."""

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one: bool = True) -> bytes:
        """Whole batches from the one holding offset, ending at or below max_offset (default
        the leo), within max_bytes but at least one with min_one; b"" when out of range."""

    def read_slice(self, offset: int, max_bytes: int, upper_offset: int | None = None,
                   min_one: bool = True) -> RecordsSlice:
        """read() as a RecordsSlice, perhaps cut shorter (at a segment end); caller closes it."""

    def bytes_between(self, start_offset: int, end_offset: int) -> int:
        """Bytes of the batches holding offsets in [start_offset, end_offset)."""

    def iter_batches(self, start_offset: int | None = None,
                     ) -> Iterator[tuple[BatchHeader, bytes]]:
        """(header, bytes) of every batch from the one holding start_offset (default: start)."""

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= offset (a straddling batch goes whole)."""

    def increment_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: move the log start up to offset (never down; above the hw is a caller
        bug, ValueError); reads below it are out of range from now on, and it survives a
        restart (recovered to an end below it, the log starts again, empty, there)."""

    def delete_old_segments(self, retention_ms: int | None = None,
                            retention_bytes: int | None = None, delete: bool = True) -> int:
        """Retention (Kafka's UnifiedLog.deleteOldSegments): delete whole segments below the
        log start, then (delete: cleanup.policy has "delete") those over retention_bytes or
        older than retention_ms (-1: no limit; None: the broker's), oldest first and never at
        or above the hw; the log start moves to the first kept one. How many went."""

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything; the log starts again, empty, at offset (log start = leo = hw)."""

    def set_high_watermark(self, offset: int) -> None:
        """Remember the hw (clamped to [log start, leo]) for the next open."""

    def set_segment_bytes(self, segment_bytes: int | None) -> None:
        """The topic's segment.bytes (None: the broker's), in force from the next append on."""

    def record_topic_id(self, topic_id: str) -> None:
        """Remember which topic, by id, this log belongs to."""

    def flush(self) -> None:
        """Make everything appended durable: flushed_offset becomes the leo."""

    def maybe_flush(self) -> bool:
        """Apply the flush policy now (and write a due checkpoint); True if it flushed."""

    def close(self) -> None:
        """Clean shutdown: flush, release what the log holds; idempotent."""

    def delete(self) -> None:
        """The topic was deleted: drop everything the log holds, for good."""
