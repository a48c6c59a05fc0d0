"""The model and the impl core in lockstep (properties/lockstep.py): every event goes to both,
every answer and the observable state of every replica must be equal after every step."""

from __future__ import annotations

from kafkaref.properties.lockstep import lockstep_machine
from kafkaref.properties.profiles import fit_deep_budget
from kafkaref.properties.walk_configs import FLUSHING, LOOSE, SAFE

# Each with its CPU-seconds per 300-step walk, measured (properties/profiles.py: deep's budget).
TestCoreLockstepSafe = fit_deep_budget(lockstep_machine(SAFE).TestCase, 0.165)
TestCoreLockstepLoose = fit_deep_budget(lockstep_machine(LOOSE).TestCase, 0.15)
TestCoreLockstepFlushing = fit_deep_budget(lockstep_machine(FLUSHING).TestCase, 0.145)
# the same machine with retention runs on any replica (RetentionMachine); SAFE's budget
TestCoreLockstepRetention = fit_deep_budget(lockstep_machine(SAFE, retention=True).TestCase,
                                            0.165)
