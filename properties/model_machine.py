"""A reusable Hypothesis state machine over the reference model (like zarr's testing package).

make_model_machine(config, sut_factory=None) returns a RuleBasedStateMachine class whose rules
are client requests, replica fetches, clock ticks and faults (crashes, restarts, elections,
ISR changes, flushes). Every event goes to the model; when a system under test is given (a
factory taking the ClusterConfig and returning an object with feed(event) -> effects, such as
a future adapter over impl/core), the same event goes to it and its effects must equal the
model's (or satisfy `compare`). Invariants: the model's client-level properties
(model/properties.py) and the spec's invariants on the refinement image of every partition.

    TestWalk = make_model_machine(ClusterConfig(brokers=3)).TestCase
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import Effect
from kafkaref.model.events import (
    EARLIEST,
    LATEST,
    CommitIsrChange,
    CrashBroker,
    Elect,
    Event,
    Fetch,
    Flush,
    ListOffsets,
    Produce,
    RestartBroker,
    Tick,
)
from kafkaref.model.refinement import image_violations
from kafkaref.model.render import render_state


class SystemUnderTest(Protocol):
    def feed(self, event: Event) -> Sequence[Effect]: ...


Compare = Callable[[Sequence[Effect], Sequence[Effect]], bool]


def _same_effects(expected: Sequence[Effect], actual: Sequence[Effect]) -> bool:
    return list(expected) == list(actual)


def make_model_machine(
    config: ClusterConfig,
    sut_factory: Callable[[ClusterConfig], SystemUnderTest] | None = None,
    compare: Compare = _same_effects,
    check_spec_invariants: bool = True,
    rules: str = "model",
) -> type[RuleBasedStateMachine]:
    """A state machine class driving the model (and optionally a system under test in lockstep).

    rules="model" (the default) has the full event alphabet; rules="threaded" is the coarser one
    for a broker that replicates by itself (no replica-fetch or ISR-commit rules; the model is
    settled after every step; isolation and pause faults): see properties/lockstep_threaded.py.
    """
    if rules == "threaded":
        from kafkaref.properties.lockstep_threaded import make_threaded_machine

        return make_threaded_machine(config, sut_factory, check_spec_invariants)
    if rules != "model":
        raise ValueError(f"rules must be 'model' or 'threaded', not {rules!r}")
    brokers = st.integers(0, config.brokers - 1)
    partitions = st.integers(0, config.partitions - 1)

    class ModelMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.model = ReferenceModel(config)
            self.sut = sut_factory(config) if sut_factory is not None else None
            self.next_request_id = 0
            for p in range(config.partitions):  # start with leaders, as a real cluster does
                self.feed(Elect(p, config.assignment(p)[0]))

        # -- plumbing ---------------------------------------------------------------------

        def feed(self, event: Event) -> Sequence[Effect]:
            expected = self.model.feed(event)
            note(f"{event!r} -> {list(expected)!r}")
            if self.sut is not None:
                actual = self.sut.feed(event)
                assert compare(expected, actual), f"{event!r}: model {expected!r}, system {actual!r}"
            return expected

        def request_id(self) -> int:
            self.next_request_id += 1
            return self.next_request_id

        def leader_or_any(self, p: int, pick_leader: bool, broker: int) -> int:
            leader = self.model.state.partitions[p].control.leader
            return leader if pick_leader and leader is not None else broker

        # -- client requests --------------------------------------------------------------

        @rule(p=partitions, to_leader=st.booleans(), broker=brokers, acks=st.sampled_from([-1, -1, 1, 0]),
              count=st.integers(1, 3), timeout_ms=st.sampled_from([0, 50, 1000, 60_000]))
        def produce(self, p, to_leader, broker, acks, count, timeout_ms):
            broker = self.leader_or_any(p, to_leader, broker)
            values = tuple(b"v%d" % (self.next_request_id * 4 + i) for i in range(count))
            self.feed(Produce(self.request_id(), broker, p, values, acks, timeout_ms))

        @rule(p=partitions, to_leader=st.booleans(), broker=brokers, back=st.integers(-1, 3),
              min_bytes=st.sampled_from([1, 1, 8, 100]), max_wait_ms=st.sampled_from([0, 0, 100, 5000]),
              max_bytes=st.sampled_from([1, 16, 1 << 20]))
        def consumer_fetch(self, p, to_leader, broker, back, min_bytes, max_wait_ms, max_bytes):
            broker = self.leader_or_any(p, to_leader, broker)
            replica = self.model.state.partitions[p].replicas[broker]
            hw = replica.hw if replica is not None else 0
            offset = max(0, hw - back) if back >= 0 else hw + 1
            self.feed(Fetch(self.request_id(), broker, p, offset, max_bytes, min_bytes, max_wait_ms))

        @rule(p=partitions, to_leader=st.booleans(), broker=brokers, latest=st.booleans())
        def list_offsets(self, p, to_leader, broker, latest):
            broker = self.leader_or_any(p, to_leader, broker)
            self.feed(ListOffsets(self.request_id(), broker, p, LATEST if latest else EARLIEST))

        # -- replication and time ---------------------------------------------------------

        @rule(p=partitions, follower=brokers, times=st.integers(1, 3))
        def replicate(self, p, follower, times):
            for _ in range(times):
                event = replica_fetch_for(self.model.state, follower, p)
                if event is None or not self.model.state.alive[follower]:
                    return
                self.feed(event)

        @rule(ms=st.sampled_from([1, 40, 600, config.replica_lag_time_max_ms + 1]))
        def tick(self, ms):
            self.feed(Tick(ms))

        @rule(p=partitions)
        def commit_isr_change(self, p):
            self.feed(CommitIsrChange(p))

        # -- faults -----------------------------------------------------------------------

        @precondition(lambda self: sum(self.model.state.alive) > 1)
        @rule(broker=brokers)
        def crash(self, broker):
            self.feed(CrashBroker(broker))

        @rule(broker=brokers)
        def restart(self, broker):
            self.feed(RestartBroker(broker))

        @rule(p=partitions, index=st.integers(0, config.replication_factor - 1), unclean=st.booleans())
        def elect(self, p, index, unclean):
            self.feed(Elect(p, config.assignment(p)[index], unclean and config.unclean_leader_election))

        @rule(broker=brokers)
        def flush(self, broker):
            self.feed(Flush(broker))

        # -- invariants -------------------------------------------------------------------

        @invariant()
        def client_properties_hold(self):
            broken = self.model.check()
            assert not broken, f"{broken} violated in\n{render_state(self.model.state)}"

        @invariant()
        def spec_invariants_hold_on_the_image(self):
            if check_spec_invariants:
                broken = image_violations(self.model.state)
                assert not broken, f"spec invariants {broken} violated in\n{render_state(self.model.state)}"

    ModelMachine.__name__ = ModelMachine.__qualname__ = "ModelMachine"
    return ModelMachine


def run_walk(config: ClusterConfig, events: Sequence[Event]) -> ReferenceModel:
    """Replay a list of events on a fresh model (for reproducing a walk outside Hypothesis)."""
    model = ReferenceModel(config)
    model.feed_all(events)
    return model


__all__ = ["make_model_machine", "run_walk", "SystemUnderTest", "Compare"]
