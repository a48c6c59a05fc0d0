"""history/merge.py and `kafkaref history merge|check`: runs merged into one history keep
every anomaly each had and gain none (a merge is additive, anomaly by anomaly, even of runs with
the same topics, processes and values), the placement keeps runs apart, memory stays bounded by
row groups, and a missing, corrupt or incompatible run is exit 2 with a message naming it."""

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaref.commands.history import history
from kafkaref.history.format import ANOMALIES, NEMESIS_PROCESS, HistoryError
from kafkaref.history.integrity import seal
from kafkaref.history.merge import (
    Extent,
    Placement,
    find_histories,
    make_plan,
    merge,
    place,
    rewrite_op_value,
)
from kafkaref.history.store import WriterLimits, read_meta, read_table, write_ops
from kafkaref.properties.history_strategies import histories
from kafkaref.properties.run_histories import simulated_run
from kafkaref.spark_checks import job, twin
from kafkaref.spark_checks.session import shared_test_session


def _counts(path) -> dict:
    result = twin.check(path, examples=None)
    assert result.error is None, result.error
    return dict(result.counts)


@settings(max_examples=25)
@given(parts=st.lists(st.booleans().flatmap(lambda bad: histories(anomalies=bad)),
                      min_size=1, max_size=3),
       repeat=st.booleans())
def test_merge_is_additive(tmp_path_factory, parts, repeat):
    """Every anomaly of the merged history is one of a run's, and every run's is there: the
    counts add up. The runs share topic names, processes and values (the strategy numbers
    them all from the same start), and with repeat one run is merged twice."""
    base = tmp_path_factory.mktemp("m")
    runs = []
    for n, ops in enumerate(parts + parts[:1] if repeat else parts):
        runs.append(base / f"run{n}")
        if n < len(parts):
            write_ops(runs[-1], ops)
        else:
            runs[-1] = runs[0]
    merge(runs, base / "merged")
    expected = {name: sum(_counts(run)[name] for run in runs) for name in ANOMALIES}
    assert _counts(base / "merged") == expected


def test_merged_ops_and_records_stay_apart(tmp_path):
    """Two copies of one run: topics prefixed, op indexes, processes, values and times moved
    clear of the first copy; the nemesis stays -1; invoke_index follows its op."""
    simulated_run(tmp_path / "a", seed=5, seconds=2, lose_writes=0)
    summary = merge([tmp_path / "a", tmp_path / "a"], tmp_path / "m")
    ops = read_table(tmp_path / "a", "ops").to_pylist()
    merged = read_table(tmp_path / "m", "ops").to_pylist()
    assert len(merged) == 2 * len(ops) == summary.ops
    assert [op["index"] for op in merged] == list(range(len(merged)))
    second = merged[len(ops):]
    shift = summary.placements[1]
    assert shift.process_shift > max(op["process"] for op in ops)
    assert min(op["time"] for op in second) > max(op["time"] for op in ops)
    for before, after in zip(ops, second, strict=True):
        assert after["invoke_index"] == (None if before["invoke_index"] is None
                                         else before["invoke_index"] + len(ops))
        assert after["process"] == (NEMESIS_PROCESS if before["process"] == NEMESIS_PROCESS
                                    else before["process"] + shift.process_shift)
    records = read_table(tmp_path / "m", "records").to_pylist()
    topics = {r["topic"] for r in records}
    assert topics == {"r000/jepsen", "r001/jepsen"}
    first_values = {r["value"] for r in records if r["topic"] == "r000/jepsen"} - {None}
    second_values = {r["value"] for r in records if r["topic"] == "r001/jepsen"} - {None}
    assert first_values.isdisjoint(second_values)
    assert {v - shift.value_shift for v in second_values} == first_values
    meta = read_meta(tmp_path / "m")
    assert [m["label"] for m in meta["merged_from"]] == ["r000", "r001"]
    assert meta["config"] == read_meta(tmp_path / "a")["config"]


def _soak(tmp_path, *runs):
    """A directory of chaos-run-shaped runs (RUN/history), each a simulated run."""
    soak = tmp_path / "soak"
    for n, (seed, lost) in enumerate(runs):
        simulated_run(soak / f"2026112{n}T000000-s{seed}" / "history", seed=seed, seconds=2,
                      lose_writes=lost)
    (soak / "soak-totals.json").write_text("{}")  # what a soak leaves beside its runs
    return soak


