"""DelayedProduce (acks=all waits for the hw), DelayedFetch (min_bytes / max_wait) and
DelayedDeleteRecords (the low watermark reaching the new log start)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core import rules
from kafkaref.impl.core.purgatory import DelayedOperation


class DelayedProduce(DelayedOperation):
    """Completes when, for every appended partition, hw >= last offset + 1 (or an error).

    Partitions still waiting at expiry answer REQUEST_TIMED_OUT; an ISR that shrank below the
    minimum by the time hw passed the batch answers NOT_ENOUGH_REPLICAS_AFTER_APPEND; a lost
    leadership answers NOT_LEADER_OR_FOLLOWER.
    """

    def __init__(self, timeout_ms: int, results: dict, lookup, respond: Callable[[dict], None],
                 missing: Callable | None = None):
        super().__init__(timeout_ms)
        self.results = dict(results)
        self.lookup = lookup  # key -> Partition | None
        # key -> the error for a partition no longer hosted (its topic deleted)
        self.missing = missing or (lambda key: ErrorCode.not_leader_or_follower)
        self.respond = respond
        self.waiting = {k for k, r in results.items() if r.error == ErrorCode.none}

    def try_complete(self) -> bool:
        for key in list(self.waiting):
            error = self._check(key)
            if error is not None:
                self.waiting.discard(key)
                if error != ErrorCode.none:
                    self.results[key] = attrs.evolve(self.results[key], error=error)
        return self.force_complete() if not self.waiting else False

    def _check(self, key) -> ErrorCode | None:
        partition = self.lookup(key)
        if partition is None:
            return self.missing(key)
        if not partition.is_leader:
            return ErrorCode.not_leader_or_follower
        if partition.high_watermark > self.results[key].last_offset:
            if rules.isr_below_minimum(partition):  # the rule itself, whatever the faults
                return ErrorCode.not_enough_replicas_after_append
            return ErrorCode.none
        return None

    def on_complete(self) -> None:
        for key in self.waiting:  # Kafka keeps the append's base offset in the answer
            self.results[key] = attrs.evolve(self.results[key], error=ErrorCode.request_timed_out)
        self.respond(self.results)


@attrs.frozen
class FetchPartition:
    fetch_offset: int
    partition_max_bytes: int = 1 << 20
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    topic_id: str | None = None  # Fetch v13+ names the topic by id: the log must have that id


class DelayedFetch(DelayedOperation):
    """Completes when min_bytes are readable across its partitions, or any partition changed
    in a way the fetcher must hear about at once (error, leadership, truncation)."""

    def __init__(self, max_wait_ms: int, min_bytes: int, replica_id: int, fetches: dict,
                 lookup, read: Callable[[], dict], respond: Callable[[dict], None],
                 leader_only: bool = True):
        super().__init__(max_wait_ms)
        self.min_bytes, self.replica_id, self.fetches = min_bytes, replica_id, fetches
        self.leader_only = leader_only  # else a follower answers it too (KIP-392)
        self.lookup, self.read, self.respond = lookup, read, respond

    def try_complete(self) -> bool:
        accumulated = 0
        for key, fetch in self.fetches.items():
            partition = self.lookup(key)
            if partition is None or (self.leader_only and not partition.is_leader):
                return self.force_complete()
            if partition.check_leader_epoch(fetch.current_leader_epoch) != ErrorCode.none:
                return self.force_complete()
            if fetch.fetch_offset > partition.log_end_offset:
                return self.force_complete()  # truncated below our position: say so now
            # A consumer above the hw (and within the leo) waits for the hw to pass it, as in
            # Kafka's DelayedFetch (the read above the hw is empty; bytes accumulate only once
            # the fetch offset is below the hw).
            end = (partition.log_end_offset if self.replica_id >= 0
                   else partition.high_watermark)
            if fetch.fetch_offset < end:
                # A readable offset holds at least one whole batch (> 1 byte), so when at most
                # one more byte is wanted the byte count (a walk of batch headers) is skipped.
                # Kafka counts min(available, the partition's max bytes).
                wanted = self.min_bytes - accumulated
                accumulated += 1 if wanted <= 1 else min(partition.readable_bytes(
                    fetch.fetch_offset, self.replica_id), fetch.partition_max_bytes)
                if accumulated >= self.min_bytes:
                    # Kafka completes at the same point; partitions not looked at yet answer
                    # their own errors when the response is read.
                    return self.force_complete()
        return self.force_complete() if accumulated >= self.min_bytes else False

    def on_complete(self) -> None:
        self.respond(self.read())


class DelayedDeleteRecords(DelayedOperation):
    """Completes when, for every partition whose log start moved, the low watermark (the
    smallest log start of the leader and its followers on live brokers) has reached the
    requested offset: Kafka's DelayedDeleteRecords. A lost leadership answers
    NOT_LEADER_OR_FOLLOWER (low watermark -1); a partition still waiting at expiry answers
    REQUEST_TIMED_OUT with the low watermark the deletion first saw."""

    def __init__(self, timeout_ms: int, results: dict, lookup, respond: Callable[[dict], None],
                 missing: Callable, live: Callable[[int], bool]):
        super().__init__(timeout_ms)
        self.results = dict(results)
        self.lookup, self.respond, self.missing, self.live = lookup, respond, missing, live
        # the partitions still waiting, in the request's order: a set of (topic, partition)
        # would iterate in an order that changes with the process's string hash seed
        self.waiting = dict.fromkeys(k for k, r in results.items() if r.error == ErrorCode.none)

    def try_complete(self) -> bool:
        for key in list(self.waiting):
            partition = self.lookup(key)
            wanted = self.results[key].requested_offset
            if partition is None or not partition.is_leader:
                error = self.missing(key) if partition is None else (
                    ErrorCode.not_leader_or_follower)
                self.results[key] = attrs.evolve(self.results[key], error=error,
                                                 low_watermark=-1)
            else:
                low = partition.low_watermark(self.live)
                if low < wanted:
                    continue
                self.results[key] = attrs.evolve(self.results[key], low_watermark=low)
            del self.waiting[key]
        return self.force_complete() if not self.waiting else False

    def on_complete(self) -> None:
        for key in self.waiting:
            self.results[key] = attrs.evolve(self.results[key], error=ErrorCode.request_timed_out)
        self.respond(self.results)
