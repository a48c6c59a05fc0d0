"""The impl core as a system under test for the model's machine: model events in, model effects out.

    Machine = lockstep_machine(config)   # ModelMachine with CoreLockstep as its system

`CoreLockstep(config)` is a whole cluster stepped in one thread: one core Broker (impl/core)
per model broker, a MemoryLog per replica (the "disk": it survives crashes, minus what was not
flushed), the controller's decision logic (impl/controller/state.py, elections explicit: the
model's Elect events are its elections) and one injected clock. Every model event becomes what
a broker or the controller would receive; every answer becomes the model's effect value.

This module is a translation layer and nothing more: it holds no rule of Kafka's. What it does
hold is transport (a request to a dead broker is a network error; a crashed broker's parked
requests are disconnected), the ghost record ids (model-only values: a record is named by its
(leader epoch, offset), which is unique per partition), and the follower's drop of a response
to a fetch it no longer waits for (impl/replication/apply.py decides, as the fetcher does).

`core_image(cluster)` is the one abstraction function of the core: the cluster seen as a
ModelState. The lockstep machine compares `observable_state` of both sides after every step;
properties/core_machine.py takes the image of its own cluster (stale metadata, idempotent
producers) with it and checks the model's client properties (model/properties.py) and, through
model/refinement.image, the spec's invariants on it.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.broker import (
    READ_UNCOMMITTED,
    Broker,
    BrokerConfig,
    fetch_answer_fields,
    fetch_only_leader,
)
from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.mutants import parse_mutants
from kafkaref.impl.protocol.records import build_batch, decode_batch, split_batches
from kafkaref.impl.replication.apply import (
    apply_fetch_response,
    response_is_current,
    start_at_leader_log_start,
    truncate_to_leader_end,
)
from kafkaref.model import events as ev
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import (
    COMPLETED,
    EXPIRED,
    IMMEDIATE,
    DeleteRecordsResponse,
    Disconnected,
    Effect,
    ElectionResult,
    FetchResponse,
    IsrChangeResult,
    ListOffsetsResponse,
    ProduceResponse,
    ReplicaFetchResult,
)
from kafkaref.model.plog import PLog
from kafkaref.model.values import (
    NO_EPOCH,
    UNKNOWN_OFFSET,
    Entry,
    ModelState,
    PartitionControl,
    PartitionState,
    Replica,
)
from kafkaref.properties.clock import ManualClock

TOPIC = "t"
# The Fetch versions a model Fetch is sent at (the model has no versions): one that carries
# client metadata (KIP-392, v11+) when the event lets a follower answer, else one without
# that still carries current_leader_epoch (v9+, KIP-320), which the event may set; by the
# request id's parity, the lowest or the highest of each range
FOLLOWER_READ_VERSIONS, LEADER_ONLY_VERSIONS = (11, 18), (9, 10)
NO_ID = -1  # a record the adapter did not see appended (cannot happen without a bug)
UNREADABLE = Entry(NO_ID, NO_EPOCH, b"", -1)  # an offset below a log start


class CoreLockstep:
    """The core cluster driven by model events. `feed(event)` returns the model's effects."""

    def __init__(self, config: ClusterConfig, partition_mutants=frozenset(),
                 controller_mutants=frozenset()):
        """partition_mutants: deliberate faults of every broker (impl/mutants.py);
        controller_mutants: the controller's (M14)."""
        self.config = config
        self.mutants = parse_mutants(partition_mutants)
        self.clock = ManualClock()
        self.controller = ControllerState(
            self.clock, session_timeout_ms=2**62, unclean_election=config.unclean_leader_election,
            mutants=controller_mutants, automatic_elections=False)
        self.logs = {(b, p): MemoryLog(flush_interval_messages=config.flush_interval_messages)
                     for p in range(config.partitions) for b in config.assignment(p)}
        self.brokers: list[Broker | None] = [None] * config.brokers
        # ghost record ids: (leader epoch, offset) names a record uniquely within a partition
        self.record_ids: list[dict[tuple[int, int], int]] = [{} for _ in range(config.partitions)]
        self.next_record_id = [0] * config.partitions
        self._effects: list[Effect] = []
        self._parked: dict[int, int] = {}  # request id -> broker, for requests not yet answered
        self._via = COMPLETED
        self._handling: int | None = None  # the request whose handling call is running
        for b in range(config.brokers):
            self.brokers[b] = self._new_broker(b)
            self.controller.register(b, "127.0.0.1", 9000 + b)
        topic_configs = {"min.insync.replicas": str(config.min_insync_replicas)}
        error, message = self.controller.create_topic(
            TOPIC, config.partitions, config.replication_factor, topic_configs)
        assert error == ErrorCode.none, message
        for p, meta in enumerate(self.controller.metadata.topic(TOPIC).partitions):
            assert meta.replicas == config.assignment(p), "the controller assigns differently"
        self._propagate()

    def _new_broker(self, b: int) -> Broker:
        config = BrokerConfig(broker_id=b, replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
                              mutants=self.mutants)
        return Broker(config, self.clock, lambda key: self.logs[(b, key[1])],
                      alter_isr=lambda *_: None)

    # -- plumbing -------------------------------------------------------------------------------
    def alive(self, b: int) -> bool:
        return self.brokers[b] is not None

    def partition(self, b: int, p: int):
        broker = self.brokers[b]
        return None if broker is None else broker.replica_manager.partition((TOPIC, p))

    def log(self, b: int, p: int):
        return self.logs[(b, p)]

    def next_ids(self, p: int) -> int:
        return self.next_record_id[p]

    def _propagate(self) -> None:
        """The controller's image reaches every live broker at once (as the model delivers)."""
        for broker in self.brokers:
            if broker is not None:
                broker.apply_metadata(self.controller.metadata)

    def _answer(self, request_id: int, effect: Effect) -> None:
        self._parked.pop(request_id, None)
        via = IMMEDIATE if request_id == self._handling else self._via
        self._effects.append(attrs.evolve(effect, via=via))

    def _immediate(self, request_id: int, b: int, call) -> None:
        """Run a request's handling call: an answer given during it is immediate; otherwise the
        request stays parked on broker b until a later step answers it."""
        self._parked[request_id] = b
        self._handling = request_id
        try:
            call()
        finally:
            self._handling = None

    def feed(self, event: ev.Event) -> tuple[Effect, ...]:
        self._effects = []
        handler = _HANDLERS[type(event)]
        handler(self, event)
        return tuple(self._effects)

    # -- client requests ----------------------------------------------------------------------
    def _produce(self, e: ev.Produce) -> None:
        self._check_broker(e.broker)
        if not self.alive(e.broker):
            if e.acks != ev.ACKS_NONE:
                self._effects.append(Disconnected(e.request_id))
            return
        key = (TOPIC, e.partition)
        leader = self.partition(e.broker, e.partition)
        leo = leader.log_end_offset if leader is not None else 0
        epoch = leader.leader_epoch if leader is not None else NO_EPOCH
        data = b"".join(build_batch([(None, v, (), None) for v in values])
                        for values in (e.values, *e.more_batches) if values)
        ids: tuple[int, ...] = ()

        def done(results):
            if e.acks == ev.ACKS_NONE:
                self._parked.pop(e.request_id, None)
                return
            r = results[key]
            appended = r.base_offset >= 0
            answer = ProduceResponse(e.request_id, r.error, r.base_offset, ids if appended else ())
            if r.error == ErrorCode.request_timed_out:  # only the purgatory's timer says this
                self._parked.pop(e.request_id, None)
                self._effects.append(attrs.evolve(answer, via=EXPIRED))
            else:
                self._answer(e.request_id, answer)

        def call():
            nonlocal ids
            self.brokers[e.broker].replica_manager.append_records(
                e.timeout_ms, e.acks, {key: data}, done)

        # the records get ids when the leader appends them: named before the call, since a
        # parked fetch may read them during it; forgotten again if the append did not happen
        names = self.record_ids[e.partition] if 0 <= e.partition < self.config.partitions else {}
        if leader is not None and leader.is_leader:
            first_id = self.next_record_id[e.partition]
            ids = tuple(range(first_id, first_id + len(e.values)))
            for i, record_id in enumerate(ids):
                names[(epoch, leo + i)] = record_id
        self._immediate(e.request_id, e.broker, call)
        if leader is not None and leader.log_end_offset > leo:
            self.next_record_id[e.partition] += len(ids)
        else:
            for i in range(len(ids)):
                names.pop((epoch, leo + i), None)

    def _disconnected(self, e) -> bool:
        """A request to a broker that is down: answered Disconnected (True), else False."""
        self._check_broker(e.broker)
        if self.alive(e.broker):
            return False
        self._effects.append(Disconnected(e.request_id))
        return True

    def _fetch(self, e: ev.Fetch) -> None:
        if self._disconnected(e):
            return
        key = (TOPIC, e.partition)

        def done(results):
            self._answer(e.request_id, self._fetch_response(e, results[key]))

        fetch = FetchPartition(e.offset, e.max_bytes, e.current_leader_epoch)
        leader_only = fetch_only_leader(fetch_version(e), -1)  # the broker's rule
        self._immediate(e.request_id, e.broker, lambda: self.brokers[e.broker].replica_manager.fetch(
            -1, e.max_wait_ms, e.min_bytes, e.max_bytes, {key: fetch}, done,
            leader_only=leader_only))

    def _fetch_response(self, e: ev.Fetch, r) -> FetchResponse:
        high_watermark, log_start, _ = fetch_answer_fields(r, READ_UNCOMMITTED)  # as answered
        if r.error != ErrorCode.none:
            return FetchResponse(e.request_id, r.error, high_watermark,
                                 log_start_offset=log_start)
        entries = self.entries(e.partition, bytes(r.records))
        first = entries[0].base if entries else e.offset
        return FetchResponse(e.request_id, r.error, high_watermark, first, entries,
                             log_start_offset=log_start)

    def fetch_many(self, broker: int, fetches: list[ev.Fetch]) -> tuple[Effect, ...]:
        """One consumer Fetch naming several partitions (model Fetch events of one broker, no
        wait, every partition once): each partition's answer as its own Fetch's effect, so that
        the model's answer to each alone is the expectation (ModelMachine.fetch_many)."""
        self._check_broker(broker)
        wanted = {(TOPIC, e.partition): FetchPartition(e.offset, e.max_bytes, e.current_leader_epoch)
                  for e in fetches}
        answers = []
        self.brokers[broker].replica_manager.fetch(-1, 0, 1, sum(e.max_bytes for e in fetches),
                                                   wanted, answers.append)
        [results] = answers  # no wait: answered during the call
        return tuple(attrs.evolve(self._fetch_response(e, results[(TOPIC, e.partition)]), via=IMMEDIATE)
                     for e in fetches)

    def _list_offsets(self, e: ev.ListOffsets) -> None:
        if self._disconnected(e):
            return
        answer = self.brokers[e.broker].replica_manager.list_offset((TOPIC, e.partition), e.timestamp)
        self._effects.append(ListOffsetsResponse(e.request_id, answer.error, answer.offset,
                                                 answer.timestamp))

    def _delete_records(self, e: ev.DeleteRecords) -> None:
        if self._disconnected(e):
            return
        key = (TOPIC, e.partition)

        def done(results):
            r = results[key]
            answer = DeleteRecordsResponse(e.request_id, r.error, r.low_watermark)
            if r.error == ErrorCode.request_timed_out:  # only the purgatory's timer says this
                self._parked.pop(e.request_id, None)
                self._effects.append(attrs.evolve(answer, via=EXPIRED))
            else:
                self._answer(e.request_id, answer)

        self._immediate(e.request_id, e.broker, lambda: self.brokers[
            e.broker].replica_manager.delete_records(e.timeout_ms, {key: e.offset}, done))

    def _retention(self, e: ev.Retention) -> None:
        """A retention run that moved the replica's log start to e.offset: what
        Log.delete_old_segments does to a segmented log (MemoryLogs have no segments, so the
        offset is the machine's), then the replica manager's after-run checks."""
        self._check_broker(e.broker)
        partition = self.partition(e.broker, e.partition)
        if partition is None or not partition.log.log_start_offset < e.offset <= (
                partition.high_watermark):
            return
        partition.log.increment_log_start_offset(e.offset)
        self.brokers[e.broker].replica_manager.log_start_moved((TOPIC, e.partition))

    # -- replication ----------------------------------------------------------------------------
    def _replica_fetch(self, e: ev.ReplicaFetch) -> None:
        self._check_broker(e.leader)
        self._check_broker(e.follower)
        if not self.alive(e.follower):
            return  # a dead broker sends nothing
        p, key = e.partition, (TOPIC, e.partition)

        def result(error, **more) -> None:
            self._effects.append(ReplicaFetchResult(e.leader, e.follower, p, error, **more))

        if not self.alive(e.leader):
            return result(ErrorCode.network_exception, applied=False)
        own_log = self.logs.get((e.follower, p))
        request = FetchPartition(e.fetch_offset, e.max_bytes, e.current_leader_epoch,
                                 e.last_fetched_epoch,
                                 -1 if own_log is None else own_log.log_start_offset)
        answers = []
        self.brokers[e.leader].replica_manager.fetch(e.follower, 0, 1, e.max_bytes, {key: request},
                                                     answers.append)
        answer = answers[0][key]
        follower = self.partition(e.follower, p) if e.follower != e.leader else None
        current = not e.response_lost and follower is not None and response_is_current(
            follower, e.leader, e.current_leader_epoch, e.fetch_offset, e.last_fetched_epoch)
        handled = answer.error in (ErrorCode.none, ErrorCode.offset_out_of_range)
        diverging = answer.diverging_epoch
        if not (current and handled):
            return result(answer.error, diverging=diverging, applied=False)
        leo = follower.log_end_offset
        outcome = apply_fetch_response(follower, answer.error, diverging, bytes(answer.records),
                                       answer.high_watermark, answer.log_start_offset)
        if answer.error == ErrorCode.offset_out_of_range and self._start_at_leader_log_start(
                e, follower):  # as the fetcher thread does: ListOffsets EARLIEST, then restart
            result(answer.error, truncated_to=follower.log_end_offset)
        else:
            after = follower.log_end_offset
            truncated = after if after < leo or outcome == "truncated" else None
            result(answer.error, appended=max(0, after - leo), diverging=diverging,
                   truncated_to=truncated)

    def _start_at_leader_log_start(self, e: ev.ReplicaFetch, follower) -> bool:
        """As the fetcher thread after OFFSET_OUT_OF_RANGE: the leader's log end (cut to it
        when above), else its log start (start again there when below)."""
        leader = self.brokers[e.leader].replica_manager
        key, epoch = (TOPIC, e.partition), e.current_leader_epoch
        end = leader.list_offset(key, ev.LATEST, epoch, replica_id=e.follower)
        if end.error == ErrorCode.none and truncate_to_leader_end(follower, end.offset):
            return True
        earliest = leader.list_offset(key, ev.EARLIEST, epoch, replica_id=e.follower)
        return earliest.error == ErrorCode.none and start_at_leader_log_start(
            follower, earliest.offset)

    # -- time, ISR, controller, faults ----------------------------------------------------------
    def _tick(self, e: ev.Tick) -> None:
        self.clock.now_ms += e.ms
        now = self.clock.now_ms
        live = [b for b in self.brokers if b is not None]
        self._via = EXPIRED
        try:
            for broker in live:
                broker.replica_manager.produce_purgatory.advance_clock(now)
                broker.replica_manager.fetch_purgatory.advance_clock(now)
                broker.replica_manager.delete_records_purgatory.advance_clock(now)
        finally:
            self._via = COMPLETED
        for broker in live:
            broker.advance_clock(now)

    def _commit_isr_change(self, e: ev.CommitIsrChange) -> None:
        if not 0 <= e.partition < self.config.partitions:
            return  # no change can be in flight for it (the model: the same no-op)
        leader_id = self.controller.metadata.topic(TOPIC).partitions[e.partition].leader
        leader = self.partition(leader_id, e.partition) if leader_id >= 0 else None
        if leader is None or not leader.is_leader or leader.pending_isr is None:
            return
        proposed = leader.pending_isr
        error = self.controller.alter_isr(leader_id, TOPIC, e.partition, leader.leader_epoch,
                                          proposed, leader.partition_epoch)
        rm = self.brokers[leader_id].replica_manager
        if error == ErrorCode.none:
            self._propagate()  # the answer brings the newest image, then the proposal is settled
            rm.isr_answered((TOPIC, e.partition), proposed)
        else:
            rm.isr_rejected((TOPIC, e.partition))
        isr = self.controller.metadata.topic(TOPIC).partitions[e.partition].isr
        self._effects.append(IsrChangeResult(e.partition, error, frozenset(isr)))

    def _elect(self, e: ev.Elect) -> None:
        error, epoch = self.controller.elect(TOPIC, e.partition, e.leader, e.unclean)
        self._effects.append(ElectionResult(e.partition, e.leader, error, epoch))
        if error == ErrorCode.none:
            self._propagate()

    def _crash(self, e: ev.CrashBroker) -> None:
        b = e.broker
        self._check_broker(b)
        if not self.alive(b):
            return
        for request_id, at in list(self._parked.items()):
            if at == b:
                del self._parked[request_id]
                self._effects.append(Disconnected(request_id))
        self.brokers[b] = None
        for (owner, _), log in self.logs.items():
            if owner == b:
                log.crash()
        self.controller.fence(b)
        self._propagate()

    def _restart(self, e: ev.RestartBroker) -> None:
        b = e.broker
        self._check_broker(b)
        if self.alive(b):
            return
        self.brokers[b] = self._new_broker(b)
        self.controller.register(b, "127.0.0.1", 9000 + b)
        self._propagate()

    def _flush(self, e: ev.Flush) -> None:
        self._check_broker(e.broker)
        if self.alive(e.broker):
            for (owner, _), log in self.logs.items():
                if owner == e.broker:
                    log.flush()

    # -- bad input: what the model refuses, refused the same way ----------------------------------
    def _check_broker(self, b: int) -> None:
        if not 0 <= b < self.config.brokers:
            raise ValueError(f"no broker {b}")

    # -- the core seen as model values ----------------------------------------------------------
    def entries(self, p: int, data: bytes) -> tuple[Entry, ...]:
        """Records of fetched or stored batches as model entries (ids from the ghost map)."""
        _, views = split_batches(data)
        ids = self.record_ids[p]
        out = []
        for view in views:
            batch = decode_batch(view)
            epoch, base = batch.header.partition_leader_epoch, batch.header.base_offset
            for record in batch.records:
                out.append(Entry(ids.get((epoch, record.offset), NO_ID), epoch,
                                 record.value or b"", base))
        return tuple(out)


