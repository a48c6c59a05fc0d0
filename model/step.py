"""The model's single entry point: step(state, event) -> (state, effects).

Pure and deterministic: no threads, sockets, files or wall clock. Each handler takes the state
and one event and returns the next state and the effects (responses with Kafka error codes,
purgatory completions and expirations). Expected failures are error codes; impossible events
(unknown broker or partition, a broker without a replica of the partition) raise ValueError.

Semantics follow docs/semantics.md; MODEL.md lists every simplification.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkaref.model import effects as eff
from kafkaref.model import events as ev
from kafkaref.model.config import ClusterConfig
from kafkaref.model.helpers import (
    UNDEFINED,
    assign_epoch,
    batch_size,
    end_offset_for_epoch,
    follower_truncation,
    high_watermark,
    trim_epoch_cache,
    trim_epoch_cache_start,
)
from kafkaref.model.values import (
    UNKNOWN_OFFSET,
    Delayed,
    DelayedDeleteRecords,
    DelayedFetch,
    DelayedProduce,
    Entry,
    ModelState,
    PartitionState,
    Replica,
)

Effects = tuple[eff.Effect, ...]
NONE = ErrorCode.none


def step(state: ModelState, event: ev.Event) -> tuple[ModelState, Effects]:
    """Apply one event. Returns the next state and the effects, in the order they happen."""
    try:
        handler = _HANDLERS[type(event)]
    except KeyError:
        raise TypeError(f"not a model event: {event!r}") from None
    return handler(state, event)


# ---------------------------------------------------------------------------------------------
# Small rebuilders: replace one replica / one partition, sharing everything else.


def _with_replica(part: PartitionState, broker: int, replica: Replica) -> PartitionState:
    replicas = part.replicas
    return PartitionState(
        replicas[:broker] + (replica,) + replicas[broker + 1 :], part.control, part.next_record_id
    )


def _with_partition(state: ModelState, p: int, part: PartitionState, purgatory=None) -> ModelState:
    parts = state.partitions
    return ModelState(
        state.config,
        state.now_ms,
        state.alive,
        parts[:p] + (part,) + parts[p + 1 :],
        state.purgatory if purgatory is None else purgatory,
    )


def _check_broker(state: ModelState, broker: int) -> None:
    """A broker id outside the cluster is not addressable: the caller's error, not Kafka's."""
    if not 0 <= broker < state.config.brokers:
        raise ValueError(f"no broker {broker}")


_KEEP: object = object()


def _replace(
    r: Replica, *, log=_KEEP, hw=_KEEP, flushed=_KEEP, epoch_cache=_KEEP, leader=_KEEP,
    leader_epoch=_KEEP, partition_epoch=_KEEP, isr=_KEEP, pending_isr=_KEEP,
    follower_offsets=_KEEP, caught_up_ms=_KEEP, synced_epoch=_KEEP, last_fetch=_KEEP,
    log_start=_KEEP, follower_log_starts=_KEEP,
) -> Replica:
    """attrs.evolve without its per-call introspection (step() is on the hot path)."""
    return Replica(
        r.log if log is _KEEP else log,
        r.hw if hw is _KEEP else hw,
        r.flushed if flushed is _KEEP else flushed,
        r.epoch_cache if epoch_cache is _KEEP else epoch_cache,
        r.leader if leader is _KEEP else leader,
        r.leader_epoch if leader_epoch is _KEEP else leader_epoch,
        r.partition_epoch if partition_epoch is _KEEP else partition_epoch,
        r.isr if isr is _KEEP else isr,
        r.pending_isr if pending_isr is _KEEP else pending_isr,
        r.follower_offsets if follower_offsets is _KEEP else follower_offsets,
        r.caught_up_ms if caught_up_ms is _KEEP else caught_up_ms,
        r.synced_epoch if synced_epoch is _KEEP else synced_epoch,
        r.last_fetch if last_fetch is _KEEP else last_fetch,
        r.log_start if log_start is _KEEP else log_start,
        r.follower_log_starts if follower_log_starts is _KEEP else follower_log_starts,
    )


def _maybe_flush(config: ClusterConfig, replica: Replica) -> Replica:
    every = config.flush_interval_messages
    if every is not None and replica.leo - replica.flushed >= every:
        return _replace(replica, flushed=replica.leo)
    return replica


def _truncate(replica: Replica, length: int) -> Replica:
    if length >= replica.leo:
        # Kafka's truncateTo: no record goes, but the epoch cache is always truncated to the
        # leo (an epoch this replica started as leader without writing conflicts with the
        # leader's log)
        cache = trim_epoch_cache(replica.epoch_cache, replica.leo)
        return replica if cache == replica.epoch_cache else _replace(replica, epoch_cache=cache)
    # below the log start (a follower past a shorter unclean leader's end): the log start comes
    # down to the cut, as Kafka's UnifiedLog.truncateTo lowers it (min(target, log start)), so
    # every replica keeps log start <= flushed, hw and leo
    return _replace(
        replica,
        log=replica.log.truncate(length),
        hw=min(replica.hw, length),
        flushed=min(replica.flushed, length),
        epoch_cache=trim_epoch_cache(replica.epoch_cache, length),
        log_start=min(replica.log_start, length),
    )


def _recover(replica: Replica) -> Replica:
    """What an unclean shutdown leaves: the flushed prefix, and the epoch cache truncated to its
    end (Kafka's log loading always runs truncateFromEnd(recovered leo), so an epoch that had
    no records yet is forgotten even when no record was lost). A flushed prefix ending below
    the log start (kept on disk at once) starts the log again, empty, at the log start
    (Kafka's LogLoader)."""
    if replica.flushed < replica.log_start:
        return _start_at(replica, replica.log.truncate(replica.log_start))
    replica = _truncate(replica, replica.flushed)
    cache = trim_epoch_cache(replica.epoch_cache, replica.leo)
    return replica if cache == replica.epoch_cache else _replace(replica, epoch_cache=cache)


def _start_at(replica: Replica, log) -> Replica:
    """The log dropped and started again, empty, at len(log) (log start = leo = hw = flushed,
    no epochs: Kafka's truncateFullyAndStartAt). What it held below is kept in `log` but never
    read again (below the log start)."""
    end = len(log)
    return _replace(replica, log=log, hw=end, flushed=end, epoch_cache=(), log_start=end)


def _move_log_start(replica: Replica, offset: int) -> Replica:
    """The log start moves up; the flushed point with it (what lies below the log start is
    never recovered: Kafka's updateLogStartOffset raises the recovery point)."""
    if offset <= replica.log_start:
        return replica
    return _replace(replica, log_start=offset, flushed=max(replica.flushed, offset),
                    epoch_cache=trim_epoch_cache_start(replica.epoch_cache, offset))


def _low_watermark(state: ModelState, p: int, broker: int, replica: Replica) -> int:
    """The smallest log start of a leader and its followers on live brokers (one that has not
    fetched in this epoch counts as -1): Kafka's lowWatermarkIfLeader."""
    low = replica.log_start
    for follower in state.config.assignment(p):
        if follower != broker and state.alive[follower]:
            low = min(low, replica.follower_log_start(follower))
    return low


# ---------------------------------------------------------------------------------------------
# High watermark and purgatory.


def _leader_hw(config: ClusterConfig, broker: int, replica: Replica) -> Replica:
    """Recompute a leader's hw from its (maximal) ISR; KIP-966: frozen below min ISR."""
    rules = config.rules
    members = rules.hw_members(replica)
    gated = rules.hw_gated(replica, config.min_isr)
    offsets = replica.follower_offsets
    follower_ends = [offsets[f] for f in members if f != broker]
    hw = high_watermark(replica.hw, len(replica.log), follower_ends, gated)
    return replica if hw == replica.hw else replica.raise_hw(hw)


def _batch_at(log, start: int, end: int) -> tuple[int, int]:
    """The batch starting at `start` (cut at `end`): (its end offset, its size in bytes)."""
    stop = start
    lengths = []
    while stop < end and log[stop].base == start:
        lengths.append(len(log[stop].value))
        stop += 1
    return stop, batch_size(lengths)


def _read(replica: Replica, offset: int, end: int, max_bytes: int) -> tuple[int, tuple[Entry, ...]]:
    """Whole batches from the one holding `offset` up to `end`: at least one batch, then more
    while the total stays within max_bytes (batch bytes as Kafka counts them: helpers.batch_size).
    Returns (first offset, entries)."""
    if offset >= end:
        return offset, ()
    first, stop, _ = _read_extent(replica.log, offset, end, max_bytes)
    return first, replica.log.slice(first, stop)


def _read_bytes(replica: Replica, offset: int, end: int, max_bytes: int) -> int:
    """Bytes _read returns (Kafka's first min_bytes test is on what it read)."""
    return 0 if offset >= end else _read_extent(replica.log, offset, end, max_bytes)[2]


def _read_extent(log, offset: int, end: int, max_bytes: int) -> tuple[int, int, int]:
    """(first offset, stop offset, bytes) of a read at offset below end: whole batches from
    the one holding the offset, the first one always, then as many as fit in max_bytes."""
    first = log[offset].base
    stop, total = first, 0
    while stop < end:
        batch_end, size = _batch_at(log, stop, end)
        if stop > first and total + size > max_bytes:
            break
        total += size
        stop = batch_end
    return first, stop, total


def _available_bytes(replica: Replica, offset: int, end: int, max_bytes: int, enough: int) -> int:
    """Kafka's DelayedFetch count: bytes of the whole batches from the one holding `offset` up
    to `end`, capped at max_bytes (counting no further than `enough`)."""
    if offset >= end:
        return 0
    log = replica.log
    stop, total = log[offset].base, 0
    while stop < end and total < enough:
        stop, size = _batch_at(log, stop, end)
        total += size
    return min(total, max_bytes)


def _enough_to_answer(replica: Replica, offset: int, end: int, min_bytes: int,
                      max_bytes: int) -> bool:
    """A parked fetch completes when min(available bytes, max_bytes) >= min_bytes."""
    return _available_bytes(replica, offset, end, max_bytes, min_bytes) >= min_bytes


def _consumer_end(config: ClusterConfig, replica: Replica) -> int:
    return config.rules.consumer_end(replica)


def _fetch_answer(config, replica, request_id, offset, max_bytes, via) -> eff.FetchResponse:
    # a parked fetch below a log start moved meanwhile, or above the log end of a follower
    # that truncated meanwhile
    if not replica.log_start <= offset <= replica.leo:
        return eff.FetchResponse(request_id, ErrorCode.offset_out_of_range, via=via)
    first, records = _read(replica, offset, _consumer_end(config, replica), max_bytes)
    return eff.FetchResponse(request_id, NONE, replica.hw, first, records, via,
                             log_start_offset=replica.log_start)


def _settle(state: ModelState, op: Delayed, replica: Replica | None,
            broker: int) -> eff.Effect | None:
    """The answer for a parked operation if it can complete now, else None."""
    config = state.config
    lost = replica is None or replica.leader != broker
    if isinstance(op, DelayedDeleteRecords):
        if lost:
            return eff.DeleteRecordsResponse(op.request_id, ErrorCode.not_leader_or_follower,
                                             via=eff.COMPLETED)
        low = _low_watermark(state, op.partition, broker, replica)
        if low < op.required_offset:
            return None
        return eff.DeleteRecordsResponse(op.request_id, NONE, low, eff.COMPLETED)
    if isinstance(op, DelayedProduce):
        if lost:
            return eff.ProduceResponse(op.request_id, ErrorCode.not_leader_or_follower,
                                       op.base_offset, op.record_ids, eff.COMPLETED)
        if replica.hw >= op.required_offset:
            error = NONE if len(replica.isr) >= config.min_isr else ErrorCode.not_enough_replicas_after_append
            return eff.ProduceResponse(op.request_id, error, op.base_offset, op.record_ids,
                                       eff.COMPLETED)
        return None
    error = _parked_fetch_error(op, replica, broker)
    if error != NONE:
        return eff.FetchResponse(op.request_id, error, via=eff.COMPLETED)
    end = _consumer_end(config, replica)
    if op.offset > replica.leo or _enough_to_answer(replica, op.offset, end, op.min_bytes, op.max_bytes):
        return _fetch_answer(config, replica, op.request_id, op.offset, op.max_bytes, eff.COMPLETED)
    return None


def parked_answer(state: ModelState, op: Delayed) -> eff.Effect | None:
    """The answer a parked operation would get if its broker checked it now; None while it
    must wait (for the checks over the model: what a raised hw must have woken)."""
    return _settle(state, op, state.partitions[op.partition].replicas[op.broker], op.broker)


def _parked_fetch_error(op: DelayedFetch, replica: Replica | None, broker: int) -> ErrorCode:
    """A parked fetch is answered by reading again, with the same checks in the same order as
    when it arrived (Kafka's DelayedFetch.onComplete): the epoch it carries, then leadership
    (unless a follower may answer it)."""
    if replica is None:
        return ErrorCode.not_leader_or_follower
    if op.current_leader_epoch >= 0 and op.current_leader_epoch != replica.leader_epoch:
        return (ErrorCode.fenced_leader_epoch if op.current_leader_epoch < replica.leader_epoch
                else ErrorCode.unknown_leader_epoch)
    if replica.leader != broker and not op.from_follower_allowed:
        return ErrorCode.not_leader_or_follower
    return NONE


def _try_complete(
    state: ModelState, purgatory: tuple[Delayed, ...], broker: int, p: int,
    replica: Replica | None, kinds: tuple[type, ...] = (DelayedProduce, DelayedFetch,
                                                        DelayedDeleteRecords),
) -> tuple[tuple[Delayed, ...], list[eff.Effect]]:
    """Check every operation of `kinds` watched on (broker, partition): the trigger after an hw
    change or a leadership change (every kind), or a follower's fetch (deletions)."""
    if not purgatory:
        return purgatory, []
    keep: list[Delayed] = []
    effects: list[eff.Effect] = []
    for op in purgatory:
        if op.broker == broker and op.partition == p and isinstance(op, kinds):
            answer = _settle(state, op, replica, broker)
            if answer is not None:
                effects.append(answer)
                continue
        keep.append(op)
    return (tuple(keep) if effects else purgatory), effects


def _leader_progress(state: ModelState, p: int, broker: int, part: PartitionState, replica: Replica,
                     effects: list[eff.Effect]) -> ModelState:
    """Store a leader's replica after its log or followers moved; if its hw rose, complete what
    waits on it."""
    before = replica.hw
    replica = _leader_hw(state.config, broker, replica)
    part = _with_replica(part, broker, replica)
    purgatory = state.purgatory
    if replica.hw != before:
        purgatory, done = _try_complete(state, purgatory, broker, p, replica,
                                        (DelayedProduce, DelayedFetch))
        effects.extend(done)
    return _with_partition(state, p, part, purgatory)


def _complete_deletions(state: ModelState, p: int, broker: int,
                        effects: list[eff.Effect]) -> ModelState:
    """A follower's fetch (its log start) or a follower's crash (it no longer counts) may have
    raised the low watermark: complete the deletions it reaches."""
    replica = state.partitions[p].replicas[broker]
    purgatory, done = _try_complete(state, state.purgatory, broker, p, replica,
                                    (DelayedDeleteRecords,))
    if not done:
        return state
    effects.extend(done)
    return ModelState(state.config, state.now_ms, state.alive, state.partitions, purgatory)


# ---------------------------------------------------------------------------------------------
# Client requests.


def _produce(state: ModelState, event: ev.Produce) -> tuple[ModelState, Effects]:
    config, p, broker = state.config, event.partition, event.broker
    _check_broker(state, broker)
    silent = event.acks == ev.ACKS_NONE  # acks=0: the client expects no answer at all

    def fail(error: ErrorCode) -> tuple[ModelState, Effects]:
        return state, () if silent else (eff.ProduceResponse(event.request_id, error),)

    # Kafka's order: the topic is known, the records hold exactly one batch (KafkaApis), the
    # acks are valid, this broker leads, the ISR is large enough (ReplicaManager, Partition)
    if not state.alive[broker]:
        return state, () if silent else (eff.Disconnected(event.request_id),)
    if not 0 <= p < config.partitions:
        return fail(ErrorCode.unknown_topic_or_partition)
    if not event.values or event.more_batches:
        return fail(ErrorCode.invalid_record)
    if event.acks not in (ev.ACKS_NONE, ev.ACKS_LEADER, ev.ACKS_ALL):
        return fail(ErrorCode.invalid_required_acks)
    replica = state.partitions[p].replicas[broker]
    if replica is None or replica.leader != broker:
        return fail(ErrorCode.not_leader_or_follower)
    if event.acks == ev.ACKS_ALL and len(replica.isr) < config.min_isr:
        return fail(ErrorCode.not_enough_replicas)  # checked before the append: nothing written

    part = state.partitions[p]
    base = replica.leo
    epoch = replica.leader_epoch
    first_id = part.next_record_id
    entries = tuple(Entry(first_id + i, epoch, value, base) for i, value in enumerate(event.values))
    record_ids = tuple(entry.id for entry in entries)
    replica = _maybe_flush(config, _replace(replica, log=replica.log.append(entries)))
    part = PartitionState(part.replicas, part.control, first_id + len(entries))

    effects: list[eff.Effect] = []
    state = _leader_progress(state, p, broker, part, replica, effects)
    replica = state.partitions[p].replicas[broker]
    if event.acks == ev.ACKS_LEADER:
        effects.append(eff.ProduceResponse(event.request_id, NONE, base, record_ids))
    elif event.acks == ev.ACKS_ALL:
        op = DelayedProduce(event.request_id, broker, p, base, base + len(entries), record_ids,
                            state.now_ms + event.timeout_ms)
        answer = _settle(state, op, replica, broker)
        if answer is not None:
            effects.append(eff.ProduceResponse(op.request_id, answer.error, base, record_ids))
        elif event.timeout_ms <= 0:
            effects.append(eff.ProduceResponse(op.request_id, ErrorCode.request_timed_out, base,
                                               record_ids, eff.EXPIRED))
        else:
            state = ModelState(state.config, state.now_ms, state.alive, state.partitions,
                               state.purgatory + (op,))
    return state, tuple(effects)


def _leader_for_request(state: ModelState, p: int, broker: int, current_leader_epoch: int,
                        leader_only: bool = True) -> tuple[Replica | None, ErrorCode]:
    """The replica if `broker` leads p (or, not leader_only, hosts it) in the epoch the client
    expects. Kafka's order (Partition.getLocalLog): the partition is known, is hosted here, the
    epoch matches (KIP-320), then this replica leads if the request requires the leader."""
    if not 0 <= p < state.config.partitions:
        return None, ErrorCode.unknown_topic_or_partition
    replica = state.partitions[p].replicas[broker]
    if replica is None:
        return None, ErrorCode.not_leader_or_follower
    if current_leader_epoch >= 0:
        if current_leader_epoch < replica.leader_epoch:
            return None, ErrorCode.fenced_leader_epoch
        if current_leader_epoch > replica.leader_epoch:
            return None, ErrorCode.unknown_leader_epoch
    if leader_only and replica.leader != broker:
        return None, ErrorCode.not_leader_or_follower
    return replica, NONE


def _fetch(state: ModelState, event: ev.Fetch) -> tuple[ModelState, Effects]:
    _check_broker(state, event.broker)
    if not state.alive[event.broker]:
        return state, (eff.Disconnected(event.request_id),)
    config = state.config
    # KIP-392: a consumer whose request carries client metadata may read from a follower, up
    # to the follower's hw (_consumer_end); the follower's epoch check is the leader's
    replica, error = _leader_for_request(state, event.partition, event.broker,
                                         event.current_leader_epoch,
                                         leader_only=not event.from_follower_allowed)
    if replica is None:
        return state, (eff.FetchResponse(event.request_id, error),)
    if not replica.log_start <= event.offset <= replica.leo:
        # a failed partition says -1 for its hw and log start, as Kafka's answers do (its
        # ReplicaManager.readFromLocalLog; seen on 4.3.1 by the differential walk)
        return state, (eff.FetchResponse(event.request_id, ErrorCode.offset_out_of_range),)
    end = _consumer_end(config, replica)
    # Kafka answers at once when max_wait <= 0, when what it read reaches min_bytes, or when the
    # purgatory's first try (tryCompleteElseWatch) finds enough available
    if event.max_wait_ms <= 0 or _read_bytes(replica, event.offset, end, event.max_bytes) >= (
            event.min_bytes) or _enough_to_answer(replica, event.offset, end, event.min_bytes,
                                                  event.max_bytes):
        return state, (_fetch_answer(config, replica, event.request_id, event.offset,
                                     event.max_bytes, eff.IMMEDIATE),)
    op = DelayedFetch(event.request_id, event.broker, event.partition, event.offset,
                      event.min_bytes, event.max_bytes, state.now_ms + event.max_wait_ms,
                      event.current_leader_epoch, event.from_follower_allowed)
    return ModelState(config, state.now_ms, state.alive, state.partitions,
                      state.purgatory + (op,)), ()


RECORD_TIMESTAMP = 0  # the timestamp every model record counts as having (ListOffsets by time)


def _list_offsets(state: ModelState, event: ev.ListOffsets) -> tuple[ModelState, Effects]:
    """A consumer's ListOffsets (Kafka's Partition.fetchOffsetForTimestamp with its isolation
    level): answered below the hw, and OFFSET_NOT_AVAILABLE where the answer would lie at or
    above it while a new leader's hw is still below the start of its epoch (KIP-207)."""
    _check_broker(state, event.broker)
    if not state.alive[event.broker]:
        return state, (eff.Disconnected(event.request_id),)
    replica, error = _leader_for_request(state, event.partition, event.broker, -1)
    if replica is None:
        return state, (eff.ListOffsetsResponse(event.request_id, error),)
    if event.timestamp == ev.EARLIEST:
        return state, (eff.ListOffsetsResponse(event.request_id, NONE, replica.log_start),)
    lagging = _hw_below_epoch_start(replica)
    if event.timestamp == ev.LATEST:
        # read_uncommitted consumers see up to the hw, so "latest" is the hw.
        if lagging:
            return state, (eff.ListOffsetsResponse(event.request_id,
                                                   ErrorCode.offset_not_available),)
        return state, (eff.ListOffsetsResponse(event.request_id, NONE, replica.hw),)
    # Any other timestamp is a lookup by time (KIP-79): the first record of the log at or
    # above the log start whose timestamp is at or after it, answered if it lies below the hw,
    # else offset -1 (no error). The model's records carry no timestamps: every one counts as
    # stamped 0 (what the impl's clients here send).
    stamped = event.timestamp <= RECORD_TIMESTAMP and replica.log_start < replica.leo
    if not stamped:
        return state, (eff.ListOffsetsResponse(event.request_id, NONE),)
    if replica.log_start >= replica.hw:
        error = ErrorCode.offset_not_available if lagging else NONE
        return state, (eff.ListOffsetsResponse(event.request_id, error),)
    return state, (eff.ListOffsetsResponse(event.request_id, NONE, replica.log_start,
                                           RECORD_TIMESTAMP),)


def _hw_below_epoch_start(leader: Replica) -> bool:
    """A leader whose hw is still below the offset its epoch started at (its followers have
    not fetched in the epoch yet): the offsets in between are not known to be committed."""
    start = next((s for epoch, s in leader.epoch_cache if epoch == leader.leader_epoch), None)
    return start is not None and start > leader.hw


def _delete_records(state: ModelState, event: ev.DeleteRecords) -> tuple[ModelState, Effects]:
    """Kafka's Partition.deleteRecordsOnLeader and ReplicaManager.deleteRecords: the leader
    moves its log start up to the offset (the hw for HIGH_WATERMARK; beyond the hw is
    OFFSET_OUT_OF_RANGE); answered at once if the low watermark is there already, else parked
    until followers' fetches carry it (or they stop counting), the leadership is lost
    (NOT_LEADER_OR_FOLLOWER) or the timeout passes (REQUEST_TIMED_OUT)."""
    _check_broker(state, event.broker)
    if not state.alive[event.broker]:
        return state, (eff.Disconnected(event.request_id),)
    p, broker = event.partition, event.broker
    replica, error = _leader_for_request(state, p, broker, -1)
    if replica is None:
        return state, (eff.DeleteRecordsResponse(event.request_id, error),)
    wanted = replica.hw if event.offset == ev.HIGH_WATERMARK else event.offset
    if not 0 <= wanted <= replica.hw:
        return state, (eff.DeleteRecordsResponse(event.request_id,
                                                 ErrorCode.offset_out_of_range),)
    replica = _move_log_start(replica, wanted)
    state = _with_partition(state, p, _with_replica(state.partitions[p], broker, replica))
    low = _low_watermark(state, p, broker, replica)
    if low >= wanted:
        return state, (eff.DeleteRecordsResponse(event.request_id, NONE, low),)
    if event.timeout_ms <= 0:  # Kafka's timer runs an already expired operation at once
        return state, (eff.DeleteRecordsResponse(event.request_id, ErrorCode.request_timed_out,
                                                 low, eff.EXPIRED),)
    op = DelayedDeleteRecords(event.request_id, broker, p, wanted, low,
                              state.now_ms + event.timeout_ms)
    return ModelState(state.config, state.now_ms, state.alive, state.partitions,
                      state.purgatory + (op,)), ()


def _retention(state: ModelState, event: ev.Retention) -> tuple[ModelState, Effects]:
    """A retention run moved this replica's log start (events.Retention): up to the offset when
    it lies above the log start and at or below the hw, else nothing. On a leader the low
    watermark may then reach waiting deletions (as after a follower's fetch)."""
    _check_broker(state, event.broker)
    p, broker = event.partition, event.broker
    if not 0 <= p < state.config.partitions:  # a broker's own task names only its partitions
        raise ValueError(f"no partition {p}")
    replica = state.partitions[p].replicas[broker] if state.alive[broker] else None
    if replica is None or not replica.log_start < event.offset <= replica.hw:
        return state, ()
    replica = _move_log_start(replica, event.offset)
    state = _with_partition(state, p, _with_replica(state.partitions[p], broker, replica))
    effects: list[eff.Effect] = []
    state = _complete_deletions(state, p, broker, effects)
    return state, tuple(effects)


# ---------------------------------------------------------------------------------------------
# Replication.


def _replica_fetch(state: ModelState, event: ev.ReplicaFetch) -> tuple[ModelState, Effects]:
    """One round trip; then, if it raised the follower's hw, the consumer fetches parked on the
    follower (KIP-392) are checked again, as Kafka's fetcher completes the delayed fetches of
    the partitions whose hw it raised (ReplicaFetcherThread: completeDelayedFetchRequests)."""
    before = _hosted_hw(state, event.partition, event.follower)
    state, effects = _replica_round_trip(state, event)
    if _hosted_hw(state, event.partition, event.follower) <= before:
        return state, effects
    replica = state.partitions[event.partition].replicas[event.follower]
    purgatory, done = _try_complete(state, state.purgatory, event.follower, event.partition,
                                    replica, (DelayedFetch,))
    if not done:
        return state, effects
    state = ModelState(state.config, state.now_ms, state.alive, state.partitions, purgatory)
    return state, (*effects, *done)


def _hosted_hw(state: ModelState, p: int, broker: int) -> int:
    """The hw of broker's replica of p; -1 if p is unknown or not hosted there."""
    if not 0 <= p < state.config.partitions or not 0 <= broker < state.config.brokers:
        return -1
    replica = state.partitions[p].replicas[broker]
    return -1 if replica is None else replica.hw


def _replica_round_trip(state: ModelState, event: ev.ReplicaFetch) -> tuple[ModelState, Effects]:
    config, p = state.config, event.partition
    leader_id, follower_id = event.leader, event.follower
    _check_broker(state, leader_id)
    _check_broker(state, follower_id)
    if not state.alive[follower_id]:
        return state, ()  # a dead broker sends nothing

    def result(error: ErrorCode, **more) -> eff.ReplicaFetchResult:
        return eff.ReplicaFetchResult(leader_id, follower_id, p, error, **more)

    if not state.alive[leader_id]:
        return state, (result(ErrorCode.network_exception, applied=False),)
    # the leader's checks, in Kafka's order: partition, epoch, leadership, a known follower
    leader, error = _leader_for_request(state, p, leader_id, event.current_leader_epoch)
    if leader is None:
        return state, (result(error, applied=False),)
    follower = state.partitions[p].replicas[follower_id]
    if follower is None or follower_id == leader_id:
        return state, (result(ErrorCode.not_leader_or_follower, applied=False),)

    # The follower applies the response only if it is still in the state it fetched from.
    current = (
        not event.response_lost
        and follower.leader == leader_id
        and follower.leader_epoch == event.current_leader_epoch
        and follower.leo == event.fetch_offset
        and follower.latest_epoch == event.last_fetched_epoch
    )
    part = state.partitions[p]

    if event.last_fetched_epoch != UNDEFINED:
        epoch, end = end_offset_for_epoch(leader.epoch_cache, leader.leo, event.last_fetched_epoch)
        if epoch < event.last_fetched_epoch or end < event.fetch_offset:
            # Diverging epoch: no records, no update of the leader's view of the follower.
            if not current:
                return state, (result(NONE, diverging=(epoch, end), applied=False),)
            offset = follower_truncation(epoch, end, follower.epoch_cache, follower.leo,
                                         min(follower.hw, follower.leo))
            offset = max(follower.log_start, offset)  # never below the log start (apply.py)
            follower = _truncate(follower, offset)
            part = _with_replica(part, follower_id, follower)
            return _with_partition(state, p, part), (
                result(NONE, diverging=(epoch, end), truncated_to=offset),
            )

    if not leader.log_start <= event.fetch_offset <= leader.leo:
        if current and follower.leo > leader.leo:
            follower = _truncate(follower, leader.leo)
            part = _with_replica(part, follower_id, follower)
            return _with_partition(state, p, part), (
                result(ErrorCode.offset_out_of_range, truncated_to=leader.leo),
            )
        if current and follower.leo < leader.log_start:
            # below the leader's log start (its ListOffsets EARLIEST says where): start again,
            # empty, there (Kafka's fetcher: truncateFullyAndStartAt)
            follower = _start_at(follower, leader.log.truncate(leader.log_start))
            part = _with_replica(part, follower_id, follower)
            return _with_partition(state, p, part), (
                result(ErrorCode.offset_out_of_range, truncated_to=leader.log_start),
            )
        return state, (result(ErrorCode.offset_out_of_range, applied=current),)

    # Leader side. The response carries the hw from before this fetch's update (Kafka reads the
    # log first and then updates the follower's state), so followers learn the hw one fetch late.
    response_hw = leader.hw
    stop = _replica_fetch_stop(leader, event.fetch_offset, event.max_bytes)
    records = leader.log.slice(event.fetch_offset, stop)
    leader = _follower_fetched(state, leader, leader_id, follower_id, event.fetch_offset,
                               follower.log_start)
    effects: list[eff.Effect] = []
    state = _leader_progress(state, p, leader_id, part, leader, effects)
    state = _complete_deletions(state, p, leader_id, effects)
    part = state.partitions[p]

    # Follower side.
    if not current:
        effects.insert(0, result(NONE, applied=False))
        return state, tuple(effects)
    follower = _follower_append(config, follower, records, response_hw, event.current_leader_epoch)
    if follower.log_start < leader.log_start <= follower.hw:  # the leader's log start, once
        follower = _move_log_start(follower, leader.log_start)  # the hw passed it
    state = _with_partition(state, p, _with_replica(part, follower_id, follower))
    effects.insert(0, result(NONE, appended=len(records)))
    return state, tuple(effects)


def _replica_fetch_stop(leader: Replica, fetch_offset: int, max_bytes: int) -> int:
    """Where a follower's fetch stops: whole batches up to the leader's leo, at least one, then
    more within max_bytes (fetch offsets of followers are batch boundaries)."""
    if fetch_offset >= leader.leo:
        return fetch_offset
    first, records = _read(leader, fetch_offset, leader.leo, max_bytes)
    return first + len(records)


def _follower_fetched(state: ModelState, leader: Replica, leader_id: int, follower_id: int,
                      fetch_offset: int, log_start: int) -> Replica:
    """The leader records the follower's fetch offset and catch-up time, and proposes an ISR
    expansion when the follower has reached the hw and the start of the leader's epoch.

    Caught up (Kafka's Replica.updateFetchState): a fetch at the leader's leo makes the follower
    caught up now; a fetch at or past where the leader's leo was at the follower's previous
    fetch makes it caught up as of that previous fetch."""
    now = state.now_ms
    offsets = leader.follower_offsets
    offsets = offsets[:follower_id] + (fetch_offset,) + offsets[follower_id + 1 :]
    last = leader.last_fetch or ((UNKNOWN_OFFSET, 0),) * len(offsets)
    previous_leo, previous_ms = last[follower_id]
    caught_up = leader.caught_up_ms
    since = None
    if fetch_offset >= leader.leo:
        since = now
    elif 0 <= previous_leo <= fetch_offset:
        since = previous_ms
    if since is not None and since > caught_up[follower_id]:
        caught_up = caught_up[:follower_id] + (since,) + caught_up[follower_id + 1 :]
    last = last[:follower_id] + ((leader.leo, now),) + last[follower_id + 1 :]
    pending = leader.pending_isr
    if pending is None and follower_id not in leader.isr:
        epoch_start = leader.epoch_cache[-1][1] if leader.epoch_cache else 0
        if fetch_offset >= leader.hw and fetch_offset >= epoch_start:
            pending = leader.isr | {follower_id}
    starts = leader.follower_log_starts or (UNKNOWN_OFFSET,) * len(offsets)
    starts = starts[:follower_id] + (log_start,) + starts[follower_id + 1 :]
    return _replace(leader, follower_offsets=offsets, caught_up_ms=caught_up, pending_isr=pending,
                    last_fetch=last, follower_log_starts=starts)


def _follower_append(config: ClusterConfig, follower: Replica, records: tuple[Entry, ...],
                     leader_hw: int, epoch: int) -> Replica:
    cache = follower.epoch_cache
    latest = cache[-1][0] if cache else UNDEFINED
    offset = follower.leo
    for entry in records:
        if entry.epoch != latest:  # Kafka assigns per batch; a no-op unless the epoch changes
            cache = assign_epoch(cache, entry.epoch, offset)
            latest = entry.epoch
        offset += 1
    log = follower.log.append(records)
    # Kafka's updateHighWatermark keeps a follower's hw within [its log start, its leo]: a new
    # leader may still send an hw below the log start this follower had as the old leader
    hw = min(max(leader_hw, follower.log_start), len(log))
    follower = _replace(follower, log=log, epoch_cache=cache, hw=hw, synced_epoch=epoch)
    return _maybe_flush(config, follower)


# ---------------------------------------------------------------------------------------------
# Time, ISR changes, controller.


def _tick(state: ModelState, event: ev.Tick) -> tuple[ModelState, Effects]:
    state = state.advance_clock(event.ms)
    now = state.now_ms
    effects: list[eff.Effect] = []
    purgatory = state.purgatory
    if purgatory:
        keep = []
        for op in purgatory:
            if op.deadline_ms > now:
                keep.append(op)
                continue
            replica = state.partitions[op.partition].replicas[op.broker]
            if isinstance(op, DelayedProduce):
                effects.append(eff.ProduceResponse(op.request_id, ErrorCode.request_timed_out,
                                                   op.base_offset, op.record_ids, eff.EXPIRED))
            elif isinstance(op, DelayedDeleteRecords):
                effects.append(eff.DeleteRecordsResponse(
                    op.request_id, ErrorCode.request_timed_out, op.low_watermark, eff.EXPIRED))
            elif (error := _parked_fetch_error(op, replica, op.broker)) != NONE:
                effects.append(eff.FetchResponse(op.request_id, error, via=eff.EXPIRED))
            else:
                effects.append(_fetch_answer(state.config, replica, op.request_id, op.offset,
                                             op.max_bytes, eff.EXPIRED))
        if effects:
            state = ModelState(state.config, now, state.alive, state.partitions, tuple(keep))
    for at in isr_check_times(state.config, now - event.ms, now):
        state = _shrink_isrs(state, at)
    return state, tuple(effects)


def isr_check_times(config: ClusterConfig, after: int, until: int) -> range:
    """When leaders check their followers' lag within (after, until]: Kafka's isr-expiration
    task runs at a fixed rate, every replica.lag.time.max.ms / 2 (here at the multiples of that
    interval, the same on every broker)."""
    interval = max(1, config.replica_lag_time_max_ms // 2)
    first = (after // interval + 1) * interval
    return range(first, until + 1, interval)


def lag_check_laggards(state: ModelState, p: int, now: int) -> frozenset[int]:
    """The followers partition p's leader drops at a lag check at time `now`: ISR members
    neither at its leo nor caught up within the lag time. None without a live leader or with an
    ISR change in flight (the check goes on to the next partition)."""
    part = state.partitions[p]
    leader_id = part.control.leader
    if leader_id is None or not state.alive[leader_id]:
        return frozenset()
    leader = part.replicas[leader_id]
    if leader.leader != leader_id or leader.pending_isr is not None:
        return frozenset()
    lag = state.config.replica_lag_time_max_ms
    return frozenset(f for f in leader.isr if f != leader_id and leader.follower_offsets[f] < leader.leo
                     and now - leader.caught_up_ms[f] > lag)


def _shrink_isrs(state: ModelState, now: int) -> ModelState:
    """One lag check at time `now`: every live leader without an ISR change in flight proposes to
    drop the followers that are neither at its leo nor caught up within the lag time."""
    parts = state.partitions
    new_parts = list(parts)
    for p, part in enumerate(parts):
        laggards = lag_check_laggards(state, p, now)
        if laggards:
            leader = part.replicas[part.control.leader]
            new_parts[p] = _with_replica(part, part.control.leader,
                                         _replace(leader, pending_isr=leader.isr - laggards))
    if any(a is not b for a, b in zip(new_parts, parts, strict=True)):
        state = ModelState(state.config, state.now_ms, state.alive, tuple(new_parts), state.purgatory)
    return state


def _commit_isr_change(state: ModelState, event: ev.CommitIsrChange) -> tuple[ModelState, Effects]:
    """The controller handles the leader's AlterPartition: compare-and-set on the partition epoch
    and leader epoch; a new member must be alive. ELR (KIP-966): members leaving an ISR that is
    then below min.insync.replicas become eligible leaders; an ISR at or above the minimum
    clears the ELR."""
    config, p = state.config, event.partition
    if not 0 <= p < config.partitions:
        return state, ()  # no leader has a change in flight for a partition that does not exist
    part = state.partitions[p]
    control = part.control
    leader_id = control.leader
    if leader_id is None or not state.alive[leader_id]:
        return state, ()
    leader = part.replicas[leader_id]
    proposed = leader.pending_isr
    if leader.leader != leader_id or proposed is None:
        return state, ()
    error = NONE
    # Kafka's AlterPartition checks: a stale leader epoch is FENCED_LEADER_EPOCH, a stale
    # partition epoch INVALID_UPDATE_VERSION, a new member that is not alive INELIGIBLE_REPLICA
    if leader.leader_epoch != control.leader_epoch:
        error = ErrorCode.fenced_leader_epoch
    elif leader.partition_epoch != control.partition_epoch:
        error = ErrorCode.invalid_update_version
    elif any(not state.alive[r] for r in proposed - control.isr):
        error = ErrorCode.ineligible_replica
    if error != NONE:
        # back to the committed ISR; without the proposed members the hw may move
        leader = _replace(leader, pending_isr=None)
        effects = [eff.IsrChangeResult(p, error, control.isr)]
        return _leader_progress(state, p, leader_id, part, leader, effects), tuple(effects)
    removed = control.isr - proposed
    elr = (control.elr | removed) - proposed if len(proposed) < config.min_isr else frozenset()
    control = control.changed(leader=leader_id, isr=proposed, elr=elr, new_leader_epoch=False)
    part = PartitionState(part.replicas, control, part.next_record_id)
    leader = _replace(leader, isr=proposed, pending_isr=None, partition_epoch=control.partition_epoch)
    effects: list[eff.Effect] = [eff.IsrChangeResult(p, NONE, proposed)]
    return _leader_progress(state, p, leader_id, part, leader, effects), tuple(effects)


def _apply_leader_and_isr(state: ModelState, p: int, part: PartitionState, broker: int,
                          effects: list[eff.Effect]) -> tuple[PartitionState, tuple[Delayed, ...]]:
    """Deliver the controller's current state of partition p to a live broker: it becomes the
    leader (recording its epoch start and forgetting followers' positions) or a follower."""
    control = part.control
    replica = part.replicas[broker]
    config = state.config
    now = state.now_ms
    was_leader = replica.leader == broker
    # what waits here is checked again when this broker led or when the leader or its epoch
    # changed (consumer fetches parked on a follower, KIP-392), as Kafka's makeLeader /
    # makeFollower complete delayed operations
    moved = was_leader or (replica.leader, replica.leader_epoch) != (control.leader,
                                                                     control.leader_epoch)
    if control.leader == broker:
        brokers = config.brokers
        # Kafka's resetReplicaState: ISR members get a grace period, others count from 0
        caught_up = tuple(now if f in control.isr else 0 for f in range(brokers))
        replica = _replace(
            replica,
            leader=broker,
            leader_epoch=control.leader_epoch,
            partition_epoch=control.partition_epoch,
            isr=control.isr,
            pending_isr=None,
            epoch_cache=assign_epoch(replica.epoch_cache, control.leader_epoch, replica.leo),
            follower_offsets=(UNKNOWN_OFFSET,) * brokers,
            caught_up_ms=caught_up,
            last_fetch=(),
            follower_log_starts=(),
            synced_epoch=control.leader_epoch,
        )
    else:
        target = config.rules.truncation_on_becoming_follower(replica, control.leader)
        if target is not None:
            replica = _truncate(replica, target)
        replica = _replace(
            replica,
            leader=control.leader,
            leader_epoch=control.leader_epoch,
            partition_epoch=control.partition_epoch,
            isr=control.isr,
            pending_isr=None,
            hw=min(replica.hw, replica.leo),
        )
    part = _with_replica(part, broker, replica)
    purgatory = state.purgatory
    if moved:
        purgatory, done = _try_complete(_with_partition(state, p, part), purgatory, broker, p,
                                        replica)
        effects.extend(done)
    return part, purgatory


def _publish(state: ModelState, p: int, part: PartitionState,
             effects: list[eff.Effect]) -> ModelState:
    """Store a new controller state for p and send LeaderAndIsr to every live replica (delivery
    is synchronous in the model; see MODEL.md)."""
    state = _with_partition(state, p, part)
    for broker in state.config.assignment(p):
        if state.alive[broker]:
            part, purgatory = _apply_leader_and_isr(state, p, part, broker, effects)
            state = _with_partition(state, p, part, purgatory)
    leader_id = part.control.leader
    if leader_id is not None and state.alive[leader_id]:
        state = _leader_progress(state, p, leader_id, part, part.replicas[leader_id], effects)
    return state


def _elect(state: ModelState, event: ev.Elect) -> tuple[ModelState, Effects]:
    config, p, candidate = state.config, event.partition, event.leader

    def refuse(error: ErrorCode) -> tuple[ModelState, Effects]:
        return state, (eff.ElectionResult(p, candidate, error),)

    if not 0 <= p < config.partitions:
        return refuse(ErrorCode.unknown_topic_or_partition)
    # the candidate is a value in the request, not an address: an id outside the cluster is
    # just another non-replica (the controller answers so)
    if not 0 <= candidate < config.brokers or state.partitions[p].replicas[candidate] is None:
        return refuse(ErrorCode.ineligible_replica)
    part = state.partitions[p]
    control = part.control

    if control.leader == candidate:
        return refuse(ErrorCode.election_not_needed)
    if not state.alive[candidate]:
        return refuse(ErrorCode.ineligible_replica)
    live_isr = {r for r in control.isr if state.alive[r]}
    live_elr = {r for r in control.elr if state.alive[r]}
    if event.unclean:
        if not config.unclean_leader_election or live_isr or live_elr:
            return refuse(ErrorCode.ineligible_replica)
        isr, elr = frozenset({candidate}), frozenset()
    elif candidate in live_isr:
        isr, elr = control.isr, control.elr
    elif not live_isr and candidate in live_elr:
        isr, elr = frozenset({candidate}), control.elr - {candidate}
    else:
        return refuse(ErrorCode.ineligible_replica)
    control = control.changed(leader=candidate, isr=isr, elr=elr, new_leader_epoch=True)
    part = PartitionState(part.replicas, control, part.next_record_id)
    effects: list[eff.Effect] = [eff.ElectionResult(p, candidate, NONE, control.leader_epoch)]
    state = _publish(state, p, part, effects)
    return state, tuple(effects)


def _crash(state: ModelState, event: ev.CrashBroker) -> tuple[ModelState, Effects]:
    """Unclean shutdown: unflushed suffixes are lost, parked requests are disconnected, and the
    controller (which notices at once) removes the broker from ISRs and ELRs, bumping the leader
    epoch as the ZooKeeper-era controller does. The last ISR member stays in the ISR (so the
    partition stays offline rather than electing a replica without the data)."""
    broker = event.broker
    if not 0 <= broker < state.config.brokers:
        raise ValueError(f"no broker {broker}")
    if not state.alive[broker]:
        return state, ()
    effects: list[eff.Effect] = [eff.Disconnected(op.request_id) for op in state.purgatory
                                 if op.broker == broker]
    purgatory = tuple(op for op in state.purgatory if op.broker != broker)
    alive = state.alive[:broker] + (False,) + state.alive[broker + 1 :]
    state = ModelState(state.config, state.now_ms, alive, state.partitions, purgatory)
    for p in range(state.config.partitions):
        part = state.partitions[p]
        replica = part.replicas[broker]
        if replica is None:
            continue
        replica = _recover(replica)
        replica = _replace(replica, leader=None, pending_isr=None)
        part = _with_replica(part, broker, replica)
        part = _forget_crashed_follower(state, part, broker)
        control = part.control
        isr, elr = control.isr, control.elr - {broker}
        if broker == control.leader or (broker in isr and len(isr) > 1):
            new_isr = isr - {broker} if len(isr) > 1 else isr
            new_leader = None if broker == control.leader else control.leader
            if new_leader is not None and state.alive[new_leader]:
                # the crashed follower stops counting for the leader's low watermark when it
                # is fenced, before the new epoch reaches the leader (as the core checks its
                # parked deletions, then applies the change)
                state = _complete_deletions(state, p, new_leader, effects)
            control = control.changed(leader=new_leader, isr=new_isr, elr=elr, new_leader_epoch=True)
            state = _publish(state, p, PartitionState(part.replicas, control, part.next_record_id), effects)
        else:
            if elr != control.elr:
                control = control.changed(leader=control.leader, isr=isr, elr=elr, new_leader_epoch=False)
                part = _new_partition_epoch(state, part, control.partition_epoch)
            part = PartitionState(part.replicas, control, part.next_record_id)
            state = _with_partition(state, p, part)
            found = state.leader_replica(p)
            if found is not None:  # the maximal ISR may have lost the crashed broker: hw again
                state = _leader_progress(state, p, found[0], part, found[1], effects)
                state = _complete_deletions(state, p, found[0], effects)  # it no longer counts
    return state, tuple(effects)


def _forget_crashed_follower(state: ModelState, part: PartitionState, broker: int) -> PartitionState:
    """The live leader stops trusting what it knew of a crashed follower: its fetch position is
    unknown again, and an ISR addition of it still in flight is dropped. (KIP-903: Kafka's
    controller rejects such an addition by the follower's stale broker epoch; without this, a
    follower that lost its log in the crash would enter the ISR on a fetch sent before it.)"""
    leader_id = part.control.leader
    if leader_id is None or leader_id == broker or not state.alive[leader_id]:
        return part
    leader = part.replicas[leader_id]
    if leader.leader != leader_id:
        return part
    pending = leader.pending_isr
    if pending is not None and broker in pending - leader.isr:
        pending = None
    offsets = leader.follower_offsets
    offsets = offsets[:broker] + (UNKNOWN_OFFSET,) + offsets[broker + 1 :]
    starts = leader.follower_log_starts
    if starts:
        starts = starts[:broker] + (UNKNOWN_OFFSET,) + starts[broker + 1 :]
    return _with_replica(part, leader_id, _replace(leader, pending_isr=pending, follower_offsets=offsets,
                                                   follower_log_starts=starts))


def _new_partition_epoch(state: ModelState, part: PartitionState, epoch: int) -> PartitionState:
    """A change that keeps leader and ISR (only the ELR moved) still reaches every live broker,
    as every partition change record does in KRaft: live replicas learn the partition epoch
    (nothing else changes for them: same leader, same leader epoch)."""
    replicas = tuple(
        _replace(r, partition_epoch=epoch) if r is not None and state.alive[b] else r
        for b, r in enumerate(part.replicas))
    return PartitionState(replicas, part.control, part.next_record_id)


def _restart(state: ModelState, event: ev.RestartBroker) -> tuple[ModelState, Effects]:
    """Recovery: the broker comes back with its flushed logs and follows the current leaders.
    KIP-966: a last ISR member returning from an unclean shutdown leaves the ISR (it may have
    lost committed records), so only the ELR or an unclean election can bring the partition
    back."""
    broker = event.broker
    if not 0 <= broker < state.config.brokers:
        raise ValueError(f"no broker {broker}")
    if state.alive[broker]:
        return state, ()
    alive = state.alive[:broker] + (True,) + state.alive[broker + 1 :]
    state = ModelState(state.config, state.now_ms, alive, state.partitions, state.purgatory)
    effects: list[eff.Effect] = []
    for p in range(state.config.partitions):
        part = state.partitions[p]
        if part.replicas[broker] is None:
            continue
        control = part.control
        if control.isr == frozenset({broker}) and control.leader is None:
            control = control.changed(leader=None, isr=frozenset(), elr=control.elr, new_leader_epoch=False)
            part = PartitionState(part.replicas, control, part.next_record_id)
        part, purgatory = _apply_leader_and_isr(state, p, part, broker, effects)
        state = _with_partition(state, p, part, purgatory)
    return state, tuple(effects)


def _flush(state: ModelState, event: ev.Flush) -> tuple[ModelState, Effects]:
    broker = event.broker
    if not 0 <= broker < state.config.brokers:
        raise ValueError(f"no broker {broker}")
    if not state.alive[broker]:
        return state, ()
    for p in range(state.config.partitions):
        part = state.partitions[p]
        replica = part.replicas[broker]
        if replica is not None and replica.flushed != replica.leo:
            state = _with_partition(state, p, _with_replica(part, broker, _replace(replica, flushed=replica.leo)))
    return state, ()


_HANDLERS = {
    ev.Produce: _produce,
    ev.Fetch: _fetch,
    ev.ListOffsets: _list_offsets,
    ev.DeleteRecords: _delete_records,
    ev.Retention: _retention,
    ev.ReplicaFetch: _replica_fetch,
    ev.Tick: _tick,
    ev.CrashBroker: _crash,
    ev.RestartBroker: _restart,
    ev.Elect: _elect,
    ev.CommitIsrChange: _commit_isr_change,
    ev.Flush: _flush,
}
