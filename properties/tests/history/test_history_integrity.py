"""No damaged history is ever judged: a history's files are checked against the manifest its
writer left in meta.json (history/integrity.py), every Parquet page against its checksum, and
its rows against the format's structural rules (history/format.py STRUCTURE) before any anomaly;
whatever fails is "corrupt history", one line naming the file and what is wrong, exit 2. A
history written before manifests is still judged, and called unverified."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaref.commands.main import main
from kafkaref.history.format import STRUCTURE
from kafkaref.history.integrity import CorruptHistory, verify
from kafkaref.history.merge import merge
from kafkaref.history.store import HistoryWriter, export_jsonl, write_ops
from kafkaref.properties.history_damage import damage, unsealed
from kafkaref.properties.history_strategies import histories
from kafkaref.spark_checks import job, spark_error, structure, twin, twin_structure
from kafkaref.spark_checks.session import shared_test_session

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


@pytest.fixture(scope="module")
def spark():
    return shared_test_session()


@settings(max_examples=60, deadline=None)
@given(data=st.data(), ops=histories(max_ops=12))
def test_no_damage_to_a_history_is_ever_judged(tmp_path_factory, data, ops):
    """Bytes flipped or overwritten anywhere (meta.json included), files cut short, deleted or
    added, rows dropped or duplicated: the twin refuses the history as corrupt, and so do export
    and merge (whose copies would otherwise get a manifest of their own)."""
    path = tmp_path_factory.mktemp("h") / "h"
    write_ops(path, ops)
    assert twin.check(path).valid is True
    done = data.draw(damage(path), label="damage")
    result = twin.check(path)
    assert result.valid == "unknown", done
    assert result.error.startswith("corrupt history: "), (done, result.error)
    assert "\n" not in result.error
    with pytest.raises(CorruptHistory):
        export_jsonl(path, path.parent / "out.jsonl")
    with pytest.raises(CorruptHistory):
        merge([path], path.parent / "merged")


def _history(path, count: int = 600):
    """A valid history: sends to t/0 at offsets 0..count-1, then a final read of them."""
    ops = []
    for i in range(count):
        ops.append({"index": 2 * i, "time": 2 * i, "process": i % 4, "type": "invoke",
                    "f": "send"})
        ops.append({"index": 2 * i + 1, "time": 2 * i + 1, "process": i % 4, "type": "ok",
                    "f": "send", "invoke_index": 2 * i,
                    "records": [{"topic": "t", "partition": 0, "offset": i, "value": i}]})
    end = 2 * count
    ops.append({"index": end, "time": end, "process": 9, "type": "invoke", "f": "final_read"})
    ops.append({"index": end + 1, "time": end + 1, "process": 9, "type": "ok",
                "f": "final_read", "invoke_index": end, "records": [
                    {"kind": "final_read", "topic": "t", "partition": 0, "offset": i, "value": i}
                    for i in range(count)]})
    write_ops(path, ops)
    return path


def test_a_history_without_a_manifest_is_judged_and_called_unverified(tmp_path):
    path = unsealed_history(tmp_path)
    assert verify(path).verified is False
    result = CliRunner().invoke(main, ["check", str(path), "--twin"])
    assert result.exit_code == 0, result.output
    assert "files unverified: meta.json has no manifest" in result.output
    report = json.loads((path / "report.json").read_text())
    assert report["valid"] is True and report["integrity"]["verified"] is False


def unsealed_history(tmp_path):
    path = _history(tmp_path / "old")
    unsealed(path)
    return path


def test_200_bytes_overwritten_in_an_old_historys_ops_are_refused(tmp_path):
    """The issue's case, on a history without a manifest or page checksums: what the bytes
    broke shows, in the Parquet decoding or in the structural rules."""
    path = unsealed_history(tmp_path)
    part = path / "ops" / "part-00000.parquet"
    data = bytearray(part.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 200] = bytes(range(200))
    part.write_bytes(bytes(data))
    result = twin.check(path)
    assert result.valid == "unknown" and result.error.startswith("corrupt history: "), \
        result.error


def test_a_meta_json_that_lost_its_manifest_is_refused(tmp_path):
    """A damaged key must not pass the history off as one written before manifests."""
    path = _history(tmp_path / "h", 10)
    meta = (path / "meta.json").read_text()
    (path / "meta.json").write_text(meta.replace('"manifest"', '"manifesu"'))
    with pytest.raises(CorruptHistory, match="no manifest, but ops/part-00000.parquet was "
                                             "written with one"):
        verify(path)


def _structurally_broken(path, rule: str):
    """A history whose files are sound (sealed by the writer) but whose rows break rule."""
    ops = [(0, 0, 0, "invoke", "send", None), (1, 1, 0, "ok", "send", 0),
           (2, 2, 1, "invoke", "poll", None), (3, 3, 1, "ok", "poll", 2)]
    records = [(1, 0, "send", 0, "ok", 0, 1, "t", 0, 0, 7),
               (3, 0, "poll", 1, "ok", 2, 3, "t", 0, 0, 7),
               (3, 1, "hw", 1, "ok", 2, 3, "t", 0, 1, None)]
    if rule == "op_index":
        ops[3] = (5, *ops[3][1:])
    elif rule == "op_range":
        ops[2] = (2, -4, 1, "invoke", "poll", None)
    elif rule == "completion":
        ops[3] = (3, 3, 2, "ok", "poll", 2)  # another process's invocation
    elif rule == "record_range":
        records[1] = (3, 0, "poll", 1, "ok", 2, 3, "t", -1, 0, 7)
    elif rule == "record_op":
        records[2] = (3, 0, "hw", 1, "ok", 2, 3, "t", 0, 1, None)  # position 0 twice
    with HistoryWriter(path) as writer:
        for index, time, process, type_, f, invoked in ops:
            writer.ops.append((index, time, process, type_, f, invoked, None, None))
        for row in records:
            writer.records.append(row)
    return path


STRUCTURAL_CASES = ("op_index", "op_range", "completion", "record_range", "record_op")


@pytest.mark.parametrize("rule", STRUCTURAL_CASES)
def test_rows_breaking_a_structural_rule_are_refused_by_both_checkers(spark, tmp_path, rule):
    path = _structurally_broken(tmp_path / "h", rule)
    expected = twin.check(path)
    actual = job.check(spark, path)
    table = STRUCTURE[rule][0]
    for result in (expected, actual):
        assert result.valid == "unknown"
        assert result.error.startswith(f"corrupt history: {path}/{table}: "), result.error
        assert f"the rule {rule!r}" in result.error
    frames = job.load_frames(spark, str(path))
    try:
        assert structure.problems(frames.ops, frames.records) == twin_structure.problems(
            twin.TwinHistory.load(path).ops, twin.TwinHistory.load(path).records)
    finally:
        frames.release()


def test_the_structural_rules_hold_on_a_valid_history(spark, tmp_path):
    path = _history(tmp_path / "h", 50)
    frames = job.load_frames(spark, str(path))
    try:
        assert structure.problems(frames.ops, frames.records) == {}
    finally:
        frames.release()


def test_spark_verifies_page_checksums(spark, tmp_path):
    """A page changed after the manifest was checked still fails: Spark's Parquet reader
    checks every page's CRC, and the failure comes back as one line."""
    path = _history(tmp_path / "h", 2000)
    part = path / "records" / "part-00000.parquet"
    data = bytearray(part.read_bytes())
    data[100] ^= 0x01  # inside the first data page
    part.write_bytes(bytes(data))
    frames = job.load_frames(spark, str(path))
    try:
        with pytest.raises(Exception) as raised:
            frames.records.count()
    finally:
        frames.release()
    line = spark_error.one_line(raised.value)
    assert "checksum" in line.lower() and "\n" not in line, line


