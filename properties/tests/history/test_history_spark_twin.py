"""The Spark job and the naive twin report exactly the same cases, on random small histories with
and without injected anomalies (many small histories are combined into one Spark run, since a
Spark job costs a second whatever its size); plus hand-written histories per anomaly."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaref.history.format import CheckConfig
from kafkaref.history.store import write_ops
from kafkaref.properties.history_strategies import combine, histories
from kafkaref.spark_checks import job, twin
from kafkaref.spark_checks.session import shared_test_session


@pytest.fixture(scope="session")
def spark():
    return shared_test_session()


some_histories = st.lists(st.booleans().flatmap(lambda bad: histories(anomalies=bad)),
                          min_size=1, max_size=12)


@settings(max_examples=6)
@given(parts=some_histories)
def test_spark_and_twin_report_the_same_cases(spark, tmp_path_factory, parts):
    path = tmp_path_factory.mktemp("h") / "history"
    write_ops(path, combine(parts))
    expected = twin.check(path, examples=None)
    actual = job.check(spark, path, examples=None)
    assert expected.error is None and actual.error is None, (expected.error, actual.error)
    assert dict(actual.anomalies) == dict(expected.anomalies)
    assert actual.valid == expected.valid
    assert actual.info == expected.info


def _send(index, process, partition, offset, value, type_="ok", time=None, records=None):
    time = index if time is None else time
    recs = records or [{"topic": "t", "partition": partition, "offset": offset, "value": value}]
    return [{"index": index, "time": time, "process": process, "type": "invoke", "f": "send"},
            {"index": index + 1, "time": time + 1, "process": process, "type": type_, "f": "send",
             "invoke_index": index, "records": recs}]


def _read(index, process, partition, pairs, kind="poll"):
    return [{"index": index, "time": index, "process": process, "type": "invoke", "f": kind},
            {"index": index + 1, "time": index + 1, "process": process, "type": "ok", "f": kind,
             "invoke_index": index,
             "records": [{"kind": kind, "topic": "t", "partition": partition, "offset": o,
                          "value": v} for o, v in pairs]}]


def test_a_clean_history_is_valid_and_each_defect_is_named(tmp_path, spark):
    clean = [*_send(0, 0, 0, 0, 10), *_send(2, 0, 0, 1, 11), *_read(4, 1, 0, [(0, 10), (1, 11)]),
             *_read(6, 9, 0, [(0, 10), (1, 11)], kind="final_read")]
    write_ops(tmp_path / "clean", clean)
    assert twin.check(tmp_path / "clean").valid is True
    lossy = [*_send(0, 0, 0, 0, 10), *_send(2, 0, 0, 1, 11), *_send(4, 0, 0, 2, 12),
             *_read(6, 9, 0, [(0, 10), (2, 12)], kind="final_read")]
    write_ops(tmp_path / "lossy", lossy)
    result = twin.check(tmp_path / "lossy")
    assert result.valid is False
    assert result.anomalies["lost_write"] == (("t", 0, 1, 11),)
    assert result.anomalies["int_poll_skip"] == ()  # a final read is not a poll
    assert twin.check(tmp_path / "lossy", CheckConfig(acks="1")).anomalies["lost_write"]
    assert job.check(spark, tmp_path / "lossy").anomalies == result.anomalies


def test_interleaved_batches_form_a_write_write_cycle(tmp_path, spark):
    a = [{"topic": "t", "partition": 0, "offset": 0, "value": 1},
         {"topic": "t", "partition": 1, "offset": 1, "value": 2}]
    b = [{"topic": "t", "partition": 0, "offset": 1, "value": 3},
         {"topic": "t", "partition": 1, "offset": 0, "value": 4}]
    ops = [*_send(0, 0, None, None, None, records=a), *_send(2, 1, None, None, None, records=b)]
    write_ops(tmp_path / "h", ops)
    assert twin.check(tmp_path / "h").anomalies["cycle"] == (((1, 3),),)
    assert job.check(spark, tmp_path / "h").anomalies["cycle"] == (((1, 3),),)


def test_an_unreadable_history_is_unknown(tmp_path, spark):
    write_ops(tmp_path / "h", [])
    (tmp_path / "h" / "records" / "part-00000.parquet").write_bytes(b"garbage")
    assert job.check(spark, tmp_path / "h").valid == "unknown"
    assert twin.check(tmp_path / "h").valid == "unknown"
    assert job.check(spark, tmp_path / "missing").exit_code == 2