def test_a_lost_write_is_still_found_after_merging(tmp_path):
    soak = _soak(tmp_path, (3, 0), (4, 2), (3, 0))
    lost = simulated_run(tmp_path / "again", seed=4, seconds=2, lose_writes=2)["lost"]
    assert len(lost) == 2
    result = CliRunner().invoke(history, ["check", str(soak), "--twin", "--examples", "100"])
    assert result.exit_code == 1, result.output
    report = json.loads((soak / "report.json").read_text())
    assert report["valid"] is False
    nonzero = {name: entry["count"] for name, entry in report["anomalies"].items()
               if entry["count"]}
    alone = {name: count for name, count in _counts(tmp_path / "again").items() if count}
    assert nonzero == alone and nonzero["lost_write"] == 2
    merged_from = [find_histories([soak])[i] for i in range(3)]
    assert "s4" in str(merged_from[1])
    examples = report["anomalies"]["lost_write"]["examples"]
    assert {e["topic"] for e in examples} == {"r001/jepsen"}
    shift = place([_extent_of(h) for h in merged_from], ["a", "b", "c"])[1].value_shift
    assert sorted(e["value"] - shift for e in examples) == lost


def _extent_of(path):
    from kafkaref.history.merge import measure

    return measure(path)


def test_merging_valid_runs_of_one_topic_finds_nothing_on_spark(tmp_path):
    """Same seed twice (the same topic, processes, values and offsets in both) and another,
    merged and judged on Spark: valid, as each run alone."""
    soak = _soak(tmp_path, (7, 0), (7, 0), (8, 0))
    plan = make_plan(find_histories([soak]))
    merge([soak], tmp_path / "merged")
    result = job.check(shared_test_session(), str(tmp_path / "merged"), examples=None)
    assert result.error is None, result.error
    assert result.valid is True
    assert not any(result.counts.values())
    assert result.info["records"] == sum(e.records for e in plan.extents)


