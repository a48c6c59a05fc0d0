"""Opening a Log's directory: loading it after a clean shutdown, recovering it after a crash.

A directory closed cleanly holds the marker CLEAN_SHUTDOWN_FILE (written last by Log.close());
then each segment is loaded from its indexes (a segment whose index fails its sanity check is
scanned instead). Without the marker, recovery runs: every segment from the one holding the
recovery point (partition-checkpoint) on is scanned batch by batch (LogSegment.recover: size,
magic, the CRC-32C of impl/protocol/crc.py, offsets); the first bad or torn batch and everything
after it is removed, the indexes are rebuilt, later segments deleted. A missing or unreadable
leader-epoch checkpoint is rebuilt from the batches of every segment. Crash leftovers (temp
files, indexes without their .log) are removed first.

open_directory() returns what it found; the Log takes its state from that and only then removes
the marker (remove_clean_shutdown_marker), so a crash in between recovers again.
"""

import bisect
import os
import re

import attrs

from kafkaref.impl.storage import checkpoint
from kafkaref.impl.storage.config import LogConfig
from kafkaref.impl.storage.epoch_cache import FILE_NAME as EPOCH_FILE_NAME
from kafkaref.impl.storage.epoch_cache import LeaderEpochCache
from kafkaref.impl.storage.segment import LogSegment

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
CHECKPOINT_FILE = "partition-checkpoint"
CHECKPOINT_KEYS = ("recovery_point", "high_watermark", "log_start_offset")
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_INDEX_NAME = re.compile(r"^(\d{20})\.(index|timeindex)$")


@attrs.frozen
class RecoveryReport:
    """What open() did: whether it recovered, what it scanned, what it cut off."""

    clean_shutdown: bool
    segments_scanned: int
    bytes_scanned: int
    bytes_truncated: int
    segments_deleted: int
    index_rebuilds: int
    checkpoint_valid: bool = True  # set once the checkpoint is read (open_directory)


@attrs.frozen
class OpenedDirectory:
    """The valid prefix of a log directory: its segments (in offset order, never empty), the
    leader epoch cache, the partition checkpoint (None if missing or invalid) and the report."""

    segments: list[LogSegment]
    epochs: LeaderEpochCache
    checkpoint: dict[str, int] | None
    report: RecoveryReport


def open_directory(directory: str, config: LogConfig, now_ms: int,
                   recover_from_start: bool) -> OpenedDirectory:
    """Load or recover the log in directory (see the module docstring). recover_from_start
    scans every segment instead of those past the recovery point (a corruption check)."""
    marker = os.path.join(directory, CLEAN_SHUTDOWN_FILE)
    clean = os.path.exists(marker) and not recover_from_start
    remove_strays(directory)
    saved = read_checkpoint(directory)
    epochs = LeaderEpochCache.load(os.path.join(directory, EPOCH_FILE_NAME))
    segments = [LogSegment(directory, b, config, now_ms) for b in segment_bases(directory)]
    if not segments:
        start = saved["log_start_offset"] if saved else 0
        segments = [LogSegment.create(directory, start, config, now_ms)]
    recovery_point = 0 if (saved is None or recover_from_start) else saved["recovery_point"]
    if clean and saved is None:
        clean = False
    segments, epochs, report = _load_segments(directory, config, segments, clean,
                                              recovery_point, epochs)
    return OpenedDirectory(segments, epochs, saved,
                           attrs.evolve(report, checkpoint_valid=saved is not None))


def _load_segments(directory: str, config: LogConfig, segments: list[LogSegment], clean: bool,
                   recovery_point: int, epochs: LeaderEpochCache | None):
    """Load (clean) or recover (unclean, past the recovery point) each segment in order;
    a segment that loses bytes ends the log: later segments are deleted.
    Returns (kept segments, epoch cache, report)."""
    rebuild_epochs = epochs is None
    epochs = epochs or LeaderEpochCache(os.path.join(directory, EPOCH_FILE_NAME))
    bases = [segment.base_offset for segment in segments]
    first_unflushed = max(0, bisect.bisect_right(bases, recovery_point) - 1)
    scanned = scanned_bytes = truncated = rebuilds = 0
    kept = []
    previous_next = None
    for number, segment in enumerate(segments):
        must_scan = (not clean and number >= first_unflushed) or rebuild_epochs
        if not must_scan and not segment.load():
            must_scan = True
            rebuilds += 1
        if previous_next is not None and segment.base_offset < previous_next:
            break  # overlapping segments: the log ends before this one
        if must_scan:
            following = bases[number + 1] if number + 1 < len(bases) else None
            result = segment.recover(next_base_offset=following)
            os.fsync(segment.fd)
            segment.index.flush()
            segment.timeindex.flush()
            scanned += 1
            scanned_bytes += result.valid_bytes
            truncated += result.truncated_bytes
            for epoch, start in result.epochs:
                # Kafka's LogSegment.recover: only an epoch newer than the cache's latest
                if epoch > epochs.latest_epoch:
                    epochs.assign(epoch, start)
            kept.append(segment)
            previous_next = segment.next_offset
            if result.truncated_bytes:
                break
        else:
            kept.append(segment)
            previous_next = segment.next_offset
        if segment.size == 0:
            # The log never leaves an empty segment before others: its bytes were lost, so
            # what follows is not part of a valid prefix.
            break
    deleted = segments[len(kept):]
    for segment in deleted:
        segment.delete()
    if deleted:
        checkpoint.fsync_directory(directory)
    report = RecoveryReport(
        clean_shutdown=clean,
        segments_scanned=scanned,
        bytes_scanned=scanned_bytes,
        bytes_truncated=truncated,
        segments_deleted=len(deleted),
        index_rebuilds=rebuilds,
    )
    return kept, epochs, report


def remove_clean_shutdown_marker(directory: str) -> None:
    marker = os.path.join(directory, CLEAN_SHUTDOWN_FILE)
    if os.path.exists(marker):
        os.unlink(marker)
        checkpoint.fsync_directory(directory)


def segment_bases(directory: str) -> list[int]:
    bases = []
    for name in os.listdir(directory):
        match = _SEGMENT_NAME.match(name)
        if match:
            bases.append(int(match.group(1)))
    return sorted(bases)


def remove_strays(directory: str) -> None:
    """Delete temp files and index files whose .log is gone (left by a crash)."""
    names = set(os.listdir(directory))
    for name in names:
        match = _INDEX_NAME.match(name)
        orphan = match is not None and f"{match.group(1)}.log" not in names
        if name.endswith(".tmp") or orphan:
            os.unlink(os.path.join(directory, name))


def read_checkpoint(directory: str) -> dict[str, int] | None:
    """The partition checkpoint, or None if it is missing or not exactly the three entries."""
    entries = checkpoint.read_entries(os.path.join(directory, CHECKPOINT_FILE))
    if entries is None:
        return None
    saved = dict(entries)
    if set(saved) != set(CHECKPOINT_KEYS) or len(entries) != 3 or min(saved.values()) < 0:
        return None
    return saved
