"""A reusable Hypothesis state machine over impl/core: a whole cluster stepped in one thread.

`CoreCluster` is the system under test: N core Brokers (impl/core) on MemoryLogs, the
controller's decision logic (impl/controller/state.py), an injected clock, and metadata that
reaches each broker only when a rule delivers it (so stale leaders and late news happen).
Replica fetches are synchronous leader-fetch + follower-apply steps using the same code as the
fetcher threads (impl/replication/apply.py).

`CoreMachine(factory)` is a RuleBasedStateMachine over any factory returning a CoreCluster-like
object. The cluster is seen through the one abstraction function of the core,
properties/lockstep.py `core_image` (a ModelState), and checked with the rules defined once
elsewhere: every spec invariant on its refinement image (model/refinement.image_violations),
and the model's client properties AckedWritesSurvive and ConsumedRecordsSurvive
(model/properties.py) on the history the machine keeps (acknowledged acks=all writes, records
served to consumers). Its own check is idempotence, which the model has no producer ids for:
no record is committed twice.

    TestCore = bind(CoreMachine, factory=lambda: CoreCluster(brokers=3)).TestCase
    # the same core on impl/storage segmented logs:
    bind(CoreMachine, factory=lambda: CoreCluster(log_factory=lambda b: Log(tempfile.mkdtemp())))
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.mutants import parse_mutants
from kafkaref.impl.protocol.records import build_batch, decode_batch, split_batches
from kafkaref.impl.replication.apply import apply_fetch_response
from kafkaref.model.config import ClusterConfig
from kafkaref.model.properties import Ghost, acked_writes_survive, consumed_records_survive
from kafkaref.model.refinement import image_violations
from kafkaref.model.render import render_state
from kafkaref.model.values import Entry
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.lockstep import TOPIC, core_image
from kafkaref.properties.stateful import note
from kafkaref.spec.state import Record

KEY = (TOPIC, 0)
ATTEMPTS_MAX = 8  # a record's spec id is id * ATTEMPTS_MAX + attempt
CLIENT_PROPERTIES = {"AckedWritesSurvive": acked_writes_survive,
                     "ConsumedRecordsSurvive": consumed_records_survive}


class CoreCluster:
    def __init__(self, brokers: int = 3, min_insync_replicas: int = 2,
                 replica_lag_time_max_ms: int = 1000, partition_mutants=(),
                 controller_mutants=(), log_factory: Callable[[int], object] | None = None):
        self.clock = ManualClock()
        self.lag_ms = replica_lag_time_max_ms
        self.config = ClusterConfig(brokers=brokers, partitions=1, replication_factor=brokers,
                                    min_insync_replicas=min_insync_replicas,
                                    replica_lag_time_max_ms=replica_lag_time_max_ms)
        self.controller = ControllerState(self.clock, session_timeout_ms=2**62,
                                          mutants=controller_mutants)
        self.mutants = parse_mutants(partition_mutants)  # every broker's (impl/mutants.py)
        # one log per broker; MemoryLog by default, impl/storage's Log to check them together
        self.logs = {b: (log_factory or (lambda _: MemoryLog()))(b) for b in range(brokers)}
        self.brokers: dict[int, Broker | None] = {}
        self.proposals: list[tuple[int, int, tuple[int, ...]]] = []
        self.request_ids = itertools.count()
        self.acked: dict[int, int] = {}  # record id -> offset, acks=all acknowledged
        self.read: dict[int, int] = {}  # record id -> offset, served to a consumer
        self.next_record_id = 0
        self.producer_sequence = 0  # one idempotent producer: id 1, epoch 0
        self.last_idempotent: tuple[list[int], int, int] | None = None  # ids, seq, attempt
        for b in range(brokers):
            self.brokers[b] = self._new_broker(b)
            self.controller.register(b, "127.0.0.1", 9000 + b)
        configs = {"min.insync.replicas": str(min_insync_replicas)}
        error, message = self.controller.create_topic(TOPIC, 1, brokers, configs)
        assert error == ErrorCode.none, message
        assert self.quorum.replicas == self.config.assignment(0), "assigned differently"
        for b in range(brokers):
            self.propagate(b)

    def _new_broker(self, b: int) -> Broker:
        def alter_isr(partition, proposed):
            self.proposals.append((b, partition.leader_epoch, tuple(sorted(proposed))))

        return Broker(BrokerConfig(broker_id=b, replica_lag_time_max_ms=self.lag_ms,
                                   mutants=self.mutants),
                      self.clock, lambda key: self.logs[b], alter_isr=alter_isr)

    # -- views ----------------------------------------------------------------------------------
    @property
    def quorum(self):
        return self.controller.metadata.topic(TOPIC).partitions[0]

    def partition(self, b: int, p: int = 0):
        broker = self.brokers.get(b)
        return None if broker is None else broker.replica_manager.partition((TOPIC, p))

    def log(self, b: int, p: int = 0):
        return self.logs[b]

    def next_ids(self, p: int = 0) -> int:
        return self.next_record_id * ATTEMPTS_MAX

    def entries(self, p: int, data: bytes, attempts: bool = True) -> tuple[Entry, ...]:
        """Stored or fetched records as model entries named by their value "id:attempt": each
        attempt of an idempotent retry a distinct record for the spec (id * ATTEMPTS_MAX +
        attempt), or, attempts=False, the same record for clients (the id alone)."""
        _, views = split_batches(data)
        out = []
        for view in views:
            batch = decode_batch(view)
            for record in batch.records:
                base, attempt = _ids(record.value)
                out.append(Entry(base * ATTEMPTS_MAX + attempt if attempts else base,
                                 batch.header.partition_leader_epoch, record.value or b"",
                                 batch.header.base_offset))
        return tuple(out)

    def client_entries(self, p: int, data: bytes) -> tuple[Entry, ...]:
        return self.entries(p, data, attempts=False)

    def alive(self) -> list[int]:
        return [b for b, broker in self.brokers.items() if broker is not None]

    def record_ids(self, b: int) -> tuple[Record, ...]:
        out = []
        for header, raw in self.logs[b].batches():
            for record in decode_batch(raw).records:
                base, attempt = _ids(record.value)
                out.append(Record(base * ATTEMPTS_MAX + attempt, header.partition_leader_epoch))
        return tuple(out)

    # -- events ---------------------------------------------------------------------------------
    def produce(self, b: int, acks: int, count: int, idempotent: bool = False) -> None:
        ids = list(range(self.next_record_id, self.next_record_id + count))
        self.next_record_id += count
        if idempotent:
            data = build_batch([(None, f"{i}:0".encode(), (), None) for i in ids],
                               producer_id=1, producer_epoch=0,
                               base_sequence=self.producer_sequence)
            self.last_idempotent = (ids, self.producer_sequence, 0)
            self.producer_sequence += count
        else:
            data = build_batch([(None, f"{i}:0".encode(), (), None) for i in ids])
        self._send(b, acks, ids, data)

    def retry_idempotent(self, b: int) -> None:
        """The idempotent producer resends its last batch (same sequence), e.g. after a
        timeout: the committed log must not end up with its records twice. Each attempt is a
        distinct write for the spec image (value "id:attempt"), the same record for clients."""
        if self.last_idempotent is None:
            return
        ids, sequence, attempt = self.last_idempotent
        attempt = min(attempt + 1, ATTEMPTS_MAX - 1)
        self.last_idempotent = (ids, sequence, attempt)
        batch = build_batch([(None, f"{i}:{attempt}".encode(), (), None) for i in ids],
                            producer_id=1, producer_epoch=0, base_sequence=sequence)
        self._send(b, -1, ids, batch)

    def _send(self, b: int, acks: int, ids: list[int], data: bytes) -> None:
        def done(results):
            result = results[KEY]
            note(f"produce {ids} to {b} acks={acks} -> {result.error.name} at "
                 f"{result.base_offset}")
            if acks == -1 and result.error == ErrorCode.none:
                for k, i in enumerate(ids):
                    self.acked[i] = result.base_offset + k

        self.brokers[b].replica_manager.append_records(1000, acks, {KEY: data}, done)

    def consumer_fetch(self, b: int, offset: int) -> None:
        def done(results):
            for view_record in _records(results[KEY].records):
                if view_record[0] >= offset:
                    self.read[view_record[1]] = view_record[0]

        self.brokers[b].replica_manager.fetch(-1, 0, 1, 1 << 20, {KEY: FetchPartition(offset)},
                                              done)

    def replicate(self, follower: int, max_bytes: int = 1 << 20, drop: bool = False) -> str:
        """One follower fetch round; drop=True loses the response (the leader saw the fetch)."""
        p = self.partition(follower)
        if p is None or p.is_leader or p.leader_id is None or p.leader_id < 0:
            return "no leader known"
        leader = self.brokers.get(p.leader_id)
        if leader is None:
            return "leader down"
        request = FetchPartition(p.log_end_offset, max_bytes, p.leader_epoch,
                                 p.log.epochs.latest_epoch)
        answers = []
        leader.replica_manager.fetch(follower, 0, 1, max_bytes, {KEY: request}, answers.append)
        r = answers[0][KEY]
        if drop:
            return "dropped"
        return apply_fetch_response(p, r.error, r.diverging_epoch, r.records, r.high_watermark)

    def commit_isr_change(self) -> None:
        b, epoch, isr = self.proposals.pop(0)
        error = self.controller.alter_isr(b, TOPIC, 0, epoch, isr)
        note(f"alter_isr from {b} epoch {epoch} {isr} -> {error.name}")
        if self.brokers.get(b) is not None:  # as the control channel does: the answer brings
            self.propagate(b)  # the newest image, then the proposal is settled
            self.brokers[b].replica_manager.isr_answered(KEY, isr)

    def propagate(self, b: int) -> None:
        if self.brokers.get(b) is not None:
            self.brokers[b].apply_metadata(self.controller.metadata)

    def elect(self, b: int) -> None:
        note(f"elect {b} -> {self.controller.elect_leader(TOPIC, 0, b).name}")

    def crash(self, b: int) -> None:
        self.brokers[b] = None
        self.proposals = [p for p in self.proposals if p[0] != b]
        self.controller.fence(b)

    def restart(self, b: int) -> None:
        self.brokers[b] = self._new_broker(b)
        self.controller.register(b, "127.0.0.1", 9000 + b)
        self.propagate(b)

    def tick(self, ms: int) -> None:
        self.clock.now_ms += ms
        for b in self.alive():
            self.brokers[b].advance_clock()


def _ids(value: bytes) -> tuple[int, int]:
    base, _, attempt = value.partition(b":")
    return int(base), int(attempt or 0)


def _records(data: bytes):
    from kafkaref.impl.protocol.records import split_batches

    _, views = split_batches(data)
    for view in views:
        for record in decode_batch(view).records:
            yield record.offset, _ids(record.value)[0]


class CoreMachine(RuleBasedStateMachine):
    """Rules on the cluster factory() builds (a CoreCluster or one like it): produce (plain and
    idempotent, with retries), consumer fetches, replication, ISR changes, metadata delivery,
    elections, crashes, restarts and ticks; the invariants of the module docstring."""

    def __init__(self, factory: Callable[[], CoreCluster]) -> None:
        super().__init__()
        self.cluster = factory()
        self.size = len(self.cluster.brokers)

    def _broker(self, index: int) -> int:
        return sorted(self.cluster.brokers)[index % self.size]

    @rule(index=st.integers(0, 7), acks=st.sampled_from([-1, 1]), count=st.integers(1, 3))
    def produce(self, index, acks, count):
        b = self._broker(index)
        if self.cluster.brokers[b] is not None:
            self.cluster.produce(b, acks, count)

    @rule(index=st.integers(0, 7), count=st.integers(1, 2))
    def produce_idempotent(self, index, count):
        b = self._broker(index)
        if self.cluster.brokers[b] is not None:
            self.cluster.produce(b, -1, count, idempotent=True)

    @rule(index=st.integers(0, 7))
    def retry_idempotent(self, index):
        b = self._broker(index)
        if self.cluster.brokers[b] is not None:
            self.cluster.retry_idempotent(b)

    @rule(index=st.integers(0, 7), back=st.integers(0, 3))
    def consumer_fetch(self, index, back):
        b = self._broker(index)
        p = self.cluster.partition(b)
        if p is not None:
            self.cluster.consumer_fetch(b, max(0, p.log_end_offset - back))

    @rule(index=st.integers(0, 7), times=st.integers(1, 3))
    def replicate(self, index, times):
        b = self._broker(index)
        for _ in range(times):
            note(f"replicate {b}: {self.cluster.replicate(b)}")

    @rule(index=st.integers(0, 7), short=st.booleans())
    def replicate_partly(self, index, short):
        """A fetch cut short by max_bytes (one batch), or whose response is lost in flight
        (the leader saw the fetch, the follower never got the answer)."""
        b = self._broker(index)
        outcome = self.cluster.replicate(b, max_bytes=1) if short else (
            self.cluster.replicate(b, drop=True))
        note(f"replicate {b} {'max_bytes=1' if short else 'response lost'}: {outcome}")

    @precondition(lambda self: self.cluster.proposals)
    @rule()
    def commit_isr_change(self):
        self.cluster.commit_isr_change()

    @rule(index=st.integers(0, 7))
    def propagate(self, index):
        self.cluster.propagate(self._broker(index))

    @rule(index=st.integers(0, 7))
    def elect(self, index):
        self.cluster.elect(self._broker(index))

    @precondition(lambda self: len(self.cluster.alive()) > 1)
    @rule(index=st.integers(0, 7))
    def crash(self, index):
        b = self._broker(index)
        if self.cluster.brokers[b] is not None:
            note(f"crash {b}")
            self.cluster.crash(b)

    @rule(index=st.integers(0, 7))
    def restart(self, index):
        b = self._broker(index)
        if self.cluster.brokers[b] is None:
            note(f"restart {b}")
            self.cluster.restart(b)

    @rule(ms=st.sampled_from([1, 100, 600, 1500]))
    def tick(self, ms):
        self.cluster.tick(ms)

    @invariant()
    def spec_invariants_hold(self):
        state = core_image(self.cluster)
        broken = image_violations(state)
        assert not broken, f"{broken} violated\n{render_state(state)}"

    @invariant()
    def client_properties_hold(self):
        """The model's client properties on the image with the records named as clients
        know them (acknowledged and read: id -> offset, judged against the leader)."""
        state = core_image(self.cluster, self.cluster.client_entries)
        ghost = Ghost(acked=frozenset((0, o, i) for i, o in self.cluster.acked.items()),
                      consumed=frozenset((0, o, i) for i, o in self.cluster.read.items()))
        broken = [name for name, holds in CLIENT_PROPERTIES.items() if not holds(state, ghost)]
        assert not broken, (f"{broken} violated: acked {self.cluster.acked}, read "
                            f"{self.cluster.read}, leader {state.partitions[0].control.leader}"
                            f"\n{render_state(state)}")

    @invariant()
    def no_record_committed_twice(self):
        """Idempotence: the committed prefix of a leader's log holds each record once."""
        for b in self.cluster.alive():
            p = self.cluster.partition(b)
            if p is None or not p.is_leader:
                continue
            ids = [r.id // ATTEMPTS_MAX
                   for r in self.cluster.record_ids(b)[: p.high_watermark]]
            assert len(ids) == len(set(ids)), f"duplicates committed on {b}: {ids}"