def fetch_version(e: ev.Fetch) -> int:
    """The version a model Fetch is sent at (FOLLOWER_READ_VERSIONS, LEADER_ONLY_VERSIONS)."""
    versions = FOLLOWER_READ_VERSIONS if e.from_follower_allowed else LEADER_ONLY_VERSIONS
    return versions[e.request_id % 2]


_HANDLERS = {
    ev.Produce: CoreLockstep._produce,
    ev.Fetch: CoreLockstep._fetch,
    ev.ListOffsets: CoreLockstep._list_offsets,
    ev.DeleteRecords: CoreLockstep._delete_records,
    ev.Retention: CoreLockstep._retention,
    ev.ReplicaFetch: CoreLockstep._replica_fetch,
    ev.Tick: CoreLockstep._tick,
    ev.CrashBroker: CoreLockstep._crash,
    ev.RestartBroker: CoreLockstep._restart,
    ev.Elect: CoreLockstep._elect,
    ev.CommitIsrChange: CoreLockstep._commit_isr_change,
    ev.Flush: CoreLockstep._flush,
}


def core_image(cluster, entries=None) -> ModelState:
    """The one abstraction function of the core: the cluster as a ModelState. Dead brokers are
    seen through their logs (what a restart recovers); what the core does not keep (follower
    views of the ISR, synced epochs, parked requests) is left empty.

    `cluster` is a CoreLockstep or any core cluster with the same views (properties/
    core_machine.py's CoreCluster): config, clock, controller, brokers (None when down),
    log(b, p), partition(b, p), entries(p, data) naming the records, next_ids(p). `entries`
    overrides the naming (a cluster may name records one way for the spec, another for
    clients)."""
    config = cluster.config
    entries = entries or cluster.entries
    metas = cluster.controller.metadata.topic(TOPIC).partitions
    partitions = []
    for p, meta in enumerate(metas):
        replicas: list[Replica | None] = [None] * config.brokers
        for b in config.assignment(p):
            replicas[b] = _replica_image(cluster, b, p, entries)
        control = PartitionControl(None if meta.leader < 0 else meta.leader, meta.leader_epoch,
                                   meta.partition_epoch, frozenset(meta.isr), frozenset(meta.elr))
        partitions.append(PartitionState(tuple(replicas), control, cluster.next_ids(p)))
    alive = tuple(cluster.brokers[b] is not None for b in range(config.brokers))
    return ModelState(config, cluster.clock.now_ms, alive, tuple(partitions), ())


