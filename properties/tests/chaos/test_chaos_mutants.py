"""Opt-in (slow; `tox -e chaos-mutants`): every broker mutant a client can observe is caught by
a short chaos run (`kafkaref chaos run --mutant M`), within CHAOS_MUTANT_SECONDS of faults.

Each run prints `mutant M: caught|missed in S s (anomalies)` (pytest -s) and, with
KAFKAREF_CHAOS_MUTANT_LOG=FILE, appends it as a JSON line: the chaos column of the mutation
matrix, measured. The schedule is nemesis.hunting_schedule (isolate a leader, kill a leader,
pause a follower, cut a segment short). The check is the twin's (the Spark job reports the same
cases: properties/tests/history); a mutant known not to be observable by this workload is
marked xfail with the reason, so a catch there shows up as XPASS.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from kafkaref.chaos.nemesis import hunting_schedule
from kafkaref.chaos.run import EXIT_INVALID, RunOptions, run
from kafkaref.impl.mutants import Mutant

SECONDS = float(os.environ.get("CHAOS_MUTANT_SECONDS", "30"))
# Why a client-observable mutant cannot show in this workload's history.
UNOBSERVABLE = {
    "M3": "with unclean election off an ISR of one loses nothing a broker acked; the fault is an "
          "ok where NOT_ENOUGH_REPLICAS was due, which a history cannot tell without the ISR "
          "(and with unclean election on, the loss it causes is allowed)",
    "M7": "our producers never send a batch with a bad CRC (the mutant needs a corrupting client)",
    "M9": "every client keeps one request in flight per connection, so nothing can reorder",
    "M10": "hanging produce requests end as info (timeouts): a liveness fault, no anomaly",
    "M11": "fetches answered early are a cost, not a wrong answer",
    "M13": "the dropped rolling batch stops the log at its first roll: acks=all sends then time "
           "out (info), a loss of availability the checks do not judge (acks=1 would lose)",
}
# Observable in principle, not caught in CHAOS_MUTANT_SECONDS=30 by the hunting schedule
# (measured 2026-11-24): they need a targeted schedule (M8: a torn tail on a replica that then
# leads; M14: a deposed leader's unreplicated tail kept under the same epoch, then it leads).
NOT_YET = {"M8", "M14"}
OBSERVABLE = [m for m in Mutant if m.client_observable and m.possible]


@pytest.mark.slow
@pytest.mark.parametrize("mutant", OBSERVABLE, ids=lambda m: m.code)
def test_chaos_run_catches_mutant(mutant, tmp_path, request):
    if mutant.code in UNOBSERVABLE:
        pytest.xfail(UNOBSERVABLE[mutant.code])
    if mutant.code in NOT_YET:
        request.applymarker(pytest.mark.xfail(reason="not caught by the hunting schedule in "
                                              "30 s (measured)", strict=False))
    options = RunOptions(seed=1, time_limit_s=SECONDS, mutants=(mutant.code,),
                         schedule=tuple(hunting_schedule(SECONDS, corrupt=mutant.code == "M8")),
                         runs_dir=str(tmp_path), run_id=mutant.code, checker="twin")
    started = time.monotonic()
    result = run(options, log=lambda _: None)
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