CORRUPT_READ = [
    {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send"},
    {"index": 1, "time": 2, "process": 0, "type": "ok", "f": "send", "invoke_index": 0,
     "records": [{"topic": "t", "partition": 0, "offset": 0, "value": 1}]},
    {"index": 2, "time": 3, "process": 1, "type": "invoke", "f": "poll"},
    {"index": 3, "time": 4, "process": 1, "type": "info", "f": "poll", "invoke_index": 2,
     "value": {"corrupt_batch": {"topic": "t", "partition": 0, "offset": 1}}},
    {"index": 4, "time": 9, "process": 5, "type": "invoke", "f": "final_read"},
    {"index": 5, "time": 10, "process": 5, "type": "ok", "f": "final_read", "invoke_index": 4,
     "records": [{"kind": "final_read", "topic": "t", "partition": 0, "offset": 0, "value": 1},
                 {"kind": "hw", "topic": "t", "partition": 0, "offset": 1}]},
]


def test_spark_finds_each_runs_anomalies_in_the_merged_history(tmp_path):
    """A lost write and a corrupt read (whose topic sits in an op value) in one run each,
    between runs of the same topic, and stray values at both ends of int64 (blocks moved):
    Spark finds each under its run's label."""
    from kafkaref.spark_checks.synth import INJECTIONS, SynthSpec, generate

    soak = _soak(tmp_path, (7, 0), (9, 2))
    write_ops(soak / "zz-corrupt", CORRUPT_READ)
    write_ops(soak / "zz-corrupt-again", CORRUPT_READ)
    # stray values (garbage injections at both ends of int64): blocks moved, in both ways
    generate(SynthSpec(sends=600, partitions=2, producers=2, consumers=2, seed=3,
                       rates={kind: 0.01 for kind in INJECTIONS}), soak / "zz-synth")
    merge([soak], tmp_path / "copy")
    copy = job.check(shared_test_session(), str(tmp_path / "copy"), examples=None)
    assert copy.error is None, copy.error
    assert [case[0] for case in copy.anomalies["lost_write"]].count("r001/jepsen") == 2
    assert {"r002/t", "r003/t"} <= {case[1] for case in copy.anomalies["corrupt_read"]}
    assert make_plan(find_histories([soak])).placements[4].moved_blocks
    assert copy.valid is False


def test_merge_streams_in_row_groups(tmp_path):
    for n in range(3):
        simulated_run(tmp_path / f"r{n}", seed=n, seconds=2, lose_writes=0)
    limits = WriterLimits(row_group_rows=500, file_rows=2000)
    merge([tmp_path / f"r{n}" for n in range(3)], tmp_path / "m", limits=limits)
    files = sorted((tmp_path / "m" / "records").glob("*.parquet"))
    assert len(files) > 1
    groups = [pq.ParquetFile(f).metadata.row_group(i).num_rows
              for f in files for i in range(pq.ParquetFile(f).metadata.num_row_groups)]
    assert max(groups) <= 500
    assert sum(groups) == sum(read_table(tmp_path / f"r{n}", "records").num_rows
                              for n in range(3))


def _extent(process, blocks, index=(0, 9), times=(0, 100)):
    return Extent(10, 10, index, times, process, tuple(sorted(blocks)), False)


def test_placement_keeps_the_workload_encoding_and_moves_stray_values():
    runs = [_extent((0, 5), [0, 2, 5]),
            _extent((0, 3), [1, 3]),
            _extent((0, 2), [-7, 0, 2, 9]),  # garbage reads far below and above
            _extent(None, [], index=None, times=None),  # an empty run
            _extent((0, 1), [0, 1])]
    first, second, third, empty, fifth = place(runs, ["a", "b", "c", "d", "e"])
    assert (first.process_shift, first.value_shift, first.index_shift) == (0, 0, 0)
    assert first.moved_blocks == ()
    assert second.process_shift == 6 and second.value_shift == 6 << 32
    assert second.index_shift == 10 and second.time_shift == 101
    assert third.process_shift == 10 + 1  # above process 9, one stray block below its own
    assert third.moved_blocks == ((-7, 10), (9, 14))
    assert [third.value((b << 32) | 5) >> 32 for b in (-7, 0, 2, 9)] == [10, 11, 13, 14]
    assert third.value((-7 << 32) | 5) & 0xFFFFFFFF == 5
    assert empty.index_shift == 30 and empty.label == "r003"
    assert fifth.process_shift == 15


def test_placement_refuses_to_pass_int64():
    runs = [_extent((0, 2**31 - 2), [0]), _extent((0, 1), [0, 1])]  # processes 2^31 wide
    with pytest.raises(HistoryError, match="pass int64"):
        place(runs, ["a", "b"])


def test_synthetic_histories_with_injected_anomalies_merge_additively(tmp_path):
    """kafkaref synth's injections include garbage values far from the rest (both ends of
    int64): they are moved clear of the other runs, and every case is kept."""
    from kafkaref.spark_checks.synth import INJECTIONS, SynthSpec, generate

    runs = []
    for seed in (1, 2):
        runs.append(tmp_path / f"s{seed}")
        generate(SynthSpec(sends=800, partitions=2, producers=2, consumers=2, seed=seed,
                           rates={kind: 0.01 for kind in INJECTIONS}), runs[-1])
    runs.append(runs[0])
    summary = merge(runs, tmp_path / "m")
    assert any(p.moved_blocks for p in summary.placements)
    expected = {name: sum(_counts(run)[name] for run in runs) for name in ANOMALIES}
    assert sum(expected.values()) > 0
    assert _counts(tmp_path / "m") == expected


def test_op_values_naming_a_topic_or_a_value_are_rewritten():
    at = Placement("r002", "x", 0, 0, 3)
    corrupt = json.dumps({"corrupt_batch": {"topic": "t", "partition": 1, "offset": 4}})
    assert json.loads(rewrite_op_value(corrupt, at))["corrupt_batch"]["topic"] == "r002/t"
    sent = rewrite_op_value('{"partition": 2, "value": 5}', at)
    assert json.loads(sent) == {"partition": 2, "value": 5 + (3 << 32)}
    for untouched in ('{"brokers": [1]}', "[null]", "broker 2", "{not json"):
        assert rewrite_op_value(untouched, at) == untouched


# --- bad input: exit 2, a message naming what is wrong, nothing written -----------------------


def _merge_cli(out, *runs):
    return CliRunner().invoke(history, ["merge", str(out), *map(str, runs)])


@pytest.fixture
def two_runs(tmp_path):
    simulated_run(tmp_path / "a", seed=1, seconds=1, lose_writes=0)
    simulated_run(tmp_path / "b", seed=2, seconds=1, lose_writes=0)
    return tmp_path / "a", tmp_path / "b"


def _corrupt_records(path):
    part = next((path / "records").glob("*.parquet"))
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])


