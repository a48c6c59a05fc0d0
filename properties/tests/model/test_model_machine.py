"""Hypothesis random walks over the model with many faults: the client-level properties and the
spec invariants (through the refinement image) hold after every step."""

from __future__ import annotations

from kafkaref.properties.model_machine import ModelMachine
from kafkaref.properties.profiles import cap_examples
from kafkaref.properties.stateful import bind
from kafkaref.properties.walk_configs import FLUSHING, LOOSE, SAFE

# Fixed caps, well inside the deep profile's budget (properties/profiles.py); Flushing's 30 is
# also below ci's 60, so it holds in the default run too.
TestSafeClusterWalk = cap_examples(bind(ModelMachine, config=SAFE).TestCase, 400)
TestLooseClusterWalk = cap_examples(bind(ModelMachine, config=LOOSE).TestCase, 300)
TestFlushingClusterWalk = cap_examples(bind(ModelMachine, config=FLUSHING).TestCase, 30)
