"""Opt-in (slow; `tox -e chaos-mutants`): every broker mutant a client can observe is caught by
a short chaos run (`kafkaref chaos run --mutant M`), within CHAOS_MUTANT_SECONDS of faults.

Each run prints `mutant M: caught|missed in S s (anomalies)` (pytest -s) and, with
KAFKAREF_CHAOS_MUTANT_LOG=FILE, appends it as a JSON line: the chaos column of the mutation
matrix, measured. Each mutant runs under its hunt (chaos/hunts.py: the faults and workload shape
that make it observable); the baseline runs every hunt's faults against the correct broker,
which must come out valid. The check is the twin's (the Spark job reports the same cases:
properties/tests/history); a mutant no hunt can show soundly (UNHUNTABLE) is marked xfail with
the reason, so a catch there shows up as XPASS.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from kafkaref.chaos.hunts import UNHUNTABLE, baseline_options, hunt_for
from kafkaref.chaos.run import EXIT_INVALID, EXIT_VALID, run
from kafkaref.impl.mutants import Mutant
from kafkaref.spark_checks.checker import history_checker

SECONDS = float(os.environ.get("CHAOS_MUTANT_SECONDS", "30"))
OBSERVABLE = [m for m in Mutant if m.client_observable and m.possible]


@pytest.mark.slow
def test_every_hunt_leaves_a_correct_broker_valid(tmp_path):
    """Soundness: every hunt's faults in one run (chaos/hunts.py baseline_options) against the
    correct broker; an anomaly here is a checker or broker bug, not a catch."""
    result = run(baseline_options(2 * SECONDS, seed=1, runs_dir=str(tmp_path),
                                  run_id="baseline"), log=lambda _: None,
                 check=history_checker("twin"))
    found = {name: entry["count"] for name, entry in result.report.get("anomalies", {}).items()
             if entry["count"]}
    assert result.exit_code == EXIT_VALID, (found, result.summary.get("crash"))


@pytest.mark.slow
@pytest.mark.parametrize("mutant", OBSERVABLE, ids=lambda m: m.code)
def test_chaos_run_catches_mutant(mutant, tmp_path):
    if mutant.code in UNHUNTABLE:
        pytest.xfail(UNHUNTABLE[mutant.code])
    options = hunt_for(mutant.code).options(mutant.code, SECONDS, seed=1, runs_dir=str(tmp_path),
                                            run_id=mutant.code)
    started = time.monotonic()
    result = run(options, log=lambda _: None, check=history_checker("twin"))
    took = time.monotonic() - started
    found = {name: entry["count"] for name, entry in result.report.get("anomalies", {}).items()
             if entry["count"] and not entry["allowed"]}
    line = {"mutant": mutant.code, "caught": result.exit_code == EXIT_INVALID,
            "seconds": round(took, 1), "fault_seconds": SECONDS, "anomalies": found,
            "exit": result.exit_code, "crash": result.summary.get("crash")}
    print(f"mutant {mutant.code}: {'caught' if line['caught'] else 'missed'} in {took:.0f} s "
          f"{found}")
    if os.environ.get("KAFKAREF_CHAOS_MUTANT_LOG"):
        with open(os.environ["KAFKAREF_CHAOS_MUTANT_LOG"], "a") as log:
            log.write(json.dumps(line) + "\n")
    assert result.exit_code == EXIT_INVALID, line