def test_unreadable_files_are_one_line_each_on_the_terminal(tmp_path):
    """Old histories (no manifest to catch the damage first): one whose ops file is cut short
    is refused naming the file; one Spark fails to read (a part file of another schema) gets
    the root cause in one line, Spark's stack traces going to its log file. Exit 2."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cut = unsealed_history(tmp_path / "cut")
    part = cut / "ops" / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[:300])
    mixed = unsealed_history(tmp_path / "mixed")
    pq.write_table(pa.table({"index": ["zero"], "time": [0], "process": [0], "type": ["invoke"],
                             "f": ["send"], "invoke_index": [None], "error": [None],
                             "value": [None]}), mixed / "ops" / "part-00001.parquet")
    log = tmp_path / "spark.log"
    done = subprocess.run([KAFKAREF, "check", str(cut), str(mixed)], capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "KAFKAREF_SPARK_LOG": str(log)})
    assert done.returncode == 2, done.stdout + done.stderr
    printed = done.stdout.splitlines()
    assert len(printed) == 4, printed  # "could not decide: ..." and "report: ..." each
    assert printed[0] == (f"could not decide: corrupt history: {part}: not a readable "
                          "Parquet file (Parquet magic bytes not found in footer. Either the "
                          "file is corrupted or this is not a parquet file.)"), printed[0]
    assert printed[2].startswith("could not decide: Spark failed: "), printed[2]
    assert f"(stack traces in {log})" in printed[2] and log.stat().st_size > 1000
    assert not any(line.lstrip().startswith("at ") for line in done.stderr.splitlines())


def test_a_remote_history_is_verified_through_spark(spark, tmp_path, monkeypatch):
    """hdfs:// s3a:// ... histories: Spark hashes each file where it lies (binaryFile); the
    same manifest check follows. Exercised here on the local disk, taken for remote."""
    path = _history(tmp_path / "h", 20)
    monkeypatch.setattr(job, "_is_local", lambda where: False)
    assert job.verify(spark, str(path))["verified"] is True
    part = path / "records" / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[:-10])
    with pytest.raises(CorruptHistory, match="part-00000.parquet: .* bytes, the manifest says"):
        job.verify(spark, str(path))
