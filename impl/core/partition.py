"""One partition replica on one broker: leader append, follower fetch state, hw, ISR, epochs.

Single-threaded; the clock is injected. What it follows (docs/semantics.md):
- hw = min log end offset over the MAXIMAL ISR (committed ISR plus the members of an ISR change
  still in flight), never moves backwards, and (KIP-966) does not advance while the ISR is below
  min.insync.replicas;
- acks=all with an ISR below min(min.insync.replicas, replication factor) is rejected before
  anything is written (NOT_ENOUGH_REPLICAS);
- on a compacted topic (cleanup.policy includes "compact") a batch with a keyless record is
  refused whole (INVALID_RECORD with KIP-467 record errors); followers do not check it;
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

from kafkaref.impl.core.batches import last_sequence, positioned_headers
from kafkaref.impl.core.epoch_cache import UNDEFINED
from kafkaref.impl.core.producer_state import CachedBatch, ProducerState
from kafkaref.impl.core.topic_rules import MAX_MESSAGE_BYTES_DEFAULT
from kafkaref.impl.core.zero_copy import SliceRecords
from kafkaref.impl.mutants import Mutant, Switches, mutants_field, switches_field
from kafkaref.impl.protocol import records


@attrs.frozen
class PartitionConfig:
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30_000
    # Kafka's max.message.bytes: the largest batch a producer may append (MESSAGE_TOO_LARGE).
    max_message_bytes: int = MAX_MESSAGE_BYTES_DEFAULT
    # cleanup.policy includes "compact": a leader refuses records without a key (Kafka's
    # LogValidator.validateKey). kafkaref never compacts the log itself.
    compacted: bool = False
    # The topic's segment.bytes, None without an override (the broker's log.segment.bytes):
    # handed to the log (set_segment_bytes), which rolls at it from its next append on.
    segment_bytes: int | None = None
    # KIP-966: the hw does not advance while the ISR is below the minimum. Off = older Kafka,
    # where only acks=all was gated (and NOT_ENOUGH_REPLICAS_AFTER_APPEND is reachable).
    hw_requires_min_isr: bool = True
    # Deliberate faults (impl/mutants.py; tests and `kafkaref broker --mutant` only). Used here:
    # M1 M3 M4 M15; by the replica manager: M2 M10 M11; by impl/replication/apply.py: M5.
    mutants: frozenset[Mutant] = mutants_field()
    on: Switches = switches_field()  # what hot paths test

    def minimum_isr(self, replication_factor: int) -> int:
        return min(self.min_insync_replicas, replication_factor)


@attrs.frozen
class AppendResult:
    error: ErrorCode
    base_offset: int = -1
    last_offset: int = -1
    log_start_offset: int = 0
    error_message: str | None = None
    # KIP-467: (index of the record in its batch, why) for each record that made the batch fail
    record_errors: tuple[tuple[int, str], ...] = ()
    log_append_time: int = -1  # a duplicate's: its batch's max timestamp (CachedBatch)


@attrs.frozen
class FetchResult:
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: bytes | SliceRecords = b""  # a file range on the zero-copy path
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) on divergence


@attrs.define
class FollowerState:
    log_end_offset: int = -1  # unknown until the follower fetches in this epoch
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0


class Partition:
    def __init__(
        self,
        topic: str,
        index: int,
        broker_id: int,
        log,
        clock: Callable[[], int],
        config: PartitionConfig = PartitionConfig(),  # noqa: B008 (frozen value)
        alter_isr: Callable[[Partition, frozenset[int]], None] | None = None,
    ):
        self.topic, self.index, self.broker_id = topic, index, broker_id
        self.log, self.clock, self.config = log, clock, config
        if config.segment_bytes is not None:  # the topic's override of log.segment.bytes
            log.set_segment_bytes(config.segment_bytes)
        self.alter_isr = alter_isr
        self.replicas: tuple[int, ...] = (broker_id,)
        self.leader_id: int | None = None
        self.leader_epoch = UNDEFINED
        self.partition_epoch = 0  # the controller's version of leader + ISR (KIP-497)
        self.isr: frozenset[int] = frozenset()
        self.pending_isr: frozenset[int] | None = None
        # a reopened log remembers its checkpointed hw (impl/storage); MemoryLog starts at 0
        self.high_watermark = min(getattr(log, "high_watermark", 0), log.log_end_offset)
        self.followers: dict[int, FollowerState] = {}
        self.producers = ProducerState()
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        """Replay batch headers of a reopened log (Kafka loads snapshots, then the tail)."""
        if self.log.log_end_offset == self.log.log_start_offset:
            return
        walk = getattr(self.log, "iter_batches", None)
        for header, _ in walk() if walk is not None else self.log.batches():
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
    def append_as_leader(self, data: bytes, required_acks: int) -> AppendResult:
        if not self.is_leader:
            return AppendResult(ErrorCode.not_leader_or_follower)
        if required_acks == -1 and len(self.isr) < self.config.minimum_isr(len(self.replicas)) and (
                not self.config.on.M3):
            return AppendResult(ErrorCode.not_enough_replicas, error_message="ISR below minimum")
        error, views = records.split_batches(data)
        if error == ErrorCode.none and not views:
            error = ErrorCode.invalid_record
        if error == ErrorCode.none and any(len(v) > self.config.max_message_bytes for v in views):
            return AppendResult(ErrorCode.message_too_large, error_message=(
                f"a batch is larger than max.message.bytes={self.config.max_message_bytes}"))
        for view in views if error == ErrorCode.none else ():
            error = records.validate_batch(view, from_client=True)
            if error == ErrorCode.corrupt_message and self.config.on.M7:
                error = ErrorCode.none  # mutant M7: a bad CRC let through (storage skips it too)
            if error != ErrorCode.none:
                break
        if error != ErrorCode.none:
            return AppendResult(error, error_message="invalid record batch")
        if self.config.compacted:  # one attribute test for every other topic
            refused = self._keyless_refusal(views)
            if refused is not None:
                return refused
        headers = [records.parse_header(view) for view in views]
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
        return self._stamp_and_append(data, headers)

    def _keyless_refusal(self, views) -> AppendResult | None:
        """INVALID_RECORD naming every record without a key of the first batch that has one (a
        compacted topic keeps the last value per key: a keyless record has no place there), as
        Kafka's LogValidator (validateKey, then processRecordErrors once per batch); None if
        every record has a key. Kafka checks before the producer state, so a retried keyless
        batch is refused again, never answered as a duplicate."""
        for view in views:
            keyless = records.keyless_records(view)
            if isinstance(keyless, ErrorCode):
                return AppendResult(keyless, error_message="invalid record batch")
            if keyless:
                return keyless_records_refused(self.topic, self.index, keyless)
        return None

    def _stamp_and_append(self, data: bytes, headers) -> AppendResult:
        if self._log_stamps_for_us():
            return self._append_stamped_by_log(data, headers)
        buffer = bytearray(data)
        view = memoryview(buffer)
        base = next_offset = self.log.log_end_offset
        position, cached = 0, []
        for header in headers:
            records.stamp_batch(view[position:], next_offset, self.leader_epoch)
            position += header.size_bytes
            first = next_offset
            next_offset += header.last_offset_delta + 1
            cached.append((header, CachedBatch(header.base_sequence, last_sequence(header),
                                               first, next_offset - 1, header.max_timestamp)))
        del view  # release the export before handing the buffer over
        info = self.log.append(bytes(buffer))
        error = getattr(info, "error", ErrorCode.none)  # impl/storage answers with AppendInfo
        if error != ErrorCode.none:
            return AppendResult(error, error_message="the log refused the batch")
        for header, batch in cached:  # only what was written enters the producer state
            self.producers.record(header.producer_id, header.producer_epoch, batch)
        self.maybe_increment_hw()
        return AppendResult(ErrorCode.none, base, next_offset - 1, self.log.log_start_offset)

    def _log_stamps_for_us(self) -> bool:
        """True if the log (impl/storage) can stamp and write validated producer batches itself
        without a copy (a stamped 16-byte prefix and the producer's bytes in one writev) and
        without walking the records a second time (its validate_records is off: we just did)."""
        config = getattr(self.log, "config", None)
        return (hasattr(self.log, "append_as_leader") and config is not None
                and not config.validate_records)

    def _append_stamped_by_log(self, data, headers) -> AppendResult:
        base = self.log.log_end_offset
        # One batch, validated just now: its frame (CRC included) is not checked again.
        checked = headers[0] if len(headers) == 1 else None
        info = self.log.append_as_leader(data, self.leader_epoch, checked=checked)
        if info.error != ErrorCode.none:
            return AppendResult(info.error, error_message="the log refused the batch")
        next_offset = base
        for header in headers:  # only what was written enters the producer state
            first, next_offset = next_offset, next_offset + header.last_offset_delta + 1
            self.producers.record(header.producer_id, header.producer_epoch, CachedBatch(
                header.base_sequence, last_sequence(header), first, next_offset - 1,
                header.max_timestamp))
        self.maybe_increment_hw()
        return AppendResult(ErrorCode.none, base, next_offset - 1, self.log.log_start_offset)

    # -- follower side ----------------------------------------------------------------------
    def append_as_follower(self, data: bytes, leader_hw: int) -> None:
        """Append batches copied from the leader (offsets and epochs already stamped)."""
        if not data:  # an idle partition in a follower fetch: only the hw may move
            self._set_hw(max(0, min(leader_hw, self.log.log_end_offset)))
            return
        error, positioned = positioned_headers(data)
        if error != ErrorCode.none:
            raise ValueError(f"leader sent a malformed batch: {error.name}")
        if positioned:
            info = self.log.append(data)
            error = getattr(info, "error", ErrorCode.none)
            if error != ErrorCode.none:
                raise ValueError(f"the log refused the leader's batches: {error.name}")
            for _, h in positioned:
                if h.producer_id >= 0:
                    self.producers.record(
                        h.producer_id, h.producer_epoch,
                        CachedBatch(h.base_sequence, last_sequence(h), h.base_offset, h.last_offset,
                                    h.max_timestamp),
                    )
        self._set_hw(max(0, min(leader_hw, self.log.log_end_offset)))

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
    ) -> FetchResult:
        error = self.check_leader_epoch(current_leader_epoch)
        if error == ErrorCode.none and not self.is_leader:
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
        max_offset = leo if is_follower or self.config.on.M4 else self.high_watermark
        records = self._read(fetch_offset, max_bytes, max_offset, min_one, zero_copy) if (
            fetch_offset < max_offset) else b""
        # As in Kafka (and model/): read first, answer with the hw as it was, then move the
        # follower's state; so a follower learns an hw it helped raise one fetch later.
        result = FetchResult(ErrorCode.none, self.high_watermark, start, leo, records)
        if is_follower:
            self._update_follower(replica_id, fetch_offset)
        return result

    def _read(self, fetch_offset, max_bytes, max_offset, min_one, zero_copy):
        if zero_copy and hasattr(self.log, "read_slice"):
            fetched = self.log.read_slice(fetch_offset, max_bytes, max_offset, min_one)
            if fetched.size > 0:
                return SliceRecords(fetched)
            fetched.close()
            return b""
        return self.log.read(fetch_offset, max_bytes, max_offset, min_one)

    def readable_bytes(self, fetch_offset: int, replica_id: int) -> int:
        """Bytes a fetch at fetch_offset could return now (for DelayedFetch's min_bytes)."""
        end = self.log.log_end_offset if replica_id >= 0 else self.high_watermark
        return self.log.bytes_between(fetch_offset, end) if fetch_offset < end else 0

    def _update_follower(self, replica_id: int, fetch_offset: int) -> None:
        now, leader_leo = self.clock(), self.log.log_end_offset
        state = self.followers[replica_id]
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

    def maybe_increment_hw(self) -> bool:
        """Raise hw to the minimum leo over the maximal ISR; True if it moved."""
        if not self.is_leader:
            return False
        minimum = self.config.minimum_isr(len(self.replicas))
        on = self.config.on
        if self.config.hw_requires_min_isr and len(self.isr) < minimum and not on.M3:
            return False
        members = {self.broker_id} if on.M1 else self.maximal_isr | {self.broker_id}
        candidate = min(self.replica_leo(r) for r in members)
        if candidate > self.high_watermark:
            self._set_hw(candidate)
            return True
        return False

    def _set_hw(self, hw: int) -> None:
        if hw == self.high_watermark:
            return  # every follower fetch answer sets it; most leave it where it was
        self.high_watermark = hw
        remember = getattr(self.log, "set_high_watermark", None)
        if remember is not None:
            remember(hw)  # checkpointed by the log on flush / close

    def maybe_expand_isr(self, replica_id: int) -> None:
        if self.pending_isr is not None or replica_id in self.isr:
            return
        leo = self.replica_leo(replica_id)
        epoch_start = self.log.epochs.start_offset_of(self.leader_epoch)
        below_hw = leo < self.high_watermark and not self.config.on.M15
        if epoch_start is None or below_hw or leo < epoch_start:
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
            state.log_end_offset = -1
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


def keyless_records_refused(topic: str, index: int, keyless: list[int]) -> AppendResult:
    """The answer Kafka gives for records without a key on a compacted topic (KIP-467): one
    record error per record, and a partition message showing the first three of them."""
    why = f"Compacted topic cannot accept message without key in topic partition {topic}-{index}"
    errors = tuple((i, why) for i in keyless)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return AppendResult(ErrorCode.invalid_record, record_errors=errors, error_message=(
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"))
