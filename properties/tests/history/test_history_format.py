"""history/store.py (format: history/format.py): the Parquet writer/reader and the JSON-lines form round-trip, memory stays
bounded by row groups, and bad input is a clear HistoryError."""

import json

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings

from kafkaref.history.format import SCHEMA_VERSION, CheckConfig, HistoryError, allowed_anomalies
from kafkaref.history.store import (
    HistoryWriter,
    WriterLimits,
    export_jsonl,
    history_config,
    import_jsonl,
    iter_batches,
    read_table,
    write_ops,
)
from kafkaref.properties.history_strategies import histories


def _strip(ops):
    return [{k: v for k, v in op.items() if k != "_line"} for op in ops]


@settings(max_examples=25)
@given(histories(anomalies=True))
def test_jsonl_round_trip(tmp_path_factory, ops):
    base = tmp_path_factory.mktemp("h")
    write_ops(base / "a", ops)
    export_jsonl(base / "a", base / "a.jsonl")
    if not ops:  # an empty history exports, but a file of no ops is refused on import
        with pytest.raises(HistoryError, match="no ops"):
            import_jsonl(base / "a.jsonl", base / "b")
        return
    import_jsonl(base / "a.jsonl", base / "b")
    for table in ("ops", "records"):
        assert read_table(base / "a", table).equals(read_table(base / "b", table))
    lines = (base / "a.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["kafkaref_history"] == SCHEMA_VERSION
    assert len(lines) == len(ops) + 1


def test_records_are_denormalised_from_their_ops(tmp_path):
    ops = [
        {"index": 0, "time": 5, "process": 3, "type": "invoke", "f": "send"},
        {"index": 1, "time": 9, "process": 3, "type": "ok", "f": "send", "invoke_index": 0,
         "records": [{"topic": "t", "partition": 1, "offset": 7, "value": 42}]},
    ]
    write_ops(tmp_path / "h", ops)
    [record] = read_table(tmp_path / "h", "records").to_pylist()
    assert record == {"op_index": 1, "position": 0, "kind": "send", "process": 3, "type": "ok",
                      "invoke_time": 5, "complete_time": 9, "topic": "t", "partition": 1,
                      "offset": 7, "value": 42}


def test_streaming_writer_rolls_files_and_row_groups(tmp_path):
    limits = WriterLimits(row_group_rows=100, file_rows=1000)
    with HistoryWriter(tmp_path / "h", limits=limits, config=CheckConfig(acks="1")) as writer:
        for i in range(2500):
            writer.op(i, i, 0, "invoke", "poll")
    files = sorted((tmp_path / "h" / "ops").glob("*.parquet"))
    assert len(files) == 3
    assert max(pq.ParquetFile(f).metadata.row_group(0).num_rows for f in files) == 100
    assert sum(b.num_rows for b in iter_batches(tmp_path / "h", "ops", batch_rows=64)) == 2500
    assert history_config(tmp_path / "h") == CheckConfig(acks="1")


@pytest.mark.parametrize("bad", [
    {"index": 0, "time": 0, "process": 0, "type": "done", "f": "send"},
    {"index": 0, "time": 0, "process": 0, "type": "ok", "f": "send"},
    {"index": "x", "time": 0, "process": 0, "type": "invoke", "f": "send"},
    {"time": 0, "process": 0, "type": "invoke", "f": "send"},
])
def test_bad_ops_are_rejected(tmp_path, bad):
    with pytest.raises(HistoryError):
        write_ops(tmp_path / "h", [bad])


def test_bad_files_are_rejected(tmp_path):
    with pytest.raises(HistoryError, match="no meta.json"):
        read_table(tmp_path, "ops")
    write_ops(tmp_path / "h", [])
    (tmp_path / "h" / "ops" / "part-00000.parquet").write_bytes(b"PAR1 garbage")
    with pytest.raises(HistoryError, match="corrupt"):
        read_table(tmp_path / "h", "ops")
    (tmp_path / "h" / "meta.json").write_text('{"schema_version": 99}')
    with pytest.raises(HistoryError, match="schema version"):
        read_table(tmp_path / "h", "ops")
    (tmp_path / "j.jsonl").write_text("{not json\n")
    with pytest.raises(HistoryError, match="line 1"):
        import_jsonl(tmp_path / "j.jsonl", tmp_path / "j")
    with pytest.raises(HistoryError, match="already holds"):
        HistoryWriter(tmp_path / "h")


def test_configuration_decides_what_is_allowed():
    assert allowed_anomalies(CheckConfig()) == frozenset()
    assert "lost_write" in allowed_anomalies(CheckConfig(acks="1"))
    assert "lost_write" in allowed_anomalies(CheckConfig(unclean_election=True))
    assert {"duplicate", "send_reorder"} <= allowed_anomalies(CheckConfig(idempotence=False))
    subscribe = allowed_anomalies(CheckConfig(mode="subscribe"))
    assert "poll_skip" in subscribe and "int_poll_skip" not in subscribe
    with pytest.raises(HistoryError):
        CheckConfig.from_dict({"acks": "all", "colour": "red"})
