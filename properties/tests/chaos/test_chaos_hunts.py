"""The hunts (chaos/hunts.py) cover the catalogue, and their baseline holds every hunt's faults:
the run that shows a correct broker survives them (slow, tox -e chaos-mutants) is only as good
as that coverage. No cluster here."""

from kafkaref.chaos.hunts import HUNTS, UNHUNTABLE, baseline_options, hunt_for
from kafkaref.chaos.nemesis import ALL_KINDS, TARGETS
from kafkaref.impl.mutants import Mutant


def test_every_client_observable_mutant_has_a_hunt_or_a_reason():
    observable = {m.code for m in Mutant if m.client_observable and m.possible}
    assert observable == set(HUNTS) | set(UNHUNTABLE)
    assert not set(HUNTS) & set(UNHUNTABLE)


def test_the_baseline_holds_every_step_of_every_hunt_at_any_budget():
    for seconds in (15, 30):
        options = baseline_options(seconds, seed=1)
        steps = {(s.kind, s.target, s.duration_s) for s in options.schedule}
        assert steps >= {step for hunt in HUNTS.values() for step in hunt.cycle}
        assert options.mutants == ()


def test_hunts_use_known_fault_kinds_and_run_at_least_their_minimum():
    for code, hunt in HUNTS.items():
        assert all(kind in ALL_KINDS for kind, _, _ in hunt.cycle), code
        assert all(target in TARGETS[kind] or target == "lagging-leader"
                   for kind, target, _ in hunt.cycle), code
        options = hunt_for(code).options(code, 10)
        assert options.mutants == (code,) and options.time_limit_s >= max(10, hunt.min_seconds)
        assert options.schedule, code
