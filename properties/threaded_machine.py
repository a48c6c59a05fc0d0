"""The model in lockstep with a broker that replicates by itself: ThreadedMachine, the model
machine's coarser rule set (no replica-fetch or ISR-commit rules; the model is settled after every
step; isolation and pause faults), over ThreadedCluster (properties/threaded_cluster.py), the
threaded brokers spoken to over sockets. Without a system under test it drives the model alone.

    TestThreaded = bind(ThreadedMachine, config=config, sut_factory=ThreadedCluster).TestCase

What is compared, and when (model time is logical, the broker runs real threads):

- Replication is the broker's own: there are no ReplicaFetch or CommitIsrChange rules. After
  every step the MODEL is driven to its replication fixed point (every live, connected follower
  fetches until nothing changes; every proposed ISR change is committed), and the BROKER is
  polled, with a deadline and no blind sleep, until its observable state equals the model's
  (`Settle`). That makes every step boundary a quiescent point. Settling less often would let a
  client request race the fetchers (a fetch sent before or after a follower's fetch sees a
  different hw), and those answers are timing, not semantics.
- Per step, exactly: every client response the model emits in the step (the request's own answer
  and any parked request the step completes or expires), matched by request id, as a client can
  see it: error code, base offset, fetch hw, first offset and the records (offset, value, batch
  base), ListOffsets offset, a network error for a request whose broker died. The order of
  responses to different connections is not compared (the broker answers them from different
  threads). How a response left the broker (immediate / completed / expired) and the model's
  record ids are not on the wire. The batches' partition leader epoch is not compared: the
  model bumps the leader epoch when a follower is fenced (the ZooKeeper-era controller), the
  controller here does not (KRaft since KAFKA-15021); both are lawful numberings.
  The adapter waits for exactly the responses the model expects (bounded); a response the model
  did not expect shows up in the step where it arrived or at the latest in the next Settle.
- At each settle point: per partition the leader and the ISR that every live broker's Metadata
  answer reports, and the leader's hw (ListOffsets LATEST); plus, to know the broker is really
  quiescent (not compared through the protocol: no API exposes a follower), every running
  replica's log end offset and hw read under its broker's core lock.

Kept out of this alphabet, and why: crashes that leave a partition without a live ISR member
(the model's KIP-966 ELR and the controller's offline election differ); crashes while a broker
is cut off or paused (the model bumps the leader epoch when a follower is fenced, as the
ZooKeeper-era controller did, so its leader forgets every follower's position and restarts
their lag clocks; the controller here does not bump it, as KRaft since KAFKA-15021, and the
leader keeps both: once a follower cannot fetch again, the ISR shrinks at different times);
unclean elections, fetch shapes whose answer depends on byte accounting (min_bytes > 1, small max_bytes
other than 1: the model counts value + 1 per record, the broker batch bytes; the core lockstep
settles that rule), ticks and elections while a broker is paused (the paused broker's clock work
would happen at resume, not at the tick), client requests to a paused broker (they would hang).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import Effect, ElectionResult
from kafkaref.model.render import render_state
from kafkaref.model.values import ModelState
from kafkaref.properties.model_machine import (
    BROKERS,
    PARTITIONS,
    REPLICA_INDEXES,
    assert_model_invariants,
    delete_records_offset,
)
from kafkaref.properties.stateful import note, per_machine
from kafkaref.properties.threaded_cluster import (
    CLIENT_RESPONSES,
    Awaiting,
    Heal,
    Isolate,
    Observation,
    PartitionView,
    Pause,
    Pipelined,
    Resume,
    Settle,
    client_views,
)

# -- the model's side of a settle point ---------------------------------------------------------

def observe_model(state: ModelState, hidden: frozenset[int] = frozenset()) -> Observation:
    """The model's state as the broker's settle point shows it (`hidden`: paused brokers)."""
    views = []
    for part in state.partitions:
        control = part.control
        leader = control.leader if control.leader is not None else -1
        lead = part.replicas[leader] if leader >= 0 else None
        visible = leader >= 0 and state.alive[leader] and leader not in hidden
        replicas = tuple(
            (r.leo, r.hw) if r is not None and state.alive[b] and b not in hidden else None
            for b, r in enumerate(part.replicas))
        known = () if not visible or lead is None else tuple(
            (lead.follower_offsets[b], lead.caught_up_ms[b]) if b in control.isr else None
            for b in part_followers(state, part, leader))
        views.append(PartitionView(leader, tuple(sorted(control.isr)),
                                   lead.hw if visible and lead is not None else -1, replicas,
                                   known))
    return Observation(tuple(views))


def part_followers(state: ModelState, part, leader: int) -> list[int]:
    """The brokers holding a replica of part, but the leader, in id order."""
    return [b for b, r in enumerate(part.replicas) if r is not None and b != leader]


# -- the machine --------------------------------------------------------------------------------

SETTLE_ROUNDS_MAX = 64
PIPELINED_PAIRS = 4  # unmuted (M9), 8 requests in flight on two I/O threads reorder often


# Tick lengths follow the configuration; brokers, partitions and replica indexes: the model machine's.
TICKS = per_machine(lambda m: st.sampled_from((1, 40, 600, m.config.replica_lag_time_max_ms + 1)))


class ThreadedMachine(RuleBasedStateMachine):
    """The model machine's coarse rule set for a broker that replicates by itself (see the
    module docstring); sut_factory(config) builds the system (None: the model alone, the
    benchmark's baseline)."""

    def __init__(self, config: ClusterConfig, sut_factory=None,
                 check_spec_invariants: bool = True) -> None:
        super().__init__()
        self.config, self.check_spec_invariants = config, check_spec_invariants
        self.model = ReferenceModel(config)
        self.isolated: set[int] = set()
        self.paused: set[int] = set()
        self.next_request_id = 0
        self.sut = sut_factory(config) if sut_factory is not None else None
        for p in range(config.partitions):
            self.model.feed(ev.Elect(p, config.assignment(p)[0]))
        self.step(None)

    def teardown(self) -> None:
        if self.sut is not None and hasattr(self.sut, "close"):
            self.sut.close()

    # -- plumbing -------------------------------------------------------------------------
    def step(self, event, fed: Sequence[Effect] | None = None) -> None:
        """Feed the model the event (unless the rule did: `fed` is what it answered; faults
        the model has no event for feed nothing), settle it, then do the event on the
        system and compare the answers and the settle point."""
        if fed is not None:
            expected = list(fed)
        elif event is None or isinstance(event, Isolate | Heal | Pause | Resume):
            expected = []
        else:
            expected = list(self.model.feed(event))
        expected.extend(self.settle_model())
        answers = [e for e in expected if isinstance(e, CLIENT_RESPONSES)]
        if isinstance(event, ev.Elect):
            answers += [e for e in expected if isinstance(e, ElectionResult)]
        note(f"{event!r} -> {client_views(answers)!r}")
        if self.sut is None:
            return
        if event is not None:
            ids = frozenset(e.request_id for e in answers if hasattr(e, "request_id"))
            actual = self.sut.feed(Awaiting(event, ids))
            assert client_views(answers) == client_views(actual), (
                f"{event!r}:\n  model  {client_views(answers)!r}\n  broker "
                f"{client_views(actual)!r}\n{render_state(self.model.state)}")
        want = observe_model(self.model.state, frozenset(self.paused))
        (seen, *extra) = self.sut.feed(Settle(want))
        assert seen == want and not extra, (
            f"settle after {event!r}:\n  model  {want!r}\n  broker {seen!r}\n  unexpected "
            f"answers {client_views(extra)!r}\n{render_state(self.model.state)}")

    def settle_model(self) -> list[Effect]:
        """Replicate to the fixed point: live, connected followers fetch until nothing
        changes; a proposed ISR change is committed."""
        out: list[Effect] = []
        cut = self.isolated | self.paused
        for _ in range(SETTLE_ROUNDS_MAX):
            before = self.model.state
            state = before
            for p in range(self.config.partitions):
                for f in self.config.assignment(p):
                    event = replica_fetch_for(self.model.state, f, p)
                    if (event is None or not state.alive[f] or not state.alive[event.leader]
                            or f in cut or event.leader in cut):
                        continue
                    out.extend(self.model.feed(event))
                leader = self.model.state.partitions[p].control.leader
                # an isolated leader still reaches the controller; a paused one does not
                if (leader is not None and leader not in self.paused
                        and self.model.state.alive[leader]
                        and self.model.state.partitions[p].replicas[leader].pending_isr
                        is not None):
                    out.extend(self.model.feed(ev.CommitIsrChange(p)))
            if self.model.state == before:
                return out
        raise AssertionError("the model's replication did not settle")

    def request_id(self) -> int:
        self.next_request_id += 1
        return self.next_request_id

    def target(self, p: int, to_leader: bool, broker: int) -> int:
        """The leader (if asked and reachable) or a broker that is not paused."""
        leader = self.model.state.partitions[p].control.leader
        if to_leader and leader is not None and leader not in self.paused:
            return leader
        running = [b for b in range(self.config.brokers) if b not in self.paused]
        return running[broker % len(running)]

    def would_strand(self, broker: int) -> bool:
        alive = self.model.state.alive
        return any(not ({r for r in part.control.isr if alive[r]} - {broker})
                   for part in self.model.state.partitions)

    # -- client requests ------------------------------------------------------------------
    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS,
          acks=st.sampled_from([-1, -1, 1, 0]), count=st.integers(1, 3),
          timeout_ms=st.sampled_from([0, 50, 1000, 60_000]))
    def produce(self, p, to_leader, broker, acks, count, timeout_ms):
        broker = self.target(p, to_leader, broker)
        values = tuple(b"v%d" % (self.next_request_id * 4 + i) for i in range(count))
        self.step(ev.Produce(self.request_id(), broker, p, values, acks, timeout_ms))

    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS, back=st.integers(-1, 3),
          max_wait_ms=st.sampled_from([0, 0, 100, 5000]),
          max_bytes=st.sampled_from([1, 1 << 20]), client_metadata=st.booleans())
    def consumer_fetch(self, p, to_leader, broker, back, max_wait_ms, max_bytes, client_metadata):
        """client_metadata: a follower may answer (KIP-392): sent at Fetch v11 or v18, else at
        v10 (threaded_cluster.fetch_version)."""
        broker = self.target(p, to_leader, broker)
        replica = self.model.state.partitions[p].replicas[broker]
        hw = replica.hw if replica is not None else 0
        offset = max(0, hw - back) if back >= 0 else hw + 1
        self.step(ev.Fetch(self.request_id(), broker, p, offset, max_bytes, 1, max_wait_ms,
                           from_follower_allowed=client_metadata))

    # The low watermark counts the followers the leader's metadata says are live (Kafka's
    # lowWatermarkIfLeader: metadataCache.hasAliveBroker); a broker restarted while isolated
    # is alive to the model, which has no isolation, but not registered with the controller
    @precondition(lambda self: not self.isolated)
    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS, back=st.integers(-2, 2),
          timeout_ms=st.sampled_from([0, 1000, 60_000]))
    def delete_records(self, p, to_leader, broker, back, timeout_ms):
        """Up to hw - back; back -1: one past the hw, -2: HIGH_WATERMARK (the model machine's)."""
        broker = self.target(p, to_leader, broker)
        offset = delete_records_offset(self.model.state.partitions[p].replicas[broker], back)
        self.step(ev.DeleteRecords(self.request_id(), broker, p, offset, timeout_ms))

    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS, latest=st.booleans(),
          pipelined=st.sampled_from([False, False, True]))
    def list_offsets(self, p, to_leader, broker, latest, pipelined):
        """pipelined: EARLIEST and LATEST, several times, on one connection, each sent
        before the first is answered (per-connection ordering, M9)."""
        broker = self.target(p, to_leader, broker)
        if not pipelined:
            self.step(ev.ListOffsets(self.request_id(), broker, p, ev.LATEST if latest else ev.EARLIEST))
            return
        events = tuple(ev.ListOffsets(self.request_id(), broker, p, t)
                       for t in (ev.EARLIEST, ev.LATEST) * PIPELINED_PAIRS)
        fed = [effect for event in events for effect in self.model.feed(event)]
        self.step(Pipelined(events), fed=fed)

    # -- time -----------------------------------------------------------------------------
    @precondition(lambda self: not self.paused)
    @rule(ms=TICKS)
    def tick(self, ms):
        self.step(ev.Tick(ms))

    # -- faults ---------------------------------------------------------------------------
    def crashable(self) -> list[int]:
        """Live brokers whose crash leaves every partition a live ISR member, while no broker
        is cut off or paused (module docstring: the model's leader-epoch bump on a fenced
        follower makes the leader forget every follower's position and restart their
        lag clocks; the broker keeps both, so with a follower unable to fetch again the
        ISR shrinks at different times)."""
        if self.paused or self.isolated or sum(self.model.state.alive) < 2:
            return []
        return [b for b in range(self.config.brokers)
                if self.model.state.alive[b] and not self.would_strand(b)]

    def running(self) -> list[int]:
        return [b for b in range(self.config.brokers)
                if self.model.state.alive[b] and b not in self.paused]

    def pausable(self) -> list[int]:
        """Running brokers with nothing parked (a paused broker's expirations would happen
        at resume, not at the tick), as long as another keeps running."""
        running = self.running()
        if len(running) < 2:
            return []
        return [b for b in running
                if not any(op.broker == b for op in self.model.state.purgatory)]

    @precondition(lambda self: bool(self.crashable()))
    @rule(broker=BROKERS)
    def crash(self, broker):
        candidates = self.crashable()
        broker = candidates[broker % len(candidates)]
        model = self.model
        expected = list(model.feed(ev.CrashBroker(broker)))
        for p in range(self.config.partitions):  # the controller's election, mirrored
            control = model.state.partitions[p].control
            if control.leader is None:
                candidate = next(r for r in self.config.assignment(p)
                                 if r in control.isr and model.state.alive[r])
                model.feed(ev.Elect(p, candidate))
        self.isolated.discard(broker)
        self.step(ev.CrashBroker(broker), fed=expected)

    @precondition(lambda self: not all(self.model.state.alive))
    @rule(broker=BROKERS)
    def restart(self, broker):
        dead = [b for b in range(self.config.brokers) if not self.model.state.alive[b]]
        self.step(ev.RestartBroker(dead[broker % len(dead)]))

    @precondition(lambda self: bool(self.running()))
    @rule(broker=BROKERS)
    def flush(self, broker):
        running = self.running()
        self.step(ev.Flush(running[broker % len(running)]))

    @precondition(lambda self: not self.paused)
    @rule(p=PARTITIONS, index=REPLICA_INDEXES)
    def elect(self, p, index):
        self.step(ev.Elect(p, self.config.assignment(p)[index]))

    @rule(broker=BROKERS)
    def isolate(self, broker):
        self.isolated.add(broker)
        self.step(Isolate(broker))

    @precondition(lambda self: bool(self.isolated))
    @rule(broker=BROKERS)
    def heal(self, broker):
        isolated = sorted(self.isolated)
        broker = isolated[broker % len(isolated)]
        self.isolated.discard(broker)
        self.step(Heal(broker))

    @precondition(lambda self: bool(self.pausable()))
    @rule(broker=BROKERS)
    def pause(self, broker):
        candidates = self.pausable()
        broker = candidates[broker % len(candidates)]
        self.paused.add(broker)
        self.step(Pause(broker))

    @precondition(lambda self: bool(self.paused))
    @rule(broker=BROKERS)
    def resume(self, broker):
        paused = sorted(self.paused)
        broker = paused[broker % len(paused)]
        self.paused.discard(broker)
        self.step(Resume(broker))

    # -- invariants -----------------------------------------------------------------------
    @invariant()
    def model_invariants_hold(self):
        assert_model_invariants(self.model, self.check_spec_invariants)
