"""The replica manager: every partition replica of one broker, and its two purgatories.

Single-threaded and steppable: callers pass a `respond` callback with each request and the
manager calls it exactly once, now or when a delayed operation completes or expires during a
later call (another request, an ISR change, `advance_clock`). The threaded server wraps calls in
one lock; tests and the lockstep checks call it directly with an injected clock.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.batches import positioned_headers
from kafkaref.impl.core.delayed import (
    DelayedDeleteRecords,
    DelayedFetch,
    DelayedProduce,
    FetchPartition,
)
from kafkaref.impl.core.partition import (
    AppendResult,
    DeleteRecordsResult,
    FetchResult,
    Partition,
    PartitionConfig,
)
from kafkaref.impl.core.purgatory import Purgatory
from kafkaref.impl.core.rules import RULES, rules_for
from kafkaref.impl.mutants import Mutant
from kafkaref.impl.protocol import records
from kafkaref.impl.protocol.list_offsets import (
    CONSUMER_REPLICA_ID,
    DEBUGGING_REPLICA_ID,
    EARLIEST,
    EARLIEST_LOCAL,
    EARLIEST_PENDING_UPLOAD,
    LATEST,
    LATEST_TIERED,
    MAX_TIMESTAMP,
)

Key = tuple[str, int]


@attrs.frozen
class OffsetAnswer:
    error: ErrorCode
    offset: int = -1
    timestamp: int = -1
    leader_epoch: int = -1


class ReplicaManager:
    def __init__(self, broker_id: int, clock: Callable[[], int], log_factory: Callable,
                 alter_isr: Callable | None = None, isr_check_interval_ms: int | None = None,
                 known_partition: Callable[[Key], bool] | None = None,
                 live_broker: Callable[[int], bool] | None = None,
                 retention_check_interval_ms: int | None = None,
                 retention_initial_delay_ms: int = 0):
        self.broker_id, self.clock, self.log_factory = broker_id, clock, log_factory
        # Kafka answers NOT_LEADER_OR_FOLLOWER for a partition the metadata knows but this
        # broker does not host, UNKNOWN_TOPIC_OR_PARTITION only when nobody knows it.
        self.known_partition = known_partition or (lambda key: False)
        # a broker registered and not fenced (DeleteRecords' low watermark counts only those)
        self.live_broker = live_broker or (lambda broker_id: True)
        self.alter_isr = alter_isr
        self.partitions: dict[Key, Partition] = {}
        self.produce_purgatory = Purgatory("produce", clock)
        self.fetch_purgatory = Purgatory("fetch", clock)
        self.delete_records_purgatory = Purgatory("deleteRecords", clock)
        self.isr_check_interval_ms = isr_check_interval_ms
        self._next_isr_check_ms = self._first_isr_check(clock())
        # the retention task (run_retention_checks); None: no task
        if retention_check_interval_ms is not None and retention_check_interval_ms <= 0:
            raise ValueError("log.retention.check.interval.ms must be positive (None: no task)")
        self.retention_check_interval_ms = retention_check_interval_ms
        self._next_retention_check_ms = clock() + retention_initial_delay_ms
        # The rules of impl/core/rules.py this manager applies (acks=all waiting, produce
        # expiry, fetch min_bytes), with the deliberate faults of every partition it hosts in
        # place (a broker gives all its partitions the same ones).
        self.rules = RULES
        self._mutants: frozenset[Mutant] = frozenset()

    # -- partitions -------------------------------------------------------------------------
    def partition(self, key: Key) -> Partition | None:
        return self.partitions.get(key)

    def missing(self, key: Key) -> ErrorCode:
        """The error for a partition this broker does not host."""
        return (ErrorCode.not_leader_or_follower if self.known_partition(key)
                else ErrorCode.unknown_topic_or_partition)

    def open_partition(self, key: Key, config: PartitionConfig, topic_id: str) -> Partition:
        """Host a partition of the topic with this id. A log left by an earlier topic of the
        same name (deleted while this broker was down: its directory records another id) is
        stray: deleted, and the partition starts empty (Kafka's stray log detection)."""
        log = self.log_factory(key)
        if log.topic_id is not None and log.topic_id != topic_id:
            log.delete()
            log = self.log_factory(key)
        log.record_topic_id(topic_id)
        return self.ensure_partition(key, config, log)

    def ensure_partition(self, key: Key, config: PartitionConfig, log=None) -> Partition:
        partition = self.partitions.get(key)
        if partition is None:
            partition = Partition(key[0], key[1], self.broker_id,
                                  log if log is not None else self.log_factory(key),
                                  self.clock, config, self.alter_isr, self._follower_hw_raised)
            self.partitions[key] = partition
        else:
            partition.reconfigure(config)
        if not config.mutants <= self._mutants:
            self._mutants |= config.mutants
            self.rules = rules_for(self._mutants)
        return partition

    def become_leader(self, key: Key, config: PartitionConfig, leader_epoch: int, isr,
                      replicas, partition_epoch: int = 0) -> None:
        partition = self.ensure_partition(key, config)
        partition.make_leader(leader_epoch, isr, replicas, partition_epoch)
        self._wake(key, hw_changed=True)

    def become_follower(self, key: Key, config: PartitionConfig, leader_id, leader_epoch: int,
                        replicas, partition_epoch: int = 0) -> None:
        partition = self.ensure_partition(key, config)
        partition.make_follower(leader_id, leader_epoch, replicas, partition_epoch)
        # waiting requests learn now that this broker no longer leads
        self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)
        self.delete_records_purgatory.check_and_complete(key)

    def isr_committed(self, key: Key, leader_epoch: int, isr,
                      partition_epoch: int | None = None) -> None:
        partition = self.partitions.get(key)
        if partition is not None:
            before = partition.high_watermark
            partition.isr_committed(leader_epoch, isr, partition_epoch)
            self._wake(key, hw_changed=partition.high_watermark != before)
            self.produce_purgatory.check_and_complete(key)  # ISR size matters to acks=all

    def isr_answered(self, key: Key, proposed) -> None:
        """The controller answered this partition's ISR proposal (see Partition.isr_answered)."""
        partition = self.partitions.get(key)
        if partition is not None:
            before = partition.high_watermark
            partition.isr_answered(proposed)
            self._wake(key, hw_changed=partition.high_watermark != before)
            self.produce_purgatory.check_and_complete(key)

    def isr_rejected(self, key: Key) -> None:
        """The controller refused this partition's ISR proposal: back to the committed ISR."""
        partition = self.partitions.get(key)
        if partition is not None:
            before = partition.high_watermark
            partition.isr_rejected()
            self._wake(key, hw_changed=partition.high_watermark != before)

    def follower_fenced(self, replica_id: int) -> None:
        """A follower's broker was fenced: every partition this broker leads forgets it.

        Only called while a metadata image is applied (Broker.apply_metadata), which then
        hands each led partition its ISR (isr_committed): that recomputes the hw a dropped
        pending addition may have held back and wakes what waits on it, so nothing is woken
        here but the deletions the fenced follower's log start held."""
        for key, partition in self.partitions.items():
            if partition.is_leader and replica_id in partition.followers:
                partition.forget_follower(replica_id)
                self.delete_records_purgatory.check_and_complete(key)  # it no longer counts

    def stop_partition(self, key: Key) -> None:
        """The partition's topic was deleted (or replaced by a new topic of the same name):
        stop hosting it, answer what waits on it now, delete its log. Kafka's
        ReplicaManager.stopPartitions(deletePartition = true): waiting produce and fetch requests
        complete at once and, the partition gone, answer UNKNOWN_TOPIC_OR_PARTITION (or
        NOT_LEADER_OR_FOLLOWER while the metadata still names the partition)."""
        partition = self.partitions.pop(key, None)
        if partition is None:
            return
        self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)
        self.delete_records_purgatory.check_and_complete(key)
        partition.log.delete()

    def _follower_hw_raised(self, partition: Partition) -> None:
        """A fetch answer raised this follower's hw: consumer fetches parked here (KIP-392)
        may have enough to read (Kafka's fetcher: completeDelayedFetchRequests)."""
        self.fetch_purgatory.check_and_complete(partition.key)

    def _wake(self, key: Key, hw_changed: bool) -> None:
        if hw_changed:
            self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)

    # -- produce ----------------------------------------------------------------------------
    def append_records(self, timeout_ms: int, required_acks: int, entries: dict[Key, bytes],
                       respond: Callable[[dict[Key, AppendResult]], None]) -> None:
        # Kafka's order: unknown partitions and malformed record sets are refused first
        # (KafkaApis), then the acks, then each partition's leader (ReplicaManager, Partition)
        results, splits = {}, {}
        for key, data in entries.items():
            splits[key] = records.split_batches(data)  # once: the partition takes it as it is
            error = self._request_error(key, splits[key])
            if error != ErrorCode.none:
                results[key] = AppendResult(error, log_start_offset=-1,
                                            error_message="refused before the append")
        if required_acks not in (-1, 0, 1):
            results.update({k: AppendResult(ErrorCode.invalid_required_acks, log_start_offset=-1)
                            for k in entries if k not in results})
            respond(results)
            return
        for key, data in entries.items():
            if key in results:
                continue
            partition = self.partitions.get(key)
            if partition is None:
                results[key] = AppendResult(self.missing(key))
                continue
            before = partition.high_watermark
            results[key] = partition.append_as_leader(data, required_acks, splits[key])
            if results[key].error == ErrorCode.none:
                self._wake(key, hw_changed=partition.high_watermark != before)
        if self.rules.waits_for_acks(required_acks, results):
            op = DelayedProduce(self.rules.produce_timeout_ms(timeout_ms), results,
                                self.partitions.get, respond, self.missing)
            self.produce_purgatory.try_complete_else_watch(op, list(entries))
        else:
            respond(results)

    def _request_error(self, key: Key, split: tuple[ErrorCode, list]) -> ErrorCode:
        """UNKNOWN_TOPIC_OR_PARTITION for a partition nobody knows; INVALID_RECORD unless the
        records (split: records.split_batches of them) are exactly one batch (Kafka's
        ProduceRequest.validateRecords, v3+)."""
        if key not in self.partitions and not self.known_partition(key):
            return ErrorCode.unknown_topic_or_partition
        error, views = split
        if error == ErrorCode.none and len(views) != 1:
            return ErrorCode.invalid_record
        return ErrorCode.none

    # -- fetch ------------------------------------------------------------------------------
    def fetch(self, replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
              fetches: dict[Key, FetchPartition],
              respond: Callable[[dict[Key, FetchResult]], None], zero_copy: bool = False,
              leader_only: bool = True) -> None:
        """Answer now or park in fetch purgatory. zero_copy: records may come back as
        RecordsSlices (file ranges, impl/storage/partition_log.py) the caller sends or closes.
        leader_only: Kafka's FetchParams.fetchOnlyLeader (the broker decides it from the
        request: broker.fetch_only_leader); false, followers serve the fetch up to their hw."""
        def read() -> dict[Key, FetchResult]:
            return self._read(replica_id, max_bytes, fetches, zero_copy, leader_only)

        results = read()
        readable = sum(len(r.records) for r in results.values())
        errors = any(r.error != ErrorCode.none or r.diverging_epoch for r in results.values())
        if max_wait_ms <= 0 or not fetches or errors or self.rules.enough_to_answer(
                readable, min_bytes):
            respond(results)
            return
        close_records(results)  # parked: the answer is read again when it completes
        op = DelayedFetch(max_wait_ms, min_bytes, replica_id, fetches, self.partitions.get,
                          read, respond, leader_only)
        self.fetch_purgatory.try_complete_else_watch(op, list(fetches))

    def _read(self, replica_id: int, max_bytes: int, fetches, zero_copy: bool,
              leader_only: bool) -> dict[Key, FetchResult]:
        # Kafka's readFromLog: the request's budget shrinks by what each partition returned
        # (never below 0), and until one returns records the first batch comes whole
        results, remaining, min_one = {}, max_bytes, True
        for key, fetch in fetches.items():
            partition = self.partitions.get(key)
            if partition is None:
                results[key] = FetchResult(self.missing(key))
                continue
            if fetch.topic_id is not None and partition.log.topic_id not in (None, fetch.topic_id):
                # the id the fetch named is not this log's (Kafka's readFromLocalLog)
                results[key] = FetchResult(ErrorCode.inconsistent_topic_id)
                continue
            before = partition.high_watermark
            budget = min(fetch.partition_max_bytes, remaining)  # negative: Partition refuses
            result = partition.fetch(
                fetch.fetch_offset, budget,
                replica_id, fetch.current_leader_epoch, fetch.last_fetched_epoch,
                min_one=min_one, zero_copy=zero_copy,
                follower_log_start=fetch.log_start_offset, leader_only=leader_only,
            )
            if _first_batch_cut(result, budget, fetch.fetch_offset, replica_id):
                result = attrs.evolve(result, first_batch_cut=True)
            results[key] = result
            remaining = max(0, remaining - len(result.records))
            min_one = min_one and not len(result.records)
            if partition.high_watermark != before:
                self.produce_purgatory.check_and_complete(key)
                self.fetch_purgatory.check_and_complete(key)
            if replica_id >= 0:  # the follower's log start may have reached a deletion's
                self.delete_records_purgatory.check_and_complete(key)
        return results

    # -- DeleteRecords ----------------------------------------------------------------------
    def delete_records(self, timeout_ms: int, offsets: dict[Key, int],
                       respond: Callable[[dict[Key, DeleteRecordsResult]], None]) -> None:
        """Move each partition's log start (Partition.delete_records) and answer once every
        moved one's low watermark has reached it, or park in purgatory until then: Kafka's
        ReplicaManager.deleteRecords."""
        results = {}
        for key, offset in offsets.items():
            partition = self.partitions.get(key)
            results[key] = DeleteRecordsResult(self.missing(key)) if partition is None else (
                partition.delete_records(offset, self.live_broker))
        if any(r.error == ErrorCode.none and r.low_watermark < r.requested_offset
               for r in results.values()):
            op = DelayedDeleteRecords(timeout_ms, results, self.partitions.get, respond,
                                      self.missing, self.live_broker)
            self.delete_records_purgatory.try_complete_else_watch(op, list(offsets))
        else:
            respond(results)

    # -- offsets ----------------------------------------------------------------------------
    def _leader_for(self, key: Key, current_leader_epoch: int,
                    leader_only: bool = True) -> tuple[Partition | None, ErrorCode]:
        """The partition if this broker leads it (or, not leader_only, holds it) in the epoch
        the client expects, else an error."""
        partition = self.partitions.get(key)
        if partition is None:
            return None, self.missing(key)
        error = partition.check_leader_epoch(current_leader_epoch)
        if error == ErrorCode.none and leader_only and not partition.is_leader:
            error = ErrorCode.not_leader_or_follower
        return partition, error

    def list_offset(self, key: Key, timestamp: int, current_leader_epoch: int = -1,
                    replica_id: int = CONSUMER_REPLICA_ID) -> OffsetAnswer:
        """Kafka's ReplicaManager.fetchOffset and Partition.fetchOffsetForTimestamp. A consumer
        is answered below the hw, and OFFSET_NOT_AVAILABLE while a new leader's hw is still
        below the start of its epoch (KIP-207: the offsets there are not known to be committed
        yet); a replica or a debugging tool below the log end, and a debugging tool by a
        follower too."""
        partition, error = self._leader_for(key, current_leader_epoch,
                                            leader_only=replica_id != DEBUGGING_REPLICA_ID)
        if error != ErrorCode.none:
            return OffsetAnswer(error)
        log = partition.log
        if timestamp in (EARLIEST, EARLIEST_LOCAL):  # no tiered storage: all of it is local
            return OffsetAnswer(ErrorCode.none, log.log_start_offset, -1, _earliest_epoch(log))
        if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
            return OffsetAnswer(ErrorCode.none)  # nothing is tiered: -1, as Kafka 4.3.1 answers
        consumer = replica_id == CONSUMER_REPLICA_ID
        last_fetchable = partition.high_watermark if consumer else log.log_end_offset
        lagging = consumer and partition.hw_below_epoch_start()
        if timestamp == LATEST:
            if lagging:
                return OffsetAnswer(ErrorCode.offset_not_available)
            return OffsetAnswer(ErrorCode.none, last_fetchable, -1, partition.leader_epoch)
        found = (self._max_timestamp(partition) if timestamp == MAX_TIMESTAMP
                 else self._offset_for_time(partition, timestamp))
        if found.offset >= last_fetchable:  # found, but not yet readable by whom asks
            return OffsetAnswer(ErrorCode.offset_not_available if lagging else ErrorCode.none)
        return found

    @staticmethod
    def _max_timestamp(partition: Partition) -> OffsetAnswer:
        """The first record of the log with the greatest timestamp: its offset, timestamp and
        the leader epoch of its batch; -1 everywhere when there is none (KIP-734, as Kafka 3.7+
        answers it: the record's offset, not its batch's, KAFKA-16310). A batch is decoded only
        when its header's max timestamp beats the best so far."""
        best = OffsetAnswer(ErrorCode.none)
        for header, data in partition.log.iter_batches():
            if header.max_timestamp <= best.timestamp:
                continue
            for record in records.decode_batch(data).records:
                if record.timestamp > best.timestamp:
                    best = OffsetAnswer(ErrorCode.none, record.offset, record.timestamp,
                                        header.partition_leader_epoch)
        return best

    @staticmethod
    def _offset_for_time(partition: Partition, timestamp: int) -> OffsetAnswer:
        """The first record of the log whose timestamp is >= the target: its offset, timestamp
        and the leader epoch of its batch, or -1 everywhere when there is none -- Kafka's
        fetchOffsetByTimestamp (KIP-79; FileRecords.searchForTimestamp). The batch headers' max
        timestamps find the batch; its records find the record in it."""
        position, end = partition.log.log_start_offset, partition.log.log_end_offset
        while position < end:
            data = partition.log.read(position, 1 << 20, end)
            if not data:
                break
            for where, header in positioned_headers(data)[1]:
                if header.max_timestamp >= timestamp and header.last_offset >= position:
                    batch = records.decode_batch(data[where:where + header.size_bytes])
                    for record in batch.records:
                        if record.offset >= position and record.timestamp >= timestamp:
                            return OffsetAnswer(ErrorCode.none, record.offset, record.timestamp,
                                                header.partition_leader_epoch)
                position = max(position, header.next_offset)
        return OffsetAnswer(ErrorCode.none)

    def offset_for_leader_epoch(self, key: Key, leader_epoch: int,
                                current_leader_epoch: int = -1) -> OffsetAnswer:
        partition, error = self._leader_for(key, current_leader_epoch)
        if error != ErrorCode.none:
            return OffsetAnswer(error)
        epoch, end = partition.log.epochs.end_offset_for(leader_epoch, partition.log_end_offset)
        return OffsetAnswer(ErrorCode.none, end, -1, epoch)

    # -- time -------------------------------------------------------------------------------
    def _first_isr_check(self, now: int) -> int:
        interval = self.isr_check_interval_ms
        return now if not interval else -(-now // interval) * interval

    def advance_clock(self, now_ms: int | None = None) -> None:
        now = self.clock() if now_ms is None else now_ms
        self.produce_purgatory.advance_clock(now)
        self.fetch_purgatory.advance_clock(now)
        self.delete_records_purgatory.advance_clock(now)
        self.run_isr_checks(now)
        self.run_retention_checks(now)

    def run_isr_checks(self, now: int) -> None:
        """Kafka's isr-expiration task runs at a fixed rate (every replica.lag.time.max.ms / 2,
        here at the multiples of that interval): every check time passed since the last call
        runs, in order, judged at its own time (nothing else happened in between)."""
        interval = self.isr_check_interval_ms
        if interval is None:
            return
        while now >= self._next_isr_check_ms:
            at = self._next_isr_check_ms
            self._next_isr_check_ms = at + interval
            self.maybe_shrink_isrs(at)

    def run_retention_checks(self, now: int) -> None:
        """Kafka's kafka-log-retention task (LogManager.cleanupLogs), first run
        log.initial.task.delay.ms after start, then every log.retention.check.interval.ms:
        every partition this broker hosts, leader or follower, deletes its old segments
        (Partition.delete_old_segments). Runs missed while the broker was busy are one run."""
        interval = self.retention_check_interval_ms
        if interval is None or now < self._next_retention_check_ms:
            return
        missed = (now - self._next_retention_check_ms) // interval
        self._next_retention_check_ms += (missed + 1) * interval
        for key, partition in list(self.partitions.items()):
            if partition.delete_old_segments():
                self.log_start_moved(key)

    def log_start_moved(self, key: Key) -> None:
        """A retention run moved this replica's log start: a DeleteRecords waiting for the low
        watermark, or a fetch now below the log start, may be answerable."""
        self.delete_records_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)

    def next_deadline_ms(self) -> int | None:
        """Nothing advance_clock does is due before this time (None: nothing is scheduled): the
        earliest purgatory expiration, ISR check or retention run."""
        due = [self.produce_purgatory.next_expiration_ms(),
               self.fetch_purgatory.next_expiration_ms(),
               self.delete_records_purgatory.next_expiration_ms(),
               self._next_isr_check_ms if self.isr_check_interval_ms is not None else None,
               self._next_retention_check_ms if self.retention_check_interval_ms is not None
               else None]
        return min((d for d in due if d is not None), default=None)

    def maybe_shrink_isrs(self, now: int | None = None) -> None:
        for key, partition in self.partitions.items():
            before = partition.high_watermark
            partition.maybe_shrink_isr(now)
            if partition.high_watermark != before or partition.pending_isr is None:
                self._wake(key, hw_changed=partition.high_watermark != before)