def _replica_image(cluster, b: int, p: int, entries) -> Replica:
    log = cluster.log(b, p)
    entries = tuple(e for _, raw in log.batches() for e in _batch_entries(cluster, entries, p, raw))
    # a log that started again at its leader's log start holds nothing below it: those
    # offsets are never read (observable_state compares from the log start on)
    first = entries[0].base if entries else log.log_end_offset
    entries = (UNREADABLE,) * first + entries
    part = cluster.partition(b, p)
    brokers = cluster.config.brokers
    offsets, caught_up = [UNKNOWN_OFFSET] * brokers, [0] * brokers
    if part is None:  # down: what its disk holds
        return Replica(PLog.of(entries), log.high_watermark, log.flushed_offset,
                       tuple(log.epochs.entries), None, NO_EPOCH, 0, frozenset(), None,
                       tuple(offsets), tuple(caught_up), NO_EPOCH,
                       log_start=log.log_start_offset)
    for f, state in part.followers.items():
        offsets[f], caught_up[f] = state.log_end_offset, state.last_caught_up_ms
    leader = part.leader_id if part.leader_id is not None and part.leader_id >= 0 else None
    leading = part.is_leader
    return Replica(PLog.of(entries), part.high_watermark, log.flushed_offset,
                   tuple(log.epochs.entries), leader, part.leader_epoch, part.partition_epoch,
                   frozenset(part.isr) if leading else frozenset(),
                   part.pending_isr if leading else None, tuple(offsets), tuple(caught_up),
                   NO_EPOCH, log_start=log.log_start_offset)


