"""The model and the impl core in lockstep (properties/lockstep.py): every event goes to both,
every answer and the observable state of every replica must be equal after every step."""

from __future__ import annotations

from kafkaref.properties.lockstep import lockstep_machine
from kafkaref.properties.walk_configs import FLUSHING, LOOSE, SAFE

TestCoreLockstepSafe = lockstep_machine(SAFE).TestCase
TestCoreLockstepLoose = lockstep_machine(LOOSE).TestCase
TestCoreLockstepFlushing = lockstep_machine(FLUSHING).TestCase
