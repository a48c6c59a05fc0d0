"""Client-level properties of the model: history-level facts, checked on every explored state
and after every step of the Hypothesis random walks.

A property needs history (what was acknowledged, what was read, what is still awaiting an
answer), which a Kafka state does not hold. The Ghost is that history: a frozen value folded
over the effects by observe(). Each property is a named predicate on (state, ghost) with a
docstring saying why it must hold.

Loss is judged against the current leader: a partition without a leader is unavailable, not
lossy; once a leader exists, every record it must have is checked at its offset.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.model import effects as eff
from kafkaref.model import events as ev
from kafkaref.model.values import ModelState

# Request kinds in Ghost.outstanding.
PRODUCE_ALL, PRODUCE_ONE, FETCH, LIST_OFFSETS, DELETE_RECORDS = (
    "produce-all", "produce-1", "fetch", "list-offsets", "delete-records")


@attrs.frozen(slots=True)
class Ghost:
    """The history the properties need, as a hashable value.

    outstanding: (request id, deadline ms, partition, kind) of every request awaiting an answer.
    acked: (partition, offset, record id) of every record acknowledged to an acks=all producer.
    consumed: (partition, offset, record id) of every record returned to a consumer.
    unclean: partitions that had an unclean leader election (loss is allowed there by design).
    errors: protocol violations seen in the effects (an answer to an unknown or already
        answered request, records out of order in a response).
    """

    outstanding: frozenset[tuple[int, int, int, str]] = frozenset()
    acked: frozenset[tuple[int, int, int]] = frozenset()
    consumed: frozenset[tuple[int, int, int]] = frozenset()
    unclean: frozenset[int] = frozenset()
    errors: tuple[str, ...] = ()


_ANSWERS = (eff.ProduceResponse, eff.FetchResponse, eff.ListOffsetsResponse,
            eff.DeleteRecordsResponse, eff.Disconnected)


def _asked(event: ev.Event, now: int) -> tuple[int, int, int, str] | None:
    if isinstance(event, ev.Produce):
        if event.acks == ev.ACKS_NONE:
            return None
        if event.acks == ev.ACKS_ALL:
            return event.request_id, now + max(event.timeout_ms, 0), event.partition, PRODUCE_ALL
        return event.request_id, now, event.partition, PRODUCE_ONE
    if isinstance(event, ev.Fetch):
        return event.request_id, now + max(event.max_wait_ms, 0), event.partition, FETCH
    if isinstance(event, ev.ListOffsets):
        return event.request_id, now, event.partition, LIST_OFFSETS
    if isinstance(event, ev.DeleteRecords):
        return event.request_id, now + max(event.timeout_ms, 0), event.partition, DELETE_RECORDS
    return None


def observe(ghost: Ghost, event: ev.Event, before: ModelState, after: ModelState,
            effects: tuple[eff.Effect, ...]) -> Ghost:
    """Fold one step into the history."""
    asked = _asked(event, before.now_ms)
    answers = [e for e in effects if isinstance(e, _ANSWERS)]
    unclean_now = isinstance(event, ev.Elect) and event.unclean and any(
        isinstance(e, eff.ElectionResult) and e.error == ErrorCode.none for e in effects)
    if asked is None and not answers and not unclean_now:
        return ghost
    outstanding = {entry[0]: entry for entry in ghost.outstanding}
    errors = list(ghost.errors)
    if asked is not None:
        if asked[0] in outstanding:
            errors.append(f"request id {asked[0]} reused while outstanding")
        outstanding[asked[0]] = asked
    acked, consumed = set(), set()
    for answer in answers:
        entry = outstanding.pop(answer.request_id, None)
        if entry is None:
            errors.append(f"answer to unknown or already answered request {answer.request_id}")
            continue
        partition, kind = entry[2], entry[3]
        if (isinstance(answer, eff.ProduceResponse) and kind == PRODUCE_ALL
                and answer.error == ErrorCode.none):
            acked.update((partition, answer.base_offset + i, rid) for i, rid in enumerate(answer.record_ids))
        elif isinstance(answer, eff.FetchResponse) and answer.error == ErrorCode.none:
            ids = [r.id for r in answer.records]
            if any(a >= b for a, b in zip(ids, ids[1:], strict=False)):
                errors.append(f"fetch {answer.request_id} returned records out of order")
            consumed.update((partition, answer.first_offset + i, rid) for i, rid in enumerate(ids))
    return Ghost(
        outstanding=frozenset(outstanding.values()),
        acked=ghost.acked | acked if acked else ghost.acked,
        consumed=ghost.consumed | consumed if consumed else ghost.consumed,
        unclean=ghost.unclean | {event.partition} if unclean_now else ghost.unclean,
        errors=tuple(errors),
    )


def _survives(state: ModelState, records: frozenset[tuple[int, int, int]], unclean: frozenset[int]) -> bool:
    for partition, offset, record_id in records:
        if partition in unclean:
            continue
        found = state.leader_replica(partition)
        if found is None:
            continue  # unavailable is not lost
        if offset < found[1].log_start:
            continue  # deleted on purpose (DeleteRecords) is not lost
        log = found[1].log
        if offset >= len(log) or log[offset].id != record_id:
            return False
    return True


def acked_writes_survive(state: ModelState, ghost: Ghost) -> bool:
    """No acks=all write is acknowledged and then lost, unless an unclean election happened.

    Why: the hw passed the batch, so every member of the (maximal) ISR held it, and the ISR was
    at least min.insync.replicas; clean elections only pick a live ISR member (or, KIP-966, an
    ELR member, which holds everything below the frozen hw); a crash removes the broker from
    the ISR and ELR, and the last member that crashed leaves the ISR on restart. So every leader
    a clean election can produce holds the record at its offset."""
    return _survives(state, ghost.acked, ghost.unclean)


def consumed_records_survive(state: ModelState, ghost: Ghost) -> bool:
    """A consumer never reads a record that is later truncated (unless unclean election).

    Why: consumers are served below the hw only, and everything below a leader's hw is held
    by every clean successor (same argument as for acknowledged writes)."""
    return _survives(state, ghost.consumed, ghost.unclean)


def requests_answered_once_in_time(state: ModelState, ghost: Ghost) -> bool:
    """Every request is answered exactly once, by its timeout at the latest.

    Why: a request leaves purgatory when its condition holds, when its deadline passes (Tick
    expires everything due), when its broker loses leadership, or as a disconnect when its
    broker dies; requests that need no waiting are answered while handled. Nothing is answered
    twice: an operation is removed from purgatory when it is answered."""
    now = state.now_ms
    return not ghost.errors and all(entry[1] > now for entry in ghost.outstanding)


def offsets_dense_and_increasing(state: ModelState, ghost: Ghost) -> bool:
    """Every log is dense (offset = position), record ids strictly increase along it, epochs
    never decrease, batches are contiguous, and the epoch cache agrees with the log.

    Why: offsets are assigned by the leader alone, under one step; followers only append what
    the leader sent after the point where their logs agree, and truncate at batch boundaries."""
    for part in state.partitions:
        for replica in part.replicas:
            if replica is not None and not _log_well_formed(replica):
                return False
    return True


def _log_well_formed(replica) -> bool:
    """From the log start on (what lies below is never read: DeleteRecords, or a log that
    started again at its leader's log start): dense, ids increasing, batches contiguous, and the
    epoch cache the log's own; the log start at or below the hw and the flushed point (Kafka
    raises the recovery point with the log start and lowers the log start with a truncation)."""
    previous = None
    cache = []
    log = replica.log
    for offset in range(replica.log_start, len(log)):
        entry = log[offset]
        if not entry.base <= offset:
            return False
        if previous is not None:
            if entry.id <= previous.id or entry.epoch < previous.epoch:
                return False
            if entry.base != previous.base and entry.base != offset:
                return False
            if entry.base == previous.base and entry.epoch != previous.epoch:
                return False
        elif entry.base != 0 and replica.log_start == 0:
            return False
        if not cache or cache[-1][0] < entry.epoch:
            cache.append((entry.epoch, offset))
        previous = entry
    known = [pair for pair in replica.epoch_cache if pair[1] < replica.leo]
    return known == cache and replica.hw <= replica.leo and replica.flushed <= replica.leo and (
        replica.log_start <= min(replica.hw, replica.flushed))


CLIENT_PROPERTIES: dict[str, Callable[[ModelState, Ghost], bool]] = {
    "AckedWritesSurvive": acked_writes_survive,
    "ConsumedRecordsSurvive": consumed_records_survive,
    "RequestsAnsweredOnceInTime": requests_answered_once_in_time,
    "OffsetsDenseAndIncreasing": offsets_dense_and_increasing,
}


def violated_properties(state: ModelState, ghost: Ghost) -> list[str]:
    return [name for name, holds in CLIENT_PROPERTIES.items() if not holds(state, ghost)]