def _batch_entries(cluster, entries, p: int, raw) -> tuple[Entry, ...]:
    """One stored batch as entries, decoded once per cluster: a batch's bytes (base offset and
    leader epoch included) name the same records for as long as they are stored, and decoding
    every log after every step made the image cost grow with the logs."""
    cache = cluster.__dict__.setdefault("_image_entries", {})
    key = (entries, p, bytes(raw))
    found = cache.get(key)
    if found is None:
        found = cache[key] = entries(p, key[2])
    return found


def observable_state(state: ModelState) -> tuple:
    """What lockstep compares after every step, from either side's ModelState: the controller's
    record of each partition and, per replica, its log from its log start on (ids, epochs,
    batch bases, values; what lies below is never read), log start, leo, hw, flushed offset,
    epoch cache and leader epoch; a live leader's committed and pending ISR too. (Followers'
    ISR views, fetch positions and times are internal to each side.)"""
    out = []
    for p, part in enumerate(state.partitions):
        c = part.control
        out.append((p, "controller", c.leader, c.leader_epoch, c.isr, c.elr))
        for b, r in enumerate(part.replicas):
            if r is None:
                continue
            up = state.alive[b]
            leading = up and r.leader == b
            readable = (UNREADABLE,) * r.log_start + tuple(r.log)[r.log_start:]
            out.append((p, b, up, readable, r.log_start, r.leo, r.hw, r.flushed, r.epoch_cache,
                        r.leader_epoch if up else None, r.leader if up else None,
                        (r.isr, r.pending_isr) if leading else None))
    return tuple(out)


