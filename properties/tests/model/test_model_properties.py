"""The client-level properties and the ghost history: each property is shown to hold on a run
and to fail on a hand-made history that breaks it; the machine drives a system under test in
lockstep; states render readably."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import settings
from kio.schema.errors import ErrorCode

from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import FetchResponse, ProduceResponse
from kafkaref.model.events import CrashBroker, Elect, Fetch, Produce, Tick
from kafkaref.model.properties import (
    Ghost,
    acked_writes_survive,
    consumed_records_survive,
    observe,
    offsets_dense_and_increasing,
    requests_answered_once_in_time,
)
from kafkaref.model.render import diff_states, render_state
from kafkaref.model.values import Entry, initial_state
from kafkaref.properties.model_machine import ModelMachine
from kafkaref.properties.stateful import bind


def acked_run() -> ReferenceModel:
    model = ReferenceModel(ClusterConfig(brokers=3))
    model.feed(Elect(0, 0))
    model.feed(Produce(1, 0, 0, (b"a",)))
    for follower in (1, 2, 1, 2):
        model.replicate(follower)
    return model


def test_acked_write_is_tracked_and_survives_a_clean_failover():
    model = acked_run()
    assert model.ghost.acked == {(0, 0, 0)}
    model.feed(CrashBroker(0))
    model.feed(Elect(0, 1))
    assert acked_writes_survive(model.state, model.ghost) and model.check() == []


def test_acked_write_missing_from_the_leader_is_a_violation():
    model = acked_run()
    ghost = attrs.evolve(model.ghost, acked=model.ghost.acked | {(0, 0, 99)})
    assert not acked_writes_survive(model.state, ghost)
    # ... unless the partition had an unclean election.
    assert acked_writes_survive(model.state, attrs.evolve(ghost, unclean=frozenset({0})))


def test_consumed_records_are_tracked():
    model = acked_run()
    model.feed(Fetch(2, 0, 0, 0))
    assert model.ghost.consumed == {(0, 0, 0)}
    ghost = attrs.evolve(model.ghost, consumed=frozenset({(0, 3, 7)}))
    assert not consumed_records_survive(model.state, ghost)


def test_requests_answered_twice_or_late_are_violations():
    model = acked_run()
    state = model.state
    twice = observe(model.ghost, Tick(1), state, state, (ProduceResponse(1, ErrorCode.none),))
    assert twice.errors and not requests_answered_once_in_time(state, twice)
    late = Ghost(outstanding=frozenset({(5, state.now_ms, 0, "fetch")}))
    assert not requests_answered_once_in_time(state, late)
    waiting = Ghost(outstanding=frozenset({(5, state.now_ms + 1, 0, "fetch")}))
    assert requests_answered_once_in_time(state, waiting)


def test_out_of_order_fetch_answers_are_violations():
    model = acked_run()
    model.feed(Fetch(9, 0, 0, 0, max_wait_ms=100, min_bytes=100))
    entries = (Entry(5, 0, b"x", 0), Entry(4, 0, b"y", 0))
    ghost = observe(model.ghost, Tick(1), model.state, model.state,
                    (FetchResponse(9, ErrorCode.none, 2, 0, entries),))
    assert any("out of order" in error for error in ghost.errors)


def test_malformed_logs_break_offsets_dense_and_increasing():
    model = acked_run()
    assert offsets_dense_and_increasing(model.state, model.ghost)
    part = model.state.partitions[0]
    bad = attrs.evolve(part.replicas[1], log=part.replicas[1].log.append((Entry(0, 0, b"dup", 1),)))
    replicas = (part.replicas[0], bad, part.replicas[2])
    state = attrs.evolve(model.state, partitions=(attrs.evolve(part, replicas=replicas),))
    assert not offsets_dense_and_increasing(state, model.ghost)


def two_records_on_a_follower():
    model = ReferenceModel(ClusterConfig(brokers=3))
    model.feed(Elect(0, 0))
    model.feed(Produce(1, 0, 0, (b"a", b"b")))
    for follower in (1, 2, 1, 2, 1, 2):  # the last round tells the followers the hw
        model.replicate(follower)
    return model


@pytest.mark.parametrize("changes, well_formed", [
    ({}, True),
    ({"log_start": 1, "epoch_cache": ((0, 1),), "flushed": 2}, True),  # DeleteRecords at 1
    ({"epoch_cache": ()}, False),  # the cache is not the log's own
    ({"hw": 3}, False),  # the hw past the log end
    ({"flushed": 3}, False),  # the flushed point past the log end
    ({"log_start": 1, "epoch_cache": ((0, 1),), "hw": 0, "flushed": 2}, False),  # start > hw
    ({"log_start": 1, "epoch_cache": ((0, 1),), "flushed": 0}, False),  # start > flushed
])
def test_each_clause_of_a_well_formed_log_fails_it_alone(changes, well_formed):
    """Each way a replica can break OffsetsDenseAndIncreasing's bounds does so alone (the fresh
    sample's 00318: an `and` between them read as `or` passed: every broken log the tests
    held broke two clauses at once)."""
    model = two_records_on_a_follower()
    part = model.state.partitions[0]
    follower = part.replicas[1]
    assert (follower.leo, follower.hw, follower.log_start, follower.epoch_cache) == (2, 2, 0, ((0, 0),))
    changed = attrs.evolve(follower, **changes)
    replicas = (part.replicas[0], changed, part.replicas[2])
    state = attrs.evolve(model.state, partitions=(attrs.evolve(part, replicas=replicas),))
    assert offsets_dense_and_increasing(state, model.ghost) == well_formed


class ModelAsSystem:
    """A stand-in system under test: a second model (what impl/core's adapter will replace)."""

    def __init__(self, config):
        self.model = ReferenceModel(config)

    def feed(self, event):
        return self.model.feed(event)


TestLockstepAgainstASecondModel = bind(
    ModelMachine, config=ClusterConfig(brokers=3, replica_lag_time_max_ms=500),
    sut_factory=ModelAsSystem,
    check_spec_invariants=False,
).TestCase
TestLockstepAgainstASecondModel.settings = settings(TestLockstepAgainstASecondModel.settings,
                                                    max_examples=15)


def test_lockstep_notices_a_diverging_system():
    import pytest
    from hypothesis.stateful import run_state_machine_as_test

    class Forgetful(ModelAsSystem):
        def feed(self, event):
            effects = super().feed(event)
            return effects[1:] if isinstance(event, Produce) else effects

    machine = bind(ModelMachine, config=ClusterConfig(brokers=3), sut_factory=Forgetful,
                   check_spec_invariants=False)
    with pytest.raises(AssertionError, match="model"):
        run_state_machine_as_test(machine, settings=settings(max_examples=20, database=None))


def test_rendering_shows_leaders_logs_and_purgatory():
    model = ReferenceModel(ClusterConfig(brokers=3))
    model.feed(Elect(0, 0))
    before = model.state
    model.feed(Produce(1, 0, 0, (b"a", b"b")))
    text = render_state(model.state)
    assert "b1* log [0:r0/e0 1:r1/e0]" in text
    assert "purgatory: produce #1 at b1 p0 needs hw>=2" in text
    assert any("purgatory" in line for line in diff_states(before, model.state))
    assert render_state(initial_state(ClusterConfig())).startswith("t=0ms")
