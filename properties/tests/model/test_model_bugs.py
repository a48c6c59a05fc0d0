"""Each bug variant of the model (docs/bugs.md) is caught with a shortest counterexample by
exhaustive breadth-first exploration, and the same bounds hold for the correct model.

Bounds are chosen per variant as the smallest event alphabet that exposes it; the counterexample
lengths are the number of states, the initial one included.
"""

from __future__ import annotations

import pytest

from kafkaref.model.explore_target import build
from kafkaref.model.properties import CLIENT_PROPERTIES
from kafkaref.model.render import diff_states
from kafkaref.spec.explore import explore, format_trace

QUIET = dict(ticks=0, crashes=0, reads=0, flushes=False)

# variant -> (bounds, {invariant: shortest length} for spec+client checks, (client property, length))
CASES = {
    # B1: a follower truncates to its own hw on becoming follower and drops a committed record.
    "truncate-to-hw": (
        dict(QUIET, replicas=2, max_records=1, max_epoch=2, min_insync_replicas=1),
        ("StrongIsr", 7),
        (dict(crashes=1, max_epoch=4), "AckedWritesSurvive", 8),
    ),
    # B8: hw computed from the committed ISR while an addition is in flight.
    "hw-without-maximal-isr": (
        dict(QUIET, replicas=2, max_records=1, max_epoch=1, ticks=1, min_insync_replicas=1),
        ("StrongIsr", 7),
        ({}, "AckedWritesSurvive", 8),
    ),
    # B9: hw advancing while the ISR is below min.insync.replicas, then a crash of the last member.
    "hw-under-min-isr": (
        dict(QUIET, replicas=2, max_records=1, max_epoch=2, ticks=1, crashes=1, reads=1,
             min_insync_replicas=2, acks=(1,), elections=False),
        ("ConsumedRecordsSurvive", 8),
        ({}, "ConsumedRecordsSurvive", 8),
    ),
    # M4: consumers served above the hw read a record a clean election then drops.
    "read-above-hw": (
        dict(QUIET, replicas=2, max_records=1, max_epoch=1, reads=1, min_insync_replicas=1),
        ("ConsumedRecordsSurvive", 5),
        ({}, "ConsumedRecordsSurvive", 5),
    ),
}


def shortest(options, client_only=False):
    starts, successors, invariants, describe = build(options)
    if client_only:
        invariants = {k: v for k, v in invariants.items() if k in CLIENT_PROPERTIES}
    return explore(starts, successors, invariants), describe


@pytest.mark.parametrize("bug", sorted(CASES))
def test_bug_variant_is_caught_with_a_shortest_counterexample(bug):
    bounds, (invariant, length), _ = CASES[bug]
    result, describe = shortest(dict(bounds, bugs=bug))
    assert result.violation is not None, f"{bug} not caught"
    trace = format_trace(result.violation, describe, lambda a, b: diff_states(a.state, b.state))
    assert (result.violation.invariant, result.violation.length) == (invariant, length), trace


@pytest.mark.parametrize("bug", sorted(CASES))
def test_bug_variant_breaks_a_client_level_property(bug):
    bounds, _, (more, prop, length) = CASES[bug]
    result, _ = shortest(dict(bounds, bugs=bug, **more), client_only=True)
    assert result.violation is not None
    assert (result.violation.invariant, result.violation.length) == (prop, length)


@pytest.mark.parametrize("bug", sorted(CASES))
def test_correct_model_passes_the_same_bounds(bug):
    bounds, _, (more, _, _) = CASES[bug]
    result, describe = shortest(dict(bounds, **more))
    assert result.complete
    assert result.violation is None, format_trace(result.violation, describe)


def test_counterexample_renders_step_by_step():
    bounds, _, _ = CASES["read-above-hw"]
    result, describe = shortest(dict(bounds, bugs="read-above-hw"))
    text = format_trace(result.violation, describe, lambda a, b: diff_states(a.state, b.state))
    assert "Invariant ConsumedRecordsSurvive violated after 5 states" in text
    assert "Fetch(" in text and "Elect(partition=0, leader=1" in text


# Random walks find M4 (read-above-hw): in 5 unseeded runs of the walk below the first failing walk
# was number 217, 20, 141 and 54, and one run had none in 300 (about 1 walk in 200 fails), so 300
# walks missed it about one seed in five; 2000 leave a miss very unlikely whatever the seed (a run
# stops generating soon after the first failure). They do not find B8 (hw-without-maximal-isr) in
# any budget a test can afford: no failure within 2000 walks in unseeded runs at 3 and at 2
# brokers; 300 walks had found it only for one particular derandomized sequence, which any change
# of code shifts (Hypothesis also draws constants from the loaded modules). B8 stays caught,
# exhaustively, by the two tests above (StrongIsr in 7 states, AckedWritesSurvive in 8) and on the
# impl by test_core_replica_manager::test_hw_uses_maximal_isr_while_change_is_in_flight.
@pytest.mark.slow
@pytest.mark.parametrize("bug", ["read-above-hw"])
def test_random_walk_finds_the_bug_and_shrinks_it(bug):
    # The Hypothesis machine (properties/model_machine.py) finds it and shrinks it; a minute or
    # more, hence slow.
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    from kafkaref.model.config import Bug, ClusterConfig
    from kafkaref.properties.model_machine import ModelMachine
    from kafkaref.properties.stateful import bind

    config = ClusterConfig(brokers=3, min_insync_replicas=1, replica_lag_time_max_ms=500,
                           bugs={Bug(bug)})
    machine = bind(ModelMachine, config=config, check_spec_invariants=False)
    walk = settings(max_examples=2000, stateful_step_count=40, derandomize=True, database=None,
                    deadline=None, suppress_health_check=list(HealthCheck), print_blob=False)
    with pytest.raises(AssertionError, match="Survive"):
        run_state_machine_as_test(machine, settings=walk)
