"""`kafkaref conform` against franz-go's kfake (chaos/peers/kfake.py: built with `go build` from
chaos/peers/kfake_main, one node, its state on disk so kill and restart work). Opt-in
(`tox -e conform-kfake`, marker kfake): it needs Go and the Go module proxy.

kfake's process dies on a frame with an unknown API key (a nil pointer in its connection
reader), which would leave every later check "could not run": the two checks that send such
frames run each against a fresh kfake after the others. Every check must reach a verdict, and
the failures must be exactly those docs/compatibility.md explains, so a new failure (or a fix in
kfake) shows up here. KAFKAREF_CONFORM_REPORT_DIR=DIR keeps the run's report card under DIR.
"""

from __future__ import annotations

import os

import pytest

from kafkaref.chaos.conform.catalogue import ERROR, FAIL
from kafkaref.chaos.conform.faults import PeerFaults
from kafkaref.chaos.conform.report import write_report
from kafkaref.chaos.conform.runner import RunResult, run, select
from kafkaref.chaos.peers import start_peer
from kafkaref.spark_checks.checker import history_checker

pytestmark = pytest.mark.kfake

# The checks whose frames kill kfake's process (client_conn.go: RequestForKey returns nil for
# an unknown key, and SetVersion dereferences it).
CRASHING = ("malformed_frame_isolated", "protocol_fuzz")
# Every check kfake fails, each explained in docs/compatibility.md.
KFAKE_FAILURES = {
    "api_versions", "metadata_invalid_topic", "create_topics_validation", "topic_configs",
    "consumer_group",  # at the lowest versions only: JoinGroup v0 then SyncGroup v0
    *CRASHING,
}


def judge(checks: list, tmp_path, label: str) -> RunResult:
    with start_peer("kfake", 1, str(tmp_path / f"kfake-{len(checks)}")) as peer:
        return run(peer.bootstrap, checks, label=label, options={
            "faults": PeerFaults(peer), "fuzz": 300, "seed": 20261122, "chaos_seconds": 30,
            "chaos_check": history_checker("twin"), "runs_dir": str(tmp_path / "runs")})


def test_conform_runs_to_completion_against_kfake(tmp_path):
    catalogue = select()
    label = "kfake (franz-go, 1 node)"
    results = [judge(select(skip=CRASHING), tmp_path, label)]
    results += [judge(select((name,)), tmp_path, label) for name in CRASHING]
    found = {o.name: o for result in results for o in result.outcomes}
    result = RunResult(label, results[0].bootstrap, results[0].started,
                       tuple(found[c.name] for c in catalogue))
    keep = os.environ.get("KAFKAREF_CONFORM_REPORT_DIR")
    if keep:
        write_report(result, os.path.join(keep, "kfake"))
    verdicts = {o.name: o.status for o in result.outcomes}
    assert not [n for n, s in verdicts.items() if s == ERROR], verdicts
    assert {n for n, s in verdicts.items() if s == FAIL} == KFAKE_FAILURES
