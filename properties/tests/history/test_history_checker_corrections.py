"""Checker corrections found by trying hand-written histories as a new user would (issue 12,
item 7). Each history is written here as JSON lines, the way a user would write one, and judged
by the naive twin and by the Spark job, which must agree."""

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from kafkaref.history.format import CheckConfig, HistoryError
from kafkaref.history.store import history_config, import_jsonl, read_table, write_ops
from kafkaref.properties.history_strategies import histories
from kafkaref.spark_checks import job, twin
from kafkaref.spark_checks.session import shared_test_session


@pytest.fixture(scope="module")
def spark():
    return shared_test_session()


def _jsonl(tmp_path, text: str, name="h.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(line.strip() for line in text.strip().splitlines()) + "\n")
    return path


def _both(spark, path):
    """The twin's result, after checking the Spark job reports exactly the same."""
    expected = twin.check(path, examples=None)
    actual = job.check(spark, path, examples=None)
    assert expected.error is None and actual.error is None, (expected.error, actual.error)
    assert dict(actual.anomalies) == dict(expected.anomalies)
    assert actual.valid == expected.valid
    return expected


def _judge(tmp_path, spark, history: str):
    """Import the JSON lines of `history` and judge them with both checkers (_both)."""
    import_jsonl(_jsonl(tmp_path, history), tmp_path / "h")
    return _both(spark, tmp_path / "h")


# Two sends to t/0 at offsets 0 and 1; a consumer polls both.
_SENT_AND_POLLED = """
{"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send"}
{"index": 1, "time": 1, "process": 0, "type": "ok", "f": "send", "invoke_index": 0, "records": [{"topic": "t", "partition": 0, "offset": 0, "value": 10}]}
{"index": 2, "time": 2, "process": 0, "type": "invoke", "f": "send"}
{"index": 3, "time": 3, "process": 0, "type": "ok", "f": "send", "invoke_index": 2, "records": [{"topic": "t", "partition": 0, "offset": 1, "value": 11}]}
{"index": 4, "time": 4, "process": 1, "type": "invoke", "f": "poll"}
{"index": 5, "time": 5, "process": 1, "type": "ok", "f": "poll", "invoke_index": 4, "records": [{"kind": "poll", "topic": "t", "partition": 0, "offset": 0, "value": 10}, {"kind": "poll", "topic": "t", "partition": 0, "offset": 1, "value": 11}]}
"""


def _final_read(records: str) -> str:
    """The final phase's read (process 9) after _SENT_AND_POLLED; `records` is the JSON list of
    final_read and hw records it returned."""
    return f"""
    {{"index": 6, "time": 6, "process": 9, "type": "invoke", "f": "final_read"}}
    {{"index": 7, "time": 7, "process": 9, "type": "ok", "f": "final_read", "invoke_index": 6, "records": {records}}}
    """


def test_a_partition_the_final_read_found_empty_was_read(tmp_path, spark):
    # The final phase read t/0 to end offset 0 (an hw record, no final_read records): the log is
    # empty, so the records polled from it were dirty reads and the sends are lost, not unknown.
    result = _judge(tmp_path, spark, _SENT_AND_POLLED + _final_read(
        '[{"kind": "hw", "topic": "t", "partition": 0, "offset": 0}]'))
    assert result.valid is False
    assert result.anomalies["dirty_read"] == (("t", 0, 0, 10), ("t", 0, 1, 11))


def test_a_final_read_truncated_below_the_polls_makes_them_dirty(tmp_path, spark):
    # The final log of t/0 ends at offset 1 (holding only value 10): the poll of offset 1 read a
    # record the log no longer has. value 11 was acknowledged at 1 and the log does not extend
    # past it, so it is not a lost write (no later record proves it should be there).
    result = _judge(tmp_path, spark, _SENT_AND_POLLED + _final_read(
        '[{"kind": "final_read", "topic": "t", "partition": 0, "offset": 0, "value": 10}, {"kind": "hw", "topic": "t", "partition": 0, "offset": 1}]'))
    assert result.anomalies["dirty_read"] == (("t", 0, 1, 11),)
    assert result.anomalies["lost_write"] == ()


def test_the_end_offset_of_a_final_read_extends_the_log_past_a_missing_write(tmp_path, spark):
    # The final read of t/0 returned value 10 only, but read to end offset 3: value 11,
    # acknowledged at offset 1, is gone although the log extends past it.
    result = _judge(tmp_path, spark, _SENT_AND_POLLED + _final_read(
        '[{"kind": "final_read", "topic": "t", "partition": 0, "offset": 0, "value": 10}, {"kind": "hw", "topic": "t", "partition": 0, "offset": 3}]'))
    assert result.anomalies["lost_write"] == (("t", 0, 1, 11),)


def test_without_a_final_read_of_the_partition_polls_are_not_judged(tmp_path, spark):
    result = _judge(tmp_path, spark, _SENT_AND_POLLED + _final_read(
        '[{"kind": "hw", "topic": "t", "partition": 5, "offset": 0}]'))
    assert result.anomalies["dirty_read"] == () and result.valid is True


# Offsets 1 and 3 hold transaction markers (no value is known there): polls that step over them
# skipped nothing. Offset 5 holds value 13, which the second poll does skip.
_MARKERS = """
{"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send"}
{"index": 1, "time": 1, "process": 0, "type": "ok", "f": "send", "invoke_index": 0, "records": [{"topic": "t", "partition": 0, "offset": 0, "value": 10}, {"topic": "t", "partition": 0, "offset": 2, "value": 11}, {"topic": "t", "partition": 0, "offset": 4, "value": 12}, {"topic": "t", "partition": 0, "offset": 5, "value": 13}, {"topic": "t", "partition": 0, "offset": 6, "value": 14}]}
{"index": 2, "time": 2, "process": 1, "type": "invoke", "f": "poll"}
{"index": 3, "time": 3, "process": 1, "type": "ok", "f": "poll", "invoke_index": 2, "records": [{"kind": "poll", "topic": "t", "partition": 0, "offset": 0, "value": 10}, {"kind": "poll", "topic": "t", "partition": 0, "offset": 2, "value": 11}]}
{"index": 4, "time": 4, "process": 1, "type": "invoke", "f": "poll"}
{"index": 5, "time": 5, "process": 1, "type": "ok", "f": "poll", "invoke_index": 4, "records": [{"kind": "poll", "topic": "t", "partition": 0, "offset": 4, "value": 12}, {"kind": "poll", "topic": "t", "partition": 0, "offset": 6, "value": 14}]}
{"index": 6, "time": 6, "process": 9, "type": "invoke", "f": "final_read"}
{"index": 7, "time": 7, "process": 9, "type": "ok", "f": "final_read", "invoke_index": 6, "records": [{"kind": "final_read", "topic": "t", "partition": 0, "offset": 0, "value": 10}, {"kind": "final_read", "topic": "t", "partition": 0, "offset": 2, "value": 11}, {"kind": "final_read", "topic": "t", "partition": 0, "offset": 4, "value": 12}, {"kind": "final_read", "topic": "t", "partition": 0, "offset": 6, "value": 14}, {"kind": "hw", "topic": "t", "partition": 0, "offset": 7}]}
"""


def test_skips_are_judged_on_values_in_the_log_not_on_offset_arithmetic(tmp_path, spark):
    result = _judge(tmp_path, spark, _MARKERS)
    # Only the step from 12 (offset 4) to 14 (offset 6) skipped a value (13 at offset 5), inside
    # one poll; the gaps at offsets 1 and 3 (within the first poll, and between the polls) hold
    # no value and are no skips. The final read skips 13 too, but a final read is not a poll.
    assert result.anomalies["int_poll_skip"] == ((1, "t", 0, 5, 4, 5, 6),)
    assert result.anomalies["poll_skip"] == ()
    assert result.anomalies["lost_write"] == (("t", 0, 5, 13),)


def test_a_final_read_is_not_a_poll(tmp_path, spark):
    # A poller that also takes part in the final phase: its final read starts again at offset 0
    # (no nonmonotonic poll) and reads past a gap (no skip).
    history = _SENT_AND_POLLED + """
    {"index": 6, "time": 6, "process": 1, "type": "invoke", "f": "final_read"}
    {"index": 7, "time": 7, "process": 1, "type": "ok", "f": "final_read", "invoke_index": 6, "records": [{"kind": "final_read", "topic": "t", "partition": 0, "offset": 0, "value": 10}, {"kind": "final_read", "topic": "t", "partition": 0, "offset": 1, "value": 11}]}
    """
    result = _judge(tmp_path, spark, history)
    assert result.valid is True
    assert result.anomalies["nonmonotonic_poll"] == ()


@settings(max_examples=40)
@given(histories(anomalies=False))
def test_correct_histories_with_markers_and_empty_final_reads_are_valid(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("h") / "history"
    write_ops(path, ops)
    result = twin.check(path)
    assert result.valid is True, result.to_json()


# --- import --------------------------------------------------------------------------------


_HEADER = '{"kafkaref_history": 1, "config": {"acks": "-1"}}\n'


def test_acks_minus_one_means_all(tmp_path):
    import_jsonl(_jsonl(tmp_path, _HEADER + _SENT_AND_POLLED), tmp_path / "h")
    assert history_config(tmp_path / "h") == CheckConfig(acks="all")
    assert CheckConfig.from_dict({"acks": -1}) == CheckConfig()


def test_an_import_failing_part_way_leaves_no_history_and_can_be_retried(tmp_path):
    bad = _SENT_AND_POLLED + '{"index": 6, "time": 6, "process": 1, "type": "done", "f": "poll"}\n'
    source = _jsonl(tmp_path, bad)
    with pytest.raises(HistoryError, match="line 7"):
        import_jsonl(source, tmp_path / "h")
    assert not (tmp_path / "h").exists()
    assert [p.name for p in tmp_path.iterdir()] == [source.name]  # no staging directory left
    # The user fixes the file and runs the same import again.
    source.write_text(_SENT_AND_POLLED.strip() + "\n")
    assert import_jsonl(source, tmp_path / "h") == 6
    assert read_table(tmp_path / "h", "ops").num_rows == 6
    (tmp_path / "empty").mkdir()  # an empty directory given as the target is fine too
    assert import_jsonl(source, tmp_path / "empty") == 6
    with pytest.raises(HistoryError, match="already holds a history"):
        import_jsonl(source, tmp_path / "h")


@pytest.mark.parametrize(("extra", "message"), [
    ('{"index": 3, "time": 9, "process": 2, "type": "invoke", "f": "poll"}',
     "line 7: op index 3 already used at line 4"),
    ('{"index": 6, "time": 9, "process": 2, "type": "invoke", "f": "poll"}\n'
     '{"index": 7, "time": 8, "process": 2, "type": "ok", "f": "poll", "invoke_index": 6}',
     "line 8: completion at time 8 before its invocation"),
    ('{"index": 6, "time": 9, "process": 2, "type": "ok", "f": "poll", "invoke_index": 60}',
     "line 7: completion without a known invoke_index"),
    ('{"index": 6, "time": 9, "process": 2, "type": "invoke", "f": "poll", "records": 5}',
     "line 7: records must be a list"),
    ('[1, 2]', "line 7: expected an object"),
])
def test_bad_lines_are_rejected_with_their_number(tmp_path, extra, message):
    source = _jsonl(tmp_path, _SENT_AND_POLLED + extra)
    with pytest.raises(HistoryError, match=message):
        import_jsonl(source, tmp_path / "h")
    assert not (tmp_path / "h").exists()


def test_history_import_and_export_on_the_command_line(tmp_path):
    from kafkaref.commands.main import main

    source = _jsonl(tmp_path, _HEADER + _SENT_AND_POLLED)
    runner = CliRunner()
    imported = runner.invoke(main, ["history", "import", str(source), str(tmp_path / "h")])
    assert imported.exit_code == 0, imported.output
    assert "6 ops" in imported.output
    exported = runner.invoke(main, ["history", "export", str(tmp_path / "h"),
                                    str(tmp_path / "out.jsonl")])
    assert exported.exit_code == 0, exported.output
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["config"]["acks"] == "all" and len(lines) == 7
    again = runner.invoke(main, ["history", "import", str(source), str(tmp_path / "h")])
    assert again.exit_code == 2 and "already holds a history" in again.output
    broken = _jsonl(tmp_path, _SENT_AND_POLLED + "{", name="broken.jsonl")
    failed = runner.invoke(main, ["history", "import", str(broken), str(tmp_path / "b")])
    assert failed.exit_code == 2 and "line 7" in failed.output
    assert not (tmp_path / "b").exists()


# --- several histories in one Spark session --------------------------------------------------


def test_check_takes_several_histories_and_writes_a_report_each(tmp_path, monkeypatch):
    from kafkaref.commands.main import main
    from kafkaref.spark_checks import session

    starts = []
    spark = shared_test_session()

    def counting(*args, **kwargs):
        starts.append(args)
        return spark

    monkeypatch.setattr(session, "get_session", counting)
    write_ops(tmp_path / "good", _ops(_SENT_AND_POLLED + """
    {"index": 6, "time": 6, "process": 9, "type": "invoke", "f": "final_read"}
    {"index": 7, "time": 7, "process": 9, "type": "ok", "f": "final_read", "invoke_index": 6, "records": [{"kind": "final_read", "topic": "t", "partition": 0, "offset": 0, "value": 10}, {"kind": "final_read", "topic": "t", "partition": 0, "offset": 1, "value": 11}]}
    """))
    write_ops(tmp_path / "bad", _ops(_MARKERS))
    result = CliRunner().invoke(main, ["check", str(tmp_path / "good"), str(tmp_path / "bad")])
    assert result.exit_code == 1, result.output  # the worst of the verdicts
    assert len(starts) == 1
    assert json.loads((tmp_path / "good" / "report.json").read_text())["valid"] is True
    assert json.loads((tmp_path / "bad" / "report.json").read_text())["valid"] is False
    clash = CliRunner().invoke(main, ["check", str(tmp_path / "good"), str(tmp_path / "bad"),
                                      "--report", str(tmp_path / "r.json")])
    assert clash.exit_code == 2 and "one history" in clash.output


def _ops(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
