"""Refinement: every model step maps to a sequence of spec (kip320) steps or a stutter, except
the steps the spec does not model (crashes that lose data, KIP-966 rules, unclean elections),
and the spec invariants hold on the abstract states."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import Bug, ClusterConfig
from kafkaref.model.events import CommitIsrChange, CrashBroker, Elect, Produce, RestartBroker, Tick
from kafkaref.model.refinement import (
    RefinementReport,
    StepMapping,
    check_trace,
    distance,
    image,
    image_violations,
)
from kafkaref.model.values import initial_state
from kafkaref.model.workload import FAULTY, Workload
from kafkaref.spec.state import Bounds, QuorumState
from kafkaref.spec.state import initial_state as spec_initial_state


def test_initial_state_maps_to_the_spec_initial_state():
    config = ClusterConfig(brokers=3)
    assert image(initial_state(config)) == spec_initial_state(Bounds(3, 2, 2, 2))


def scripted(config: ClusterConfig) -> ReferenceModel:
    model = ReferenceModel(config)
    model.feed(Elect(0, 0))
    model.feed(Produce(1, 0, 0, (b"a", b"b")))
    for follower in (1, 2, 1, 2):
        model.replicate(follower)
    model.feed(Elect(0, 1))
    model.feed(Produce(2, 1, 0, (b"c",), acks=1))
    for follower in (0, 2, 0, 2):
        model.replicate(follower)
    model.feed(CrashBroker(2))
    model.feed(RestartBroker(2))
    for _ in range(3):
        model.replicate(2)
    model.feed(CommitIsrChange(0))
    return model


def test_a_scripted_run_refines_the_spec():
    config = ClusterConfig(brokers=3)
    report = check_trace(config, scripted(config).events)
    assert report.ok, report.unmatched
    kinds = report.counts()
    assert kinds["spec"] >= 10 and kinds.get("beyond", 0) == 1  # the crash lost unflushed records
    labels = [label for step in report.steps for label in step.spec_actions]
    assert "FencedLeaderExpandIsr(r2 adds r3)" in labels
    assert any(label.startswith("FencedBecomeFollowerAndTruncate(r1 follows r2") for label in labels)


@pytest.mark.parametrize("seed", range(6))
def test_random_faulty_walks_refine_the_spec(seed):
    config = ClusterConfig(brokers=3, replica_lag_time_max_ms=50)
    events = list(Workload(seed, FAULTY, batch=1).events(initial_state(config), 40))
    report = check_trace(config, events, budget=3000)
    assert report.ok, (report.unmatched, report.invariant_failures)


def test_spec_invariants_hold_on_the_image_along_random_walks():
    config = ClusterConfig(brokers=3, partitions=2, replica_lag_time_max_ms=50)
    workload = Workload(11, FAULTY)
    model = ReferenceModel(config)
    for _ in range(600):
        model.feed(workload.next_event(model.state))
        assert image_violations(model.state) == []


def test_truncate_to_hw_does_not_refine_kip320():
    # B1 at the model level: a follower's truncation to its own hw on becoming follower is no
    # kip320 step (kip320 truncates after the last record both logs share).
    config = ClusterConfig(brokers=2, replication_factor=2, min_insync_replicas=1,
                           bugs={Bug.TRUNCATE_TO_HW})
    model = ReferenceModel(config)
    model.feed(Elect(0, 0))
    model.feed(Produce(1, 0, 0, (b"a",)))
    model.replicate(1)
    model.replicate(1)  # leader hw 1; b2 holds A with hw 0
    model.feed(Elect(0, 1))
    model.feed(Elect(0, 0))  # b2 becomes follower again and truncates A away
    report = check_trace(config, model.events)
    assert [s.kind for s in report.steps][-1] == "unmatched"
    assert [s.kind for s in report.steps][:-1].count("unmatched") == 0
    assert not report.ok


@pytest.mark.parametrize("kinds, failures, ok", [
    (("spec", "stutter", "beyond", "known-divergence"), (), True),
    (("spec", "unmatched"), (), False),  # an unmatched step alone fails the report
    (("spec",), ((1, "StrongIsr"),), False),  # so does a spec invariant alone
])
def test_a_report_is_ok_only_with_every_step_mapped_and_every_invariant_held(kinds, failures, ok):
    # the fresh sample's 00274 (`and` read as `or`) passed: failing reports had both at once
    steps = tuple(StepMapping(Tick(1), kind) for kind in kinds)
    assert RefinementReport(steps, failures).ok == ok


def test_known_divergence_lag_shrink_of_a_follower_that_did_catch_up():
    # The spec's shrink guard reads the follower's real log; Kafka's leader only knows the
    # position of the follower's last fetch. Shrinking more is safe; see MODEL.md.
    config = ClusterConfig(brokers=3, replica_lag_time_max_ms=100)
    model = ReferenceModel(config)
    model.feed(Elect(0, 0))
    model.feed(Produce(1, 0, 0, (b"a",), acks=1))
    model.replicate(1)
    model.replicate(2)
    model.feed(Tick(200))
    model.feed(CommitIsrChange(0))
    report = check_trace(config, model.events)
    assert [s.kind for s in report.steps][-1] == "known-divergence"
    assert report.ok and not report.invariant_failures


def test_the_distance_is_zero_on_the_image_and_grows_with_each_quorum_difference():
    """The search accepts a spec state at distance 0, so each way a spec state can differ
    from the model's image must count: one differing field alone, or two at once, is never
    taken for a match (a term that subtracts would cancel another)."""
    config = ClusterConfig(brokers=3)
    target = image(scripted(config).state)
    lagging = (False,) * len(target.logs)
    assert distance(target, target, lagging) == 0
    q = target.quorum
    changes = {"leader": attrs.evolve(q, leader=(q.leader + 1) % 3),
               "epoch": attrs.evolve(q, leader_epoch=q.leader_epoch + 1),
               "isr": attrs.evolve(q, isr=q.isr - {q.leader})}
    for name, quorum in changes.items():
        assert distance(attrs.evolve(target, quorum=quorum), target, lagging) == 1, name
    both = QuorumState(q.leader_epoch + 1, (q.leader + 1) % 3, q.isr)
    assert distance(attrs.evolve(target, quorum=both), target, lagging) == 2
    # the leader's own view of the ISR counts too (the fresh sample's 00163: it added 0)
    views = list(target.replicas)
    views[q.leader] = attrs.evolve(views[q.leader], isr=views[q.leader].isr - {q.leader})
    assert distance(attrs.evolve(target, replicas=tuple(views)), target, lagging) == 1


@given(st.lists(st.integers(0, 2), max_size=5))
def test_a_log_counts_every_record_after_the_first_difference(picks):
    """The spec only truncates a log back to the prefix it shares with the leader's, so every
    record past the first difference is one to remove or to copy again, even where the two
    logs agree further on (the fresh sample's 00197: records equal after a difference counted as
    shared passed the model layer)."""
    config = ClusterConfig(brokers=3)
    target = image(scripted(config).state)
    records = target.logs[0]
    spec_log = tuple(records[i] for i in picks)
    shared = 0
    while shared < min(len(spec_log), len(records)) and spec_log[shared] == records[shared]:
        shared += 1
    lagging = (False,) * len(target.logs)
    moved = attrs.evolve(target, logs=(spec_log, *target.logs[1:]))
    assert distance(moved, target, lagging) == len(spec_log) + len(records) - 2 * shared
