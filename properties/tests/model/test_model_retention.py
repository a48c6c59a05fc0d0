"""Random walks over the model with retention runs on any replica (RetentionMachine): the
model's invariants and client-level properties hold after every step, and each run moves the
replica's log start to its offset when that lies in (log start, hw], else changes nothing
(model_machine.assert_retention_moves_the_log_start). The core lockstep runs the same machine
against impl/core; this is the model's own layer. Found by mutation testing (the fresh sample's
00020: a negated range check in model/step.py `_retention`, a line no model test ran)."""

from __future__ import annotations

from kafkaref.properties.model_machine import RetentionMachine
from kafkaref.properties.profiles import cap_examples
from kafkaref.properties.stateful import bind
from kafkaref.properties.walk_configs import LOOSE, SAFE

TestSafeRetentionWalk = cap_examples(bind(RetentionMachine, config=SAFE).TestCase, 60)
TestLooseRetentionWalk = cap_examples(bind(RetentionMachine, config=LOOSE).TestCase, 60)
