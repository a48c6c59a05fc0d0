"""Hypothesis random walks over the model with many faults: the client-level properties and the
spec invariants (through the refinement image) hold after every step."""

from __future__ import annotations

from kafkaref.properties.model_machine import make_model_machine
from kafkaref.properties.profiles import cap_examples
from kafkaref.properties.walk_configs import FLUSHING, LOOSE, SAFE

# Fixed caps, well inside the deep profile's budget (properties/profiles.py); Flushing's 30 is
# also below ci's 60, so it holds in the default run too.
TestSafeClusterWalk = cap_examples(make_model_machine(SAFE).TestCase, 400)
TestLooseClusterWalk = cap_examples(make_model_machine(LOOSE).TestCase, 300)
TestFlushingClusterWalk = cap_examples(make_model_machine(FLUSHING).TestCase, 30)
