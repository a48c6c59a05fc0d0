"""`kafkaref explore` and `kafkaref demo` from the outside: exit codes, output formats, and clear
errors (exit 2, no traceback) on bad arguments."""

import json

import pytest
from click.testing import CliRunner

from kafkaref.commands.main import main


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_violation_exits_1_and_prints_the_trace():
    result = run("explore", "--variant", "kip279", "--invariant", "StrongIsr", "--quiet")
    assert result.exit_code == 1
    assert "Invariant StrongIsr violated after 11 states" in result.output
    assert "state 11: BecomeFollowerTruncateKip279" in result.output


def test_holding_exits_0():
    result = run("explore", "--variant", "kip320", "--replicas", "2", "--quiet")
    assert result.exit_code == 0
    assert "Every invariant holds" in result.output


def test_json_output():
    result = run("explore", "--variant", "kip101", "--replicas", "2", "--invariant", "StrongIsr", "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["result"] == "violation"
    assert report["counterexample_states"] == 12 == len(report["trace"])
    assert report["distinct_states"] > 0 and report["states_per_second"] > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--variant", "kip999"], "'kip999' is not one of"),
        (["--replicas", "0"], "0 is not in the range"),
        (["--invariant", "Nope"], "'Nope' is not one of"),
        (["--log-size", "x"], "'x' is not a valid integer"),
        (["--graph", "out.png"], "must end in .graphml or .dot"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args, message):
    result = run("explore", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_graph_export(tmp_path):
    path = tmp_path / "states.graphml"
    result = run("explore", "--variant", "truncate_to_hw", "--replicas", "2", "--graph", str(path), "--quiet")
    assert result.exit_code == 1
    assert path.read_text().count("<node ") > 100


def test_model_target_with_a_bug_finds_a_counterexample():
    result = run(
        "explore", "--target", "model", "--replicas", "2", "--max-records", "1", "--bug", "read-above-hw", "--quiet"
    )
    assert result.exit_code == 1
    assert "ConsumedRecordsSurvive" in result.output


def test_model_target_rejects_min_isr_above_replicas():
    result = run("explore", "--target", "model", "--replicas", "2", "--min-insync-replicas", "3")
    assert result.exit_code == 2 and "cannot exceed --replicas" in result.output
