"""How a follower applies one fetch response from its leader (pure logic over a Partition).

Shared by the replica fetcher threads and by the core state machine in properties/, so both
truncate and append in exactly the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.batches import positioned_headers
from kafkaref.impl.mutants import Mutant

log = logging.getLogger(__name__)


def response_is_current(partition, leader_id: int, leader_epoch: int, fetch_offset: int,
                        last_fetched_epoch: int | None = None) -> bool:
    """A follower applies a fetch answer only if it is still in the state it fetched from: same
    leader and leader epoch, still a follower, log end (and latest epoch) unchanged (Kafka's
    fetcher drops a response whose partition state moved while it was out)."""
    if partition.is_leader or partition.leader_id != leader_id:
        return False
    if partition.leader_epoch != leader_epoch or partition.log_end_offset != fetch_offset:
        return False
    return last_fetched_epoch is None or partition.log.epochs.latest_epoch == last_fetched_epoch


def apply_fetch_response(partition, error, diverging, records: bytes, leader_hw: int,
                         leader_log_start: int = -1) -> str:
    """Apply a fetch answer; returns what happened: 'error', 'truncated' or 'appended'.

    diverging is (epoch, end offset) or None. Truncation (KIP-320, fetch v12): at the point
    divergence_target names (Kafka's getOffsetTruncationState); mutant M5 puts a truncation to
    the follower's own hw in its place, as before KIP-101 (truncation_rule). The follower's log
    start follows the leader's (DeleteRecords; Partition.append_as_follower).
    """
    if error != ErrorCode.none:
        return "error"
    if diverging is not None and (diverging[0] >= 0 or diverging[1] >= 0):
        truncate_on_divergence(partition, *diverging)
        return "truncated"
    records = from_log_end(partition, records) if records else b""
    partition.append_as_follower(records, leader_hw, leader_log_start)
    return "appended"


def truncate_to_leader_end(partition, leader_end: int) -> bool:
    """After OFFSET_OUT_OF_RANGE, with the leader's log end in hand (its ListOffsets LATEST to
    a replica): a log that ends above it (an unclean leader's) is cut there, as Kafka's fetcher
    does (AbstractFetcherThread.fetchOffsetAndTruncate: leaderEndOffset < replicaEndOffset). A
    cut below the log start starts the log again at the cut (UnifiedLog.truncateTo brings the
    log start down to it). True if it cut."""
    if partition.log_end_offset <= leader_end:
        return False
    log.info("%s ends at %s, above its leader's log end %s: truncating there",
             partition.key, partition.log_end_offset, leader_end)
    if leader_end < partition.log.log_start_offset:
        partition.truncate_fully_and_start_at(leader_end)
    else:
        partition.truncate_to(leader_end)
    return True


def start_at_leader_log_start(partition, leader_log_start: int) -> bool:
    """After OFFSET_OUT_OF_RANGE, with the leader's log start in hand (its ListOffsets
    EARLIEST): a log ending below it is dropped and starts again there, as Kafka's fetcher does
    (AbstractFetcherThread.fetchOffsetAndTruncate: truncateFullyAndStartAt). True if it did."""
    if partition.log_end_offset >= leader_log_start:
        return False
    log.info("%s ends at %s, below its leader's log start %s: starting again there",
             partition.key, partition.log_end_offset, leader_log_start)
    partition.truncate_fully_and_start_at(leader_log_start)
    return True


def truncate_on_divergence(partition, leader_epoch: int, leader_end: int) -> int:
    """Truncate on a diverging epoch (leader_epoch, leader_end) and return the target offset."""
    log_ = partition.log
    target = truncation_rule(partition.config.mutants)(partition, leader_epoch, leader_end)
    target = max(log_.log_start_offset, min(target, log_.log_end_offset))
    log.info("truncating %s from %s to %s (diverging epoch %s)", partition.key,
             log_.log_end_offset, target, leader_epoch)
    partition.truncate_to(target)
    return target


def by_epoch(partition, leader_epoch: int, leader_end: int) -> int:
    """The rule: truncate where the leader's epochs say the logs diverge (KIP-279/320)."""
    log_ = partition.log
    return divergence_target(log_.epochs, log_.log_end_offset, partition.high_watermark,
                             leader_epoch, leader_end)


def to_own_hw(partition, leader_epoch: int, leader_end: int) -> int:
    """Mutant M5, in place of by_epoch: truncate to the follower's own hw (before KIP-101)."""
    return partition.high_watermark


def truncation_rule(mutants) -> Callable[..., int]:
    """The truncation rule the partition's config asks for: by_epoch, or M5's fault in its
    place (a mutant replaces the rule, never branches inside it: impl/core/rules.py)."""
    return to_own_hw if Mutant.M5 in mutants else by_epoch


def divergence_target(epochs, log_end_offset: int, hw: int, leader_epoch: int,
                      leader_end: int) -> int:
    """Where a follower truncates on a diverging epoch, as Kafka's fetcher decides it
    (AbstractFetcherThread.getOffsetTruncationState). When the leader's epoch is one the
    follower never had, the follower's own end offset for the largest epoch below it says
    nothing about the leader's end: the follower cuts only at its own end of that epoch (an
    intermediate point) and its next fetch, naming its then latest epoch, finds the rest.
    Combining the two (min(leader end, own end)) could cut inside a batch, which Kafka never
    does (its truncation points are epoch starts, i.e. batch boundaries). An unknown end
    offset falls back to the follower's hw, an unknown epoch to the leader's end."""
    if leader_end < 0:
        return min(hw, log_end_offset)
    if leader_epoch < 0:
        return min(leader_end, log_end_offset)
    own_epoch, own_end = epochs.end_offset_for(leader_epoch, log_end_offset)
    if own_end < 0:
        return min(leader_end, log_end_offset)
    if own_epoch != leader_epoch:
        return min(own_end, log_end_offset)
    return min(leader_end, own_end, log_end_offset)


def from_log_end(partition, records: bytes) -> bytes:
    """Drop batches already held (a fetch may start at the batch holding the offset). An empty
    log whose start falls inside the first batch (a DeleteRecords offset is not batch
    aligned) starts again at that batch's base offset, as Kafka's follower does on
    UnexpectedAppendOffsetException (Partition.appendRecordsToFollowerOrFutureReplica); its log
    start follows the leader's again once the hw passes it."""
    _, positioned = positioned_headers(records)
    leo = partition.log_end_offset
    keep_from = None  # `end` (the last batch's end) is set by the loop, read only if it kept one
    for position, header in positioned:
        end = position + header.size_bytes
        if header.last_offset < leo:
            continue
        if keep_from is None:
            if header.base_offset < leo == partition.log.log_start_offset:
                partition.truncate_fully_and_start_at(header.base_offset)
            elif header.base_offset != leo:
                partition.truncate_to(min(header.base_offset, leo))
                if partition.log_end_offset != header.base_offset:
                    return b""
            keep_from = position
    if keep_from is None:
        return b""
    return records[keep_from:end]
