"""The model and the impl core in lockstep (properties/lockstep.py) on walks with leadership
handed over between caught-up ISR members (HandoverMachine): follower fetches carry records of
several leader epochs, and the core's followers must start each epoch in their epoch caches where
the model's do (the lockstep compares every replica's state after every step). The model's own
walks of this machine: properties/tests/model/test_model_epoch_handover.py."""

from __future__ import annotations

from kafkaref.properties.lockstep import lockstep_machine
from kafkaref.properties.profiles import fit_deep_budget
from kafkaref.properties.walk_configs import LOOSE, SAFE

# CPU-seconds per 300-step walk: SAFE's and LOOSE's of test_core_lockstep.py (deep's budget)
TestCoreLockstepHandoverSafe = fit_deep_budget(lockstep_machine(SAFE, handover=True).TestCase, 0.165)
TestCoreLockstepHandoverLoose = fit_deep_budget(lockstep_machine(LOOSE, handover=True).TestCase, 0.15)
