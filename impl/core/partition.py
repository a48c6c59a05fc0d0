"""One partition replica on one broker: leader append, follower fetch state, hw, ISR, epochs.

Single-threaded; the clock is injected. What it follows (docs/semantics.md):
- hw = min log end offset over the MAXIMAL ISR (committed ISR plus the members of an ISR change
  still in flight), never moves backwards, and (KIP-966) does not advance while the ISR is below
  min.insync.replicas;
- acks=all with an ISR below min(min.insync.replicas, replication factor) is rejected before
  anything is written (NOT_ENOUGH_REPLICAS);
- on a compacted topic (cleanup.policy includes "compact") a batch with a keyless record is
  refused whole (INVALID_RECORD with KIP-467 record errors); on a CreateTime topic one with a
  record timestamp outside message.timestamp.before/after.max.ms of the wall clock
  (INVALID_TIMESTAMP, KIP-937); a producer batch with the LogAppendTime bit is refused on a
  LogAppendTime topic and written as CreateTime on the others; followers check none of it;
- fetches carrying a current leader epoch are fenced (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH)
  before they can move follower state (KIP-320);
- ISR expansion only for a follower whose leo >= hw and >= the start of the leader's epoch;
  shrink for followers not caught up within replica.lag.time.max.ms.
ISR changes are proposed through `alter_isr(partition, proposed_isr)` and take effect when the
caller reports them committed (`isr_committed`), as with Kafka's AlterPartition.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.batches import last_sequence
from kafkaref.impl.core.config import PartitionConfig
from kafkaref.impl.core.epoch_cache import UNDEFINED
from kafkaref.impl.core.producer_state import CachedBatch, ProducerState
from kafkaref.impl.protocol import records
from kafkaref.impl.storage.partition_log import PartitionLog, RecordsSlice


@attrs.frozen
class AppendResult:
    error: ErrorCode
    base_offset: int = -1
    last_offset: int = -1
    log_start_offset: int = 0
    error_message: str | None = None
    # KIP-467: (index of the record in its batch, why) for each record that made the batch fail
    record_errors: tuple[tuple[int, str], ...] = ()
    # a LogAppendTime topic's append time, a duplicate's batch's max timestamp (CachedBatch),
    # else -1 (Kafka's LogAppendInfo.logAppendTime)
    log_append_time: int = -1


@attrs.frozen
class FetchResult:
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: bytes | RecordsSlice = b""  # a file range on the zero-copy path
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) on divergence
    # no records although some were there to read: the byte budget left was smaller than the
    # first batch (set by ReplicaManager, which knows the budget; Kafka answers such a read's
    # aborted_transactions null)
    first_batch_cut: bool = False


@attrs.frozen
class DeleteRecordsResult:
    error: ErrorCode
    requested_offset: int = -1
    low_watermark: int = -1


HIGH_WATERMARK = -1  # DeleteRecords' offset meaning "up to the high watermark"


@attrs.define
class FollowerState:
    log_end_offset: int = -1  # unknown until the follower fetches in this epoch
    log_start_offset: int = -1  # what its last fetch said its log start is (DeleteRecords)
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0


class Partition:
    def __init__(
        self,
        topic: str,
        index: int,
        broker_id: int,
        log: PartitionLog,
        clock: Callable[[], int],
        config: PartitionConfig = PartitionConfig(),  # noqa: B008 (frozen value)
        alter_isr: Callable[[Partition, frozenset[int]], None] | None = None,
        follower_hw_raised: Callable[[Partition], None] | None = None,
    ):
        self.topic, self.index, self.broker_id = topic, index, broker_id
        self.log, self.clock, self.config = log, clock, config
        if config.segment_bytes is not None:  # the topic's override of log.segment.bytes
            log.set_segment_bytes(config.segment_bytes)
        self.alter_isr = alter_isr
        # told when a leader's answer raised this follower's hw, once its log start has followed
        # the leader's: consumer fetches parked here (KIP-392) may now have enough to read
        self.follower_hw_raised = follower_hw_raised
        self.replicas: tuple[int, ...] = (broker_id,)
        self.leader_id: int | None = None
        self.leader_epoch = UNDEFINED
        self.partition_epoch = 0  # the controller's version of leader + ISR (KIP-497)
        self.isr: frozenset[int] = frozenset()
        self.pending_isr: frozenset[int] | None = None
        # a reopened log remembers its checkpointed hw (impl/storage); a new one says 0
        self.high_watermark = min(log.high_watermark, log.log_end_offset)
        self.followers: dict[int, FollowerState] = {}
        self.producers = ProducerState()
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        """Replay batch headers of a reopened log (Kafka loads snapshots, then the tail)."""
        if self.log.log_end_offset == self.log.log_start_offset:
            return
        for header, _ in self.log.iter_batches():
            if header.producer_id >= 0:
                self.producers.record(header.producer_id, header.producer_epoch, CachedBatch(
                    header.base_sequence, last_sequence(header), header.base_offset,
                    header.last_offset, header.max_timestamp))

    def reconfigure(self, config: PartitionConfig) -> None:
        """Take the topic's configs (on hosting the partition, and after AlterConfigs): the
        core reads them from self.config; a changed segment.bytes goes to the log, which rolls
        at it from its next append on (Kafka's UnifiedLog.updateConfig)."""
        if config.segment_bytes != self.config.segment_bytes:
            self.log.set_segment_bytes(config.segment_bytes)
        self.config = config

    # -- roles ----------------------------------------------------------------------------
    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr | self.pending_isr if self.pending_isr is not None else self.isr

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def hw_below_epoch_start(self) -> bool:
        """A leader whose hw is still below the offset its epoch started at: its followers have
        not fetched in the epoch yet, and offsets in between are not known to be committed
        (KIP-207; Kafka's Partition.fetchOffsetForTimestamp answers consumers OFFSET_NOT_AVAILABLE
        then)."""
        if not self.is_leader:
            return False
        start = self.log.epochs.start_offset_of(self.leader_epoch)
        return start is not None and start > self.high_watermark

    def make_leader(self, leader_epoch: int, isr, replicas, partition_epoch: int = 0) -> bool:
        """Become leader of leader_epoch; True if this is a new epoch or a leader change."""
        changed = leader_epoch != self.leader_epoch or not self.is_leader
        now = self.clock()
        # Kafka's makeLeader: the epoch starts at the leo (the cache's assign rule decides)
        self.log.epochs.assign(leader_epoch, self.log.log_end_offset)
        self.leader_id, self.leader_epoch = self.broker_id, leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas, self.isr, self.pending_isr = tuple(replicas), frozenset(isr), None
        if changed:
            # a new leader knows nothing of its followers yet; ISR members get a grace period
            self.followers = {
                r: FollowerState(last_caught_up_ms=now if r in self.isr else 0)
                for r in self.replicas
                if r != self.broker_id
            }
        self.maybe_increment_hw()
        return changed

    def make_follower(self, leader_id: int | None, leader_epoch: int, replicas,
                      partition_epoch: int = 0) -> bool:
        changed = leader_epoch != self.leader_epoch or leader_id != self.leader_id
        self.leader_id, self.leader_epoch = leader_id, leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas, self.isr, self.pending_isr = tuple(replicas), frozenset(), None
        self.followers = {}
        return changed

    # -- leader append ----------------------------------------------------------------------
    def append_as_leader(self, data, required_acks: int,
                         split: tuple[ErrorCode, list] | None = None) -> AppendResult:
        """A producer's record set, validated here once (sizes, magic, CRC, codec, every
        record) and handed to the log with the headers parsed on the way, so the log only
        stamps offsets and this leader epoch and writes (docs/storage.md, one append path).
        split: records.split_batches(data), when the caller split it already (the replica
        manager does, to check a request carries one batch): a record set is split once."""
        if not self.is_leader:
            return AppendResult(ErrorCode.not_leader_or_follower)
        rules = self.config.rules
        if required_acks == -1 and rules.isr_below_minimum(self):
            return AppendResult(ErrorCode.not_enough_replicas, error_message="ISR below minimum")
        error, views = split if split is not None else records.split_batches(data)
        if error == ErrorCode.none and not views:
            error = ErrorCode.invalid_record
        if error == ErrorCode.none and any(len(v) > self.config.max_message_bytes for v in views):
            return AppendResult(ErrorCode.message_too_large, error_message=(
                f"a batch is larger than max.message.bytes={self.config.max_message_bytes}"))
        bounds = self.config.timestamp_bounds(self.log)
        for view in views if error == ErrorCode.none else ():
            error = rules.check_producer_batch(view, bounds)
            if error != ErrorCode.none:
                break
        if error not in (ErrorCode.none, ErrorCode.invalid_timestamp):
            return AppendResult(error, error_message="invalid record batch")
        headers = [records.parse_header(view) for view in views]
        stamped = _stamped_by_producer(headers)
        # one attribute test for every other topic and batch
        if error != ErrorCode.none or self.config.compacted or (stamped and bounds is None):
            refused = self._record_errors(views, headers, bounds, error != ErrorCode.none)
            if refused is not None:
                return refused
        if stamped:  # CreateTime topic: written as CreateTime (records.create_time_batch)
            data = b"".join(records.create_time_batch(v) if h.is_log_append_time else v
                            for v, h in zip(views, headers, strict=True))
            headers = [records.parse_header(view) for view in records.split_batches(data)[1]]
        idempotent = [h for h in headers if h.producer_id >= 0]
        if idempotent:
            if len(headers) != 1:
                return AppendResult(ErrorCode.invalid_record, error_message="one batch only")
            h = headers[0]
            check = self.producers.check(
                h.producer_id, h.producer_epoch, h.base_sequence, last_sequence(h)
            )
            if check.duplicate is not None:
                dup = check.duplicate
                return AppendResult(ErrorCode.none, dup.first_offset, dup.last_offset,
                                    self.log.log_start_offset, log_append_time=dup.timestamp)
            if check.error != ErrorCode.none:
                return AppendResult(check.error)
        return self._append_validated(data, headers)

    def _append_validated(self, data, headers) -> AppendResult:
        """The log stamps and writes (checked: nothing is validated twice), a LogAppendTime
        topic's batches with its append time; only what was written enters the producer
        state, with the max timestamp the log wrote (a duplicate is answered with it)."""
        log_append_time = self.config.log_append_time
        info = self.log.append_as_leader(data, self.leader_epoch, checked=headers,
                                         log_append_time=log_append_time)
        if info.error != ErrorCode.none:
            return AppendResult(info.error, error_message="the log refused the batch")
        next_offset = info.first_offset
        for header in headers:
            first, next_offset = next_offset, next_offset + header.last_offset_delta + 1
            self.producers.record(header.producer_id, header.producer_epoch, CachedBatch(
                header.base_sequence, last_sequence(header), first, next_offset - 1,
                info.log_append_time if log_append_time else header.max_timestamp))
        self.maybe_increment_hw()
        return AppendResult(ErrorCode.none, info.first_offset, info.last_offset,
                            self.log.log_start_offset, log_append_time=info.log_append_time)

    def _record_errors(self, views, headers, bounds, late_found: bool) -> AppendResult | None:
        """The refusal of the first batch with record errors, as Kafka's LogValidator gives it
        (validateRecord, then processRecordErrors once per batch): each record without a key on
        a compacted topic (validateKey), else each record whose timestamp is refused
        (validateTimestamp: outside the bounds on a CreateTime topic, records.out_of_bounds;
        every record of a batch whose producer set the LogAppendTime bit on a LogAppendTime
        topic); None if there are none. late_found: the validation found timestamps out of
        bounds (else none are looked for on a CreateTime topic). Kafka checks before the
        producer state, so a retried batch is refused again, never answered as a duplicate."""
        for view, header in zip(views, headers, strict=True):
            keyless = records.keyless_records(view) if self.config.compacted else []
            if isinstance(keyless, ErrorCode):
                return AppendResult(keyless, error_message="invalid record batch")
            if bounds is not None:
                late = records.out_of_bounds(view, bounds) if late_found else []
                if isinstance(late, ErrorCode):
                    return AppendResult(late, error_message="invalid record batch")
            else:
                late = range(header.records_count) if header.is_log_append_time else []
            if keyless or late:
                return records_refused(self.topic, self.index, keyless, late, bounds)
        return None

    # -- DeleteRecords ----------------------------------------------------------------------
    def delete_records(self, offset: int, live: Callable[[int], bool]) -> DeleteRecordsResult:
        """Move the log start up to offset (HIGH_WATERMARK: the hw), as Kafka's
        Partition.deleteRecordsOnLeader: only a leader, only a topic whose cleanup.policy has
        "delete" (POLICY_VIOLATION), only up to the hw (OFFSET_OUT_OF_RANGE). The answer
        carries the low watermark now; the request is done once it reaches offset."""
        if not self.is_leader:
            return DeleteRecordsResult(ErrorCode.not_leader_or_follower)
        if not self.config.deletes_records:
            return DeleteRecordsResult(ErrorCode.policy_violation)
        requested = self.high_watermark if offset == HIGH_WATERMARK else offset
        if not 0 <= requested <= self.high_watermark:
            return DeleteRecordsResult(ErrorCode.offset_out_of_range)
        self.log.increment_log_start_offset(requested)
        return DeleteRecordsResult(ErrorCode.none, requested, self.low_watermark(live))

    def low_watermark(self, live: Callable[[int], bool]) -> int:
        """The smallest log start of this leader and its followers on live brokers (a follower
        that has not fetched in this epoch counts as -1): Kafka's lowWatermarkIfLeader."""
        low = self.log.log_start_offset
        for replica_id, state in self.followers.items():
            if live(replica_id) and state.log_start_offset < low:
                low = state.log_start_offset
        return low

    # -- retention --------------------------------------------------------------------------
    def delete_old_segments(self) -> int:
        """One run of the retention task on this replica's log, leader or follower alike (Kafka's
        LogManager.cleanupLogs -> UnifiedLog.deleteOldSegments): the topic's retention.ms and
        retention.bytes (None: the broker's), and only when its cleanup.policy has "delete"
        (else only segments below the log start go). The log start moves to a segment's base
        at or below the hw; a follower's also follows its leader's (append_as_follower)."""
        return self.log.delete_old_segments(self.config.retention_ms, self.config.retention_bytes,
                                            delete=self.config.deletes_records)

    # -- follower side ----------------------------------------------------------------------
    def append_as_follower(self, data, leader_hw: int, leader_log_start: int = -1) -> None:
        """Append batches copied from the leader (offsets and epochs already stamped): their
        frames (sizes, magic, CRC) checked here once, then written by the log unchecked. The
        log start follows the leader's once the hw has passed it (Kafka's fetcher, after
        updating the hw: maybeIncrementLogStartOffset)."""
        hw = self.high_watermark
        self._append_copied(data)
        self._set_hw(self._follower_hw(leader_hw))
        self._follow_log_start(leader_log_start)
        self._tell_if_hw_raised(hw)

    def _append_copied(self, data) -> None:
        if not data:  # an idle partition in a follower fetch: only the hw may move
            return
        error, views = records.split_batches(data)
        headers = []
        for view in views if error == ErrorCode.none else ():
            error = self.config.rules.check_copied_batch(view)
            if error != ErrorCode.none:
                break
            headers.append(records.parse_header(view))
        if error != ErrorCode.none:
            raise ValueError(f"leader sent a malformed batch: {error.name}")
        if headers:
            info = self.log.append(data, checked=headers)
            if info.error != ErrorCode.none:
                raise ValueError(f"the log refused the leader's batches: {info.error.name}")
            for h in headers:
                if h.producer_id >= 0:
                    self.producers.record(
                        h.producer_id, h.producer_epoch,
                        CachedBatch(h.base_sequence, last_sequence(h), h.base_offset, h.last_offset,
                                    h.max_timestamp),
                    )

    def _follow_log_start(self, leader_log_start: int) -> None:
        if self.log.log_start_offset < leader_log_start <= self.high_watermark:
            self.log.increment_log_start_offset(leader_log_start)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """A follower whose log ends below its leader's log start drops it all and starts
        again there (Kafka's fetcher on OFFSET_OUT_OF_RANGE: truncateFullyAndStartAt)."""
        hw = self.high_watermark
        self.log.truncate_fully_and_start_at(offset)
        self.producers.truncate_to(0)
        self._set_hw(offset)
        self._tell_if_hw_raised(hw)

    def _tell_if_hw_raised(self, before: int) -> None:
        if self.high_watermark > before and self.follower_hw_raised is not None:
            self.follower_hw_raised(self)

    def truncate_to(self, offset: int) -> None:
        self.log.truncate_to(offset)
        self.producers.truncate_to(offset)
        self._set_hw(min(self.high_watermark, self.log.log_end_offset))

    # -- fetch ------------------------------------------------------------------------------
    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        if current_leader_epoch == UNDEFINED:
            return ErrorCode.none
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.unknown_leader_epoch
        return ErrorCode.none

    def fetch(
        self,
        fetch_offset: int,
        max_bytes: int,
        replica_id: int = -1,
        current_leader_epoch: int = UNDEFINED,
        last_fetched_epoch: int = UNDEFINED,
        min_one: bool = True,
        zero_copy: bool = False,
        follower_log_start: int = -1,
        leader_only: bool = True,
    ) -> FetchResult:
        """leader_only: Kafka's FetchParams.fetchOnlyLeader, false for a consumer whose request
        carries client metadata (KIP-392): a follower then serves it, up to its own hw."""
        error = self.check_leader_epoch(current_leader_epoch)
        if error == ErrorCode.none and leader_only and not self.is_leader:
            error = ErrorCode.not_leader_or_follower
        if error != ErrorCode.none:
            return FetchResult(error)
        is_follower = replica_id >= 0
        if is_follower and replica_id not in self.followers:
            return FetchResult(ErrorCode.not_leader_or_follower)
        leo, start = self.log.log_end_offset, self.log.log_start_offset
        if is_follower and last_fetched_epoch != UNDEFINED:
            epoch, end = self.log.epochs.end_offset_for(last_fetched_epoch, leo)
            if epoch < last_fetched_epoch or end < fetch_offset:
                return FetchResult(ErrorCode.none, self.high_watermark, start, leo,
                                   diverging_epoch=(epoch, end))
        if fetch_offset < start or fetch_offset > leo:
            return FetchResult(ErrorCode.offset_out_of_range, self.high_watermark, start, leo)
        max_offset = leo if is_follower else self.config.rules.consumer_fetch_limit(self)
        records = b""
        if fetch_offset < max_offset:
            if max_bytes < 0:  # Kafka's LogSegment.read throws on a negative size: the
                return FetchResult(ErrorCode.unknown_server_error)  # partition fails alone
            records = self._read(fetch_offset, max_bytes, max_offset, min_one, zero_copy)
        # As in Kafka (and model/): read first, answer with the hw as it was, then move the
        # follower's state; so a follower learns an hw it helped raise one fetch later.
        result = FetchResult(ErrorCode.none, self.high_watermark, start, leo, records)
        if is_follower:
            self._update_follower(replica_id, fetch_offset, follower_log_start)
        return result

    def _read(self, fetch_offset, max_bytes, max_offset, min_one, zero_copy):
        if zero_copy:
            fetched = self.log.read_slice(fetch_offset, max_bytes, max_offset, min_one)
            if fetched.size > 0:
                return fetched
            fetched.close()
            return b""
        return self.log.read(fetch_offset, max_bytes, max_offset, min_one)

    def readable_bytes(self, fetch_offset: int, replica_id: int) -> int:
        """Bytes a fetch at fetch_offset could return now (for DelayedFetch's min_bytes)."""
        end = self.log.log_end_offset if replica_id >= 0 else self.high_watermark
        return self.log.bytes_between(fetch_offset, end) if fetch_offset < end else 0

    def _update_follower(self, replica_id: int, fetch_offset: int, log_start: int) -> None:
        now, leader_leo = self.clock(), self.log.log_end_offset
        state = self.followers[replica_id]
        state.log_start_offset = log_start
        moved = fetch_offset != state.log_end_offset
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now)
        elif fetch_offset >= state.last_fetch_leader_leo >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_leader_leo, state.last_fetch_ms = leader_leo, now
        self.maybe_expand_isr(replica_id)
        if moved:  # the hw depends on this follower only through its leo
            self.maybe_increment_hw()

    # -- hw and ISR -------------------------------------------------------------------------
    def replica_leo(self, replica_id: int) -> int:
        if replica_id == self.broker_id:
            return self.log.log_end_offset
        state = self.followers.get(replica_id)
        return state.log_end_offset if state is not None else -1

    def maybe_increment_hw(self) -> None:
        """Raise hw to the minimum leo over the maximal ISR. impl/core's one statement of the
        hw rule (docs/semantics.md; test_core_hw_fast_paths holds it to the model's,
        model/helpers.high_watermark). Whoever needs to know whether it moved compares the hw
        before and after (the wakes, _tell_if_hw_raised)."""
        if not self.is_leader:
            return
        rules = self.config.rules
        if self.config.hw_requires_min_isr and rules.isr_below_minimum(self):
            return
        candidate = min(self.replica_leo(r) for r in rules.hw_members(self))
        if candidate > self.high_watermark:
            self._set_hw(candidate)

    def _follower_hw(self, leader_hw: int) -> int:
        """The leader's hw kept within [this log's start, its leo], as Kafka's
        updateHighWatermark keeps it: a new leader may still send an hw below the log start this
        replica reached as the old leader (DeleteRecords)."""
        return min(max(leader_hw, self.log.log_start_offset), self.log.log_end_offset)

    def _set_hw(self, hw: int) -> None:
        if hw == self.high_watermark:
            return  # every follower fetch answer sets it; most leave it where it was
        self.high_watermark = hw
        self.log.set_high_watermark(hw)  # checkpointed by the log on flush / close

    def maybe_expand_isr(self, replica_id: int) -> None:
        if self.pending_isr is not None or replica_id in self.isr:
            return
        leo = self.replica_leo(replica_id)
        epoch_start = self.log.epochs.start_offset_of(self.leader_epoch)
        if epoch_start is None or not self.config.rules.reached_hw(self, leo) or leo < epoch_start:
            return
        self._propose(self.isr | {replica_id})

    def maybe_shrink_isr(self, now: int | None = None) -> None:
        """The lag check, run at `now` (a scheduled check time; default the clock)."""
        if not self.is_leader or self.pending_isr is not None:
            return
        now = self.clock() if now is None else now
        lag = self.config.replica_lag_time_max_ms
        leo = self.log.log_end_offset
        out = {  # Kafka's isCaughtUp: at the leader's leo, or caught up within the lag time
            r for r in self.isr - {self.broker_id}
            if r in self.followers and self.followers[r].log_end_offset < leo
            and now - self.followers[r].last_caught_up_ms > lag
        }
        if out:
            self._propose(self.isr - out)

    def _propose(self, proposed: frozenset[int]) -> None:
        self.pending_isr = frozenset(proposed)
        if self.alter_isr is None:
            self.isr_committed(self.leader_epoch, proposed)
        else:
            self.alter_isr(self, self.pending_isr)

    def forget_follower(self, replica_id: int) -> None:
        """The follower's broker was fenced (it crashed): its fetch position is unknown again and
        an ISR addition of it still in flight is dropped (KIP-903: the controller would reject
        it by its stale broker epoch; without this a follower that lost its log in the crash
        could enter the ISR on a fetch sent before it)."""
        state = self.followers.get(replica_id)
        if state is not None:
            state.log_end_offset = state.log_start_offset = -1
        pending = self.pending_isr
        if pending is not None and replica_id in pending - self.isr:
            self.pending_isr = None

    def isr_committed(self, leader_epoch: int, isr, partition_epoch: int | None = None) -> bool:
        """The controller's ISR for leader_epoch (from a metadata image); False if stale.

        An in-flight proposal stays pending unless the image shows exactly it: an image sent
        before the controller handled the proposal must not shrink the maximal ISR, or the hw
        could pass a member the controller is about to accept (B8). The controller's answer
        (`isr_answered`) ends the proposal either way."""
        if leader_epoch != self.leader_epoch or not self.is_leader:
            return False
        self.isr = frozenset(isr)
        if partition_epoch is not None:
            self.partition_epoch = partition_epoch
        if self.pending_isr == self.isr:
            self.pending_isr = None
        self.maybe_increment_hw()
        return True

    def isr_answered(self, proposed) -> None:
        """The controller answered the proposal (accepted: its image was applied just before)."""
        if self.pending_isr == frozenset(proposed):
            self.pending_isr = None
            self.maybe_increment_hw()

    def isr_rejected(self) -> None:
        self.pending_isr = None
        self.maybe_increment_hw()


