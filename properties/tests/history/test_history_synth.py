"""kafkaref synth: a clean synthetic history is valid, generation is deterministic per seed, each
injected anomaly kind is found exactly once per injection (recall) and every reported case is
explained by an injection naming its anomaly (precision); and the kafkaref synth / check command
lines, including their exit codes and bad arguments. The Spark run against the twin is in
test_synth_injections.py."""

import json

import pytest
from click.testing import CliRunner

from kafkaref.commands.main import main
from kafkaref.history.store import read_table
from kafkaref.spark_checks import job, twin
from kafkaref.spark_checks.scoring import load_truth, score
from kafkaref.spark_checks.session import shared_test_session
from kafkaref.spark_checks.synth import INJECTIONS, SIDE_EFFECTS, SynthSpec, generate


def test_a_clean_synthetic_history_is_valid(tmp_path):
    generate(SynthSpec(sends=3000, partitions=3, producers=5, consumers=2, seed=1), tmp_path / "h")
    result = twin.check(tmp_path / "h", examples=None)
    assert result.valid is True, {k: v for k, v in result.counts.items() if v}
    assert read_table(tmp_path / "h", "records").num_rows > 3 * 3000


def test_generation_is_deterministic_per_seed(tmp_path):
    spec = SynthSpec(sends=800, seed=9, rates={k: 0.02 for k in INJECTIONS})
    for name in ("a", "b"):
        generate(spec, tmp_path / name)
    generate(SynthSpec(sends=800, seed=10), tmp_path / "c")
    records = [read_table(tmp_path / n, "records") for n in "abc"]
    assert records[0].equals(records[1]) and not records[0].equals(records[2])
    assert load_truth(tmp_path / "a") == load_truth(tmp_path / "b")


@pytest.mark.parametrize("kind", sorted(INJECTIONS))
def test_each_injected_kind_is_found_and_explained(tmp_path, kind):
    generate(SynthSpec(sends=2400, seed=2, rates={kind: 0.1}), tmp_path / "h")
    truth = load_truth(tmp_path / "h")
    assert truth, "the rate must inject at least once"
    result = twin.check(tmp_path / "h", examples=None)
    figures = score(truth, result.anomalies)
    assert figures["recall"] == 1.0 and figures["precision"] == 1.0, figures
    # Exactly one case per injection of its anomaly, and no anomaly the kind does not name.
    assert result.counts[INJECTIONS[kind]] == len(truth)
    reported = {name for name, count in result.counts.items() if count}
    assert reported <= {INJECTIONS[kind], *SIDE_EFFECTS[kind]}, reported


def test_synth_and_check_command_lines(tmp_path):
    runner = CliRunner()
    clean, bad = tmp_path / "clean", tmp_path / "bad"
    assert runner.invoke(main, ["synth", str(clean), "--sends", "400"]).exit_code == 0
    assert runner.invoke(main, ["synth", str(bad), "--sends", "2000", "--rate", "0.02"]).exit_code == 0
    assert runner.invoke(main, ["check", str(clean), "--twin"]).exit_code == 0
    result = runner.invoke(main, ["check", str(bad), "--twin"])
    assert result.exit_code == 1, result.output
    assert json.loads((bad / "report.json").read_text())["valid"] is False
    lenient = runner.invoke(main, ["check", str(bad), "--twin", "--config", "acks=1",
                                   "--config", "idempotence=false"])
    assert lenient.exit_code == 1  # poll and hw anomalies stay disallowed


@pytest.mark.parametrize("args", [
    ["check", "/nonexistent/history"],
    ["check", ".", "--config", "acks=7"],
    ["check", ".", "--config", "colour=red"],
    ["check", ".", "--examples", "-1"],
    ["synth", "x", "--inject", "bogus=0.1"],
    ["synth", "x", "--inject", "unseen=-0.1"],
    ["synth", "x", "--inject", "dirty_read=x"],
    ["synth", "x", "--sends", "0"],
])
def test_bad_arguments_exit_2_with_a_message(tmp_path, args, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "Error" in result.output, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_an_unreadable_history_exits_2(tmp_path):
    generate(SynthSpec(sends=100), tmp_path / "h")
    (tmp_path / "h" / "meta.json").write_text("{broken")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "h"), "--twin"])
    assert result.exit_code == 2 and "could not decide" in result.output


@pytest.mark.slow
def test_spark_finds_every_injection_in_a_larger_history(tmp_path):
    generate(SynthSpec(sends=400_000, partitions=8, producers=8, seed=3,
                       rates={k: 1e-4 for k in INJECTIONS}), tmp_path / "h")
    result = job.check(shared_test_session(), tmp_path / "h", examples=10_000)
    figures = score(load_truth(tmp_path / "h"), result.anomalies)
    assert figures["recall"] == 1.0 and figures["precision"] == 1.0, figures


def test_an_empty_json_lines_file_is_refused_and_imports_nothing(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "header.jsonl").write_text('{"kafkaref_history": 1}\n')
    for source in ("empty.jsonl", "header.jsonl"):
        result = CliRunner().invoke(main, ["history", "import", str(tmp_path / source),
                                           str(tmp_path / "h")])
        assert result.exit_code == 2
        assert result.output == (f"Error: {tmp_path / source}: no ops: an empty history "
                                 "records nothing to judge\n")
        assert not (tmp_path / "h").exists()


def test_a_long_example_is_cut_with_an_ellipsis(tmp_path):
    """Table cells used to be cut mid-JSON with nothing saying so."""
    topic = "a-topic-with-a-rather-long-name-as-real-deployments-have"
    (tmp_path / "h.jsonl").write_text("\n".join(json.dumps(op) for op in [
        {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send"},
        {"index": 1, "time": 1, "process": 0, "type": "ok", "f": "send", "invoke_index": 0,
         "records": [{"topic": topic, "partition": 0, "offset": 0, "value": 10}]},
        {"index": 2, "time": 2, "process": 1, "type": "invoke", "f": "final_read"},
        {"index": 3, "time": 3, "process": 1, "type": "ok", "f": "final_read",
         "invoke_index": 2, "records": [{"kind": "hw", "topic": topic, "partition": 0,
                                         "offset": 1}]}]) + "\n")
    assert CliRunner().invoke(main, ["history", "import", str(tmp_path / "h.jsonl"),
                                     str(tmp_path / "h")]).exit_code == 0
    result = CliRunner().invoke(main, ["check", str(tmp_path / "h"), "--twin"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    [row] = [line for line in result.output.splitlines() if "│ unseen " in line]
    cell = row.split("│")[4].strip()
    assert cell.endswith("…") and len(cell) == 80, cell
    assert json.dumps({"topic": topic, "partition": 0, "offset": 0, "value": 10}).startswith(
        cell[:-1])


def test_a_chaos_runs_title_names_its_mutants(capsys, tmp_path, monkeypatch):
    """The sample output in docs/chaos.md shows "(mutant M2)": the program prints it."""
    from kafkaref.chaos.run import RunResult

    monkeypatch.setenv("COLUMNS", "200")
    from kafkaref.commands.chaos import print_summary

    print_summary(RunResult(tmp_path / "20261124T205720-s7-2101", 1, {"valid": False},
                            {"mutants": ["M2"]}))
    title = " ".join(capsys.readouterr().out.split("┏")[0].split())
    assert title == "chaos run 20261124T205720-s7-2101: valid = False (mutant M2)"