def _other_config(path):
    meta = json.loads((path / "meta.json").read_text())
    meta["config"]["acks"] = "1"
    seal(path, meta)  # as its writer would have written it


def _future_version(path):
    meta = json.loads((path / "meta.json").read_text())
    meta["schema_version"] = 99
    seal(path, meta)


def _edited_meta(path):
    meta = json.loads((path / "meta.json").read_text())
    meta["config"]["acks"] = "1"
    (path / "meta.json").write_text(json.dumps(meta))  # by hand: the manifest no longer fits


def _no_meta(path):
    (path / "meta.json").unlink()


@pytest.mark.parametrize("spoil, message", [
    (_corrupt_records, "corrupt history"),
    (_edited_meta, "corrupt history"),
    (_other_config, "merge such runs separately"),
    (_future_version, "schema version 99"),
    (_no_meta, "no meta.json"),
])
def test_a_bad_run_is_exit_2_and_leaves_nothing(tmp_path, two_runs, spoil, message):
    spoil(two_runs[1])
    result = _merge_cli(tmp_path / "m", *two_runs)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "m").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.partial")]


def test_missing_or_empty_inputs_and_a_used_out_are_exit_2(tmp_path, two_runs):
    (tmp_path / "empty").mkdir()
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("")
    cases = [((tmp_path / "m", tmp_path / "nowhere"), "no such file"),
             ((tmp_path / "m", tmp_path / "empty"), "neither a history"),
             ((tmp_path / "used", *two_runs), "not an empty directory"),
             ((two_runs[0] / "m", two_runs[0]), "inside the input"),
             ((tmp_path / "m", tmp_path), "inside the input")]
    for args, message in cases:
        result = _merge_cli(*args)
        assert result.exit_code == 2 and message in result.output, (args, result.output)


@pytest.mark.parametrize("how", [["--twin"]])
def test_check_of_a_corrupt_run_is_exit_2(tmp_path, two_runs, how):
    """Found while merging, before any checker starts."""
    _corrupt_records(two_runs[0])
    result = CliRunner().invoke(history, ["check", *map(str, two_runs), *how,
                                          "--report", str(tmp_path / "r.json")])
    assert result.exit_code == 2 and "corrupt history" in result.output
    assert not (tmp_path / "r.json").exists()


def test_check_leaves_a_runs_own_report_alone(tmp_path, two_runs, monkeypatch):
    """One run or history given: the merged verdict goes where --report or --merged says, never
    over the run's own report.json nor into the working directory (without either: a usage
    error, at once); one directory of runs: into it."""
    monkeypatch.chdir(tmp_path)
    (two_runs[0] / "report.json").write_text("its own")
    result = CliRunner().invoke(history, ["check", str(two_runs[0]), "--twin"])
    assert result.exit_code == 2 and "Give --report FILE" in result.output, result.output
    assert not (tmp_path / "report.json").exists()
    result = CliRunner().invoke(history, ["check", str(two_runs[0]), "--twin",
                                          "--merged", str(tmp_path / "merged")])
    assert result.exit_code == 0, result.output
    assert (two_runs[0] / "report.json").read_text() == "its own"
    assert json.loads((tmp_path / "merged" / "report.json").read_text())["valid"] is True
    assert not (tmp_path / "report.json").exists()
    soak = tmp_path / "soak"
    soak.mkdir()
    two_runs[1].rename(soak / "b")
    result = CliRunner().invoke(history, ["check", str(soak), "--twin"])
    assert result.exit_code == 0 and (soak / "report.json").exists(), result.output


def test_help_explains_placement_and_exit_codes():
    for command in ("merge", "check"):
        text = CliRunner().invoke(history, [command, "--help"]).output
        assert "Exit codes" in text
        assert "r<k>" in text or command == "check"
        assert "directory of runs" in text