def _stamped_by_producer(headers) -> bool:
    """Did a producer set the LogAppendTime bit of one of its batches itself? (No client does.)"""
    if len(headers) == 1:  # the common case, one test
        return bool(headers[0][5] & records.LOG_APPEND_TIME_FLAG)  # attributes
    return any(h[5] & records.LOG_APPEND_TIME_FLAG for h in headers)


def records_refused(topic: str, index: int, keyless, late, bounds) -> AppendResult:
    """The answer Kafka gives for a batch with record errors (KIP-467): one per record, a key
    error for a record without a key on a compacted topic, else a timestamp error; the
    partition fails INVALID_TIMESTAMP if any record's timestamp was refused, INVALID_RECORD
    otherwise, with a message showing the first three (LogValidator.processRecordErrors)."""
    keyless, late = set(keyless), set(late)
    no_key = (f"Compacted topic cannot accept message without key in topic partition "
              f"{topic}-{index}")
    bad_time = ("Producer should not set timestamp type to LogAppendTime." if bounds is None
                else f"Timestamp is out of range. The timestamp should be within "
                     f"[{bounds[0]}, {bounds[1]}]")
    errors = tuple((i, no_key if i in keyless else bad_time) for i in sorted(keyless | late))
    if late - keyless:
        return AppendResult(ErrorCode.invalid_timestamp, record_errors=errors, error_message=(
            "One or more records have been rejected due to invalid timestamp"))
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return AppendResult(ErrorCode.invalid_record, record_errors=errors, error_message=(
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"))
