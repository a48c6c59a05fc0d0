"""Random walks over the model with leadership handed over between caught-up ISR members
(HandoverMachine): leader epochs change between records that lagging followers fetch later, so
one follower fetch often carries several epochs. The model's invariants hold after every step,
among them that every replica's epoch cache is its log's own (each epoch starting at the offset
of its first record). Found by mutation testing (docs/mutation.md, sample 79fa682): a follower
appending a fetch of several epochs started the later ones at the wrong offsets, and no walk of
ModelMachine fetched across an epoch change at once."""

from __future__ import annotations

from kafkaref.properties.model_machine import HandoverMachine
from kafkaref.properties.profiles import cap_examples
from kafkaref.properties.stateful import bind
from kafkaref.properties.walk_configs import LOOSE, SAFE

TestSafeHandoverWalk = cap_examples(bind(HandoverMachine, config=SAFE).TestCase, 100)
TestLooseHandoverWalk = cap_examples(bind(HandoverMachine, config=LOOSE).TestCase, 100)
