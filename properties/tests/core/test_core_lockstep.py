"""The model and the impl core in lockstep (properties/lockstep.py): every event goes to both,
every answer and the observable state of every replica must be equal after every step."""

from __future__ import annotations

from kafkaref.properties.lockstep import lockstep_machine
from kafkaref.properties.profiles import fit_deep_budget
from kafkaref.properties.walk_configs import FLUSHING, LOOSE, SAFE

TestCoreLockstepSafe = lockstep_machine(SAFE).TestCase
TestCoreLockstepLoose = lockstep_machine(LOOSE).TestCase
TestCoreLockstepFlushing = lockstep_machine(FLUSHING).TestCase

# CPU-seconds per 300-step walk, measured (properties/profiles.py: the deep profile's budget).
fit_deep_budget(TestCoreLockstepSafe, 0.165)
fit_deep_budget(TestCoreLockstepLoose, 0.15)
fit_deep_budget(TestCoreLockstepFlushing, 0.145)
