"""Hypothesis random walks over the model with many faults: the client-level properties and the
spec invariants (through the refinement image) hold after every step."""

from __future__ import annotations

from hypothesis import settings

from kafkaref.properties.model_machine import make_model_machine
from kafkaref.properties.walk_configs import FLUSHING, LOOSE, SAFE

TestSafeClusterWalk = make_model_machine(SAFE).TestCase
TestLooseClusterWalk = make_model_machine(LOOSE).TestCase
TestFlushingClusterWalk = make_model_machine(FLUSHING).TestCase


def _cap(test_case, max_examples: int) -> None:
    """Lower (never raise) the example count, so the deep profile's walks (300 steps each) stay
    within pytest's 10-minute timeout on a 2-core box."""
    current = test_case.settings
    test_case.settings = settings(current, max_examples=min(current.max_examples, max_examples))


_cap(TestSafeClusterWalk, 400)
_cap(TestLooseClusterWalk, 300)
_cap(TestFlushingClusterWalk, 30)
