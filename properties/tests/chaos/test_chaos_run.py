"""The default chaos run: 3 broker processes through the proxy mesh, ~30 s of the workload under
kill, pause and partition faults drawn from a fixed seed, heal, final reads, the Spark check.
acks=all, RF 3, min ISR 2, unclean election off must come out valid."""

from __future__ import annotations

import json

from kafkaref.chaos.nemesis import SAFE_KINDS
from kafkaref.chaos.run import EXIT_VALID, RunOptions, run
from kafkaref.spark_checks.checker import history_checker
from kafkaref.spark_checks.session import shared_test_session

SEED = 11


def test_short_chaos_run_is_valid(tmp_path):
    options = RunOptions(seed=SEED, time_limit_s=30, nemesis=SAFE_KINDS,
                         runs_dir=str(tmp_path), run_id="default")
    result = run(options, log=lambda _: None,
                 check=history_checker("spark", spark=shared_test_session()))
    report = json.loads((tmp_path / "default" / "report.json").read_text())
    found = {name: entry["examples"][:2] for name, entry in report["anomalies"].items()
             if entry["count"]} if "anomalies" in report else report
    assert result.exit_code == EXIT_VALID, found
    summary = report["run"]
    assert sum(summary["faults"].values()) >= 3, summary  # faults really were injected
    assert summary["acknowledged"] > 500, summary
    assert sum(summary["final_read"].values()) >= summary["acknowledged"]
    assert (tmp_path / "default" / "schedule.txt").read_text().strip()


def test_unread_partitions_make_a_valid_verdict_unknown():
    from kafkaref.chaos.run import _judge_final_reads

    options = RunOptions()
    for valid, expected in ((True, "unknown"), (False, False)):
        report, summary = {"valid": valid}, {"final_read": {"0": 10, "2": 4}}
        _judge_final_reads(options, summary, report)
        assert report["valid"] == expected
        assert summary["unread_partitions"] == [1]
    report = {"valid": True}
    _judge_final_reads(options, {"final_read": {"0": 1, "1": 1, "2": 0}}, report)
    assert report == {"valid": True}
