"""The spec finds each historical replication bug again, with its known shortest counterexample,
and the correct protocol (KIP-320) holds. Lengths count states, the initial state included."""

import pytest

from kafkaref.spec.check import CLASSIC_INVARIANTS, run_spec
from kafkaref.spec.state import Bounds

SMALL = dict(log_size=2, max_records=2, max_epoch=2)


@pytest.mark.parametrize(
    "variant, replicas, invariant, length",
    [
        # B1. The 10-state trace is the catalogue's story (r2 still in the quorum ISR), found as
        # the shortest StrongIsr violation. WeakIsr alone is broken one step sooner: the
        # controller drops r2 from the quorum ISR, r1 still counts it in its own ISR, and r2
        # truncates on the request that dropped it (see spec/SPEC.md, "B1").
        ("truncate_to_hw", 2, "StrongIsr", 10),
        ("truncate_to_hw", 2, "WeakIsr", 9),
        ("kip101", 2, "StrongIsr", 12),  # B3
        ("kip279", 3, "StrongIsr", 11),  # B4
        ("kip320_first_try", 3, "StrongIsr", 13),  # B5
        ("kip320_kip279_truncation", 3, "StrongIsr", 14),  # B6
        ("kip320_expand_before_epoch", 3, "StrongIsr", 12),  # B7
    ],
)
def test_shortest_counterexample(variant, replicas, invariant, length):
    result = run_spec(variant, Bounds(replicas, **SMALL), (invariant,))
    assert result.violation is not None
    assert result.violation.invariant == invariant
    assert result.violation.length == length


@pytest.mark.parametrize(
    "variant, replicas",
    [("kip320", 2), ("kip279", 2), ("kip320_first_try", 2)],
)
def test_holds_with_two_replicas(variant, replicas):
    result = run_spec(variant, Bounds(replicas, **SMALL), ("StrongIsr", "WeakIsr"))
    assert result.ok and result.complete


def test_kip320_holds_every_invariant_with_three_replicas():
    """The full claim of the correct protocol, every invariant, every reachable state (~740k)."""
    result = run_spec("kip320", Bounds(3, **SMALL))
    assert result.ok and result.complete
    assert result.distinct_states == 737_794


def test_kip320_holds_with_two_replicas_and_larger_bounds():
    result = run_spec("kip320", Bounds(2, log_size=3, max_records=3, max_epoch=3), ("StrongIsr", "WeakIsr"))
    assert result.ok and result.complete


def test_b4_counterexample_is_the_catalogued_story():
    """kip279: a follower on a stale epoch counts toward the hw, then truncates against a stale
    leader with an empty log."""
    result = run_spec("kip279", Bounds(3, **SMALL), ("StrongIsr",))
    actions = [step.action for step in result.violation.trace[1:]]
    assert actions[-1].startswith("BecomeFollowerTruncateKip279(r3 follows r2, epoch 1, truncate to 0)")
    assert any(a.startswith("LeaderIncHighWatermark(r1, hw 1)") for a in actions)
    last = result.violation.trace[-1].state
    assert last.logs[2] == () and last.replicas[0].hw == 1


def test_classic_invariants_hold_for_kip320_at_two_replicas():
    result = run_spec("kip320", Bounds(2, **SMALL), CLASSIC_INVARIANTS)
    assert result.ok


@pytest.mark.parametrize("variant", ["kip101", "kip279", "kip320_first_try"])
def test_older_generations_also_diverge(variant):
    """Beyond the ISR properties, truncation before KIP-320 can leave a log whose epochs go
    backwards: divergent histories that KIP-320's fencing rules out."""
    replicas = 2 if variant == "kip101" else 3
    result = run_spec(variant, Bounds(replicas, **SMALL), ("EpochsMonotonic",))
    assert result.violation is not None and result.violation.length == 10