def describe_difference(expected: ModelState, actual: ModelState) -> str:
    """Both sides rendered (model/render.py) and the lines that differ, for a failure message."""
    import difflib

    from kafkaref.model.render import render_state

    left, right = render_state(expected).splitlines(), render_state(actual).splitlines()
    diff = difflib.unified_diff(left, right, "model", "core", lineterm="", n=1)
    mismatches = [f"  {a}\n  {b}" for a, b in zip(observable_state(expected),
                                                   observable_state(actual), strict=False)
                  if a != b]
    return "\n".join(["model:", *left, "core:", *right, "diff:", *diff,
                      "observable differences (model, core):", *mismatches])




def same_effects_any_order(expected, actual) -> bool:
    """Effects of one step compared exactly, in any order: answers to different requests leave
    on different connections, so their order within one step is not observable."""
    return sorted(map(repr, expected)) == sorted(map(repr, actual))


def lockstep_machine(config: ClusterConfig, retention: bool = False, handover: bool = False,
                     **cluster_options):
    """The model's machine with the core in lockstep (cluster_options: mutants), as a class
    Hypothesis runs (properties/stateful.py, bind); retention: with the retention rule;
    handover: with leadership handed over between caught-up ISR members."""
    from kafkaref.properties.model_machine import (
        HandoverMachine,
        ModelMachine,
        RetentionMachine,
        StateCheck,
    )
    from kafkaref.properties.stateful import bind

    machine = RetentionMachine if retention else HandoverMachine if handover else ModelMachine
    return bind(
        machine, config=config,
        sut_factory=lambda c: CoreLockstep(c, **cluster_options), compare=same_effects_any_order,
        state_check=StateCheck(core_image, observable_state, describe_difference))