def _first_batch_cut(result: FetchResult, budget: int, fetch_offset: int,
                     replica_id: int) -> bool:
    """A consumer's read that returned nothing although there was a batch below the high
    watermark and some budget left: the batch did not fit (min_one was off). Kafka's
    ReplicaManager.readFromLocalLog replaces such a read (firstEntryIncomplete) by an empty
    one that has no aborted transactions; with no budget at all, or nothing to read, it keeps
    the log's read and its (empty) list."""
    return (replica_id < 0 and result.error == ErrorCode.none and budget > 0
            and result.diverging_epoch is None and len(result.records) == 0
            and fetch_offset < result.high_watermark)


def close_records(results: dict[Key, FetchResult]) -> None:
    """Release the file ranges of fetch results that will not be sent."""
    for result in results.values():
        if not isinstance(result.records, bytes | bytearray | memoryview):
            result.records.close()


def _earliest_epoch(log) -> int:
    """The leader epoch ListOffsets EARLIEST names: the epoch cache's first entry's, when it
    starts at or below the log start, else -1 (Kafka's UnifiedLog.fetchOffsetByTimestamp; a
    position, not a record: the epoch the log start was written in, not the current one)."""
    first = log.epochs.entries[0] if log.epochs.entries else None
    return first[0] if first is not None and first[1] <= log.log_start_offset else -1
