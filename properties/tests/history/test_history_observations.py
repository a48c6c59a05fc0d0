"""The anomalies a client sees without reading a wrong value: a value nobody wrote
(garbage_read), answers out of request order (response_reorder), an empty fetch answered long
before its max_wait (early_empty_fetch), a request left unanswered far past its timeout while its
broker answered a probe (hung_request). Hand-written histories, judged by the twin and the Spark
job, which must agree; the chaos probes that record these are chaos/probes.py."""

import pytest

from kafkaref.history.format import EARLY_FETCH_FRACTION, HUNG_GRACE_MS
from kafkaref.history.store import import_jsonl
from kafkaref.spark_checks import job, twin
from kafkaref.spark_checks.session import shared_test_session


@pytest.fixture(scope="module")
def spark():
    return shared_test_session()


def _judge(spark, tmp_path, text: str):
    source = tmp_path / "h.jsonl"
    source.write_text("\n".join(line.strip() for line in text.strip().splitlines()) + "\n")
    import_jsonl(source, tmp_path / "h")
    expected = twin.check(tmp_path / "h", examples=None)
    actual = job.check(spark, tmp_path / "h", examples=None)
    assert expected.error is None and actual.error is None, (expected.error, actual.error)
    assert dict(actual.anomalies) == dict(expected.anomalies)
    assert actual.valid == expected.valid
    return expected


# One send of value 10 to t/0 rejected with CORRUPT_MESSAGE (the wire flipped a bit of it), one
# ok at offset 0; the poll and the final read return what the broker kept.
_CORRUPTED = """
{"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send"}
{"index": 1, "time": 1, "process": 0, "type": "fail", "f": "send", "invoke_index": 0, "error": "CORRUPT_MESSAGE", "records": [{"topic": "t", "partition": 0, "value": 10}]}
{"index": 2, "time": 2, "process": 0, "type": "invoke", "f": "send"}
{"index": 3, "time": 3, "process": 0, "type": "ok", "f": "send", "invoke_index": 2, "records": [{"topic": "t", "partition": 0, "offset": 0, "value": 11}]}
{"index": 4, "time": 4, "process": 1, "type": "invoke", "f": "poll"}
{"index": 5, "time": 5, "process": 1, "type": "ok", "f": "poll", "invoke_index": 4, "records": [POLLED]}
{"index": 6, "time": 6, "process": 9, "type": "invoke", "f": "final_read"}
{"index": 7, "time": 7, "process": 9, "type": "ok", "f": "final_read", "invoke_index": 6, "records": [FINAL, {"kind": "hw", "topic": "t", "partition": 0, "offset": END}]}
"""


def _record(kind, offset, value):
    return (f'{{"kind": "{kind}", "topic": "t", "partition": 0, "offset": {offset}, '
            f'"value": {value}}}')


def test_a_corrupt_batch_refused_leaves_a_valid_history(spark, tmp_path):
    history = (_CORRUPTED.replace("POLLED", _record("poll", 0, 11))
               .replace("FINAL", _record("final_read", 0, 11)).replace("END", "1"))
    result = _judge(spark, tmp_path, history)
    assert result.valid is True and result.anomalies["garbage_read"] == ()


def test_a_corrupt_batch_accepted_is_a_garbage_read(spark, tmp_path):
    # The broker skipped the CRC check: it kept value 10 with bit 62 flipped at offset 0.
    garbage = 10 | 1 << 62
    history = (_CORRUPTED.replace("POLLED", _record("poll", 0, garbage))
               .replace("FINAL", f'{_record("final_read", 0, garbage)}, '
                                 f'{_record("final_read", 1, 11)}').replace("END", "2")
               .replace('"offset": 0, "value": 11}]}', '"offset": 1, "value": 11}]}'))
    result = _judge(spark, tmp_path, history)
    assert result.valid is False
    assert result.anomalies["garbage_read"] == (("t", 0, 0, garbage),)


def _probe_history(observations: list[tuple[str, str]]) -> str:
    """A prober's ops: (type, observation JSON) each, then a clean final read of t/0."""
    lines = []
    for i, (type_, found) in enumerate(observations):
        lines.append(f'{{"index": {2 * i}, "time": {10 * i}, "process": 3, "type": "invoke", '
                     f'"f": "pipeline"}}')
        lines.append(f'{{"index": {2 * i + 1}, "time": {10 * i + 5}, "process": 3, "type": '
                     f'"{type_}", "f": "pipeline", "invoke_index": {2 * i}, "value": {found}}}')
    n = 2 * len(observations)
    lines.append(f'{{"index": {n}, "time": 1000, "process": 9, "type": "invoke", '
                 f'"f": "final_read"}}')
    lines.append(f'{{"index": {n + 1}, "time": 1001, "process": 9, "type": "ok", "f": '
                 f'"final_read", "invoke_index": {n}, "records": [{{"kind": "hw", "topic": "t", '
                 f'"partition": 0, "offset": 0}}]}}')
    return "\n".join(lines)


def test_answers_in_request_order_are_valid_and_swapped_ones_are_not(spark, tmp_path):
    result = _judge(spark, tmp_path, _probe_history([
        ("ok", '{"sent": [1, 2], "answered": [1, 2]}'),
        ("ok", '{"sent": [3, 4], "answered": [4, 3]}'),
        ("info", '{"sent": [5, 6], "answered": [6]}'),  # gave up: not judged
    ]))
    assert result.anomalies["response_reorder"] == ((3, (3, 4), (4, 3)),)


def test_an_empty_fetch_answered_early_is_judged_against_its_max_wait(spark, tmp_path):
    early = int(400 * EARLY_FETCH_FRACTION) - 1
    result = _judge(spark, tmp_path, _probe_history([
        ("ok", '{"max_wait_ms": 400, "empty_fetch_ms": 402}'),  # waited: correct
        ("ok", f'{{"max_wait_ms": 400, "empty_fetch_ms": {early + 1}}}'),  # at the bound
        ("ok", f'{{"max_wait_ms": 400, "empty_fetch_ms": {early}}}'),
        ("ok", '{"max_wait_ms": 400}'),  # records or an error came back: not judged
    ]))
    assert result.anomalies["early_empty_fetch"] == ((5, 400, early),)


def test_a_request_unanswered_past_its_timeout_is_hung_only_if_its_broker_answered(
        spark, tmp_path):
    late = 3000 + HUNG_GRACE_MS + 1
    result = _judge(spark, tmp_path, _probe_history([
        ("info", f'{{"timeout_ms": 3000, "waited_ms": {late}, "probe": "answered"}}'),
        ("info", f'{{"timeout_ms": 3000, "waited_ms": {late}, "probe": "silent"}}'),  # paused
        ("info", f'{{"timeout_ms": 3000, "waited_ms": {late - 1}, "probe": "answered"}}'),
    ]))
    assert result.anomalies["hung_request"] == ((1, 3000, late),)
    assert result.valid is False


# Seed 102 of `kafkaref chaos soak --peer kafkaref --seed 100` (issue 24), cut down: a produce
# invoked at 27.87 s while its leader was isolated from its followers, and then the clients cut
# from that leader (29.81 s to the heal at 34.31 s). The broker's REQUEST_TIMED_OUT (due at 30.87
# s) sat in the cut; the producer gave up at 35.91 s (8041 ms) and its probe, after the heal, was
# answered. Judged hung, it was the harness's silence, not the broker's. Ops 10-15: a pause, the
# same. Ops 16-17: the same wait with no fault of that kind over it stays hung.
_SILENCED = """
{"index": 0, "time": 24610, "process": -1, "type": "invoke", "f": "partition", "value": {"links": ["peer-0-1"], "mode": "isolate"}}
{"index": 1, "time": 24611, "process": -1, "type": "ok", "f": "partition", "invoke_index": 0}
{"index": 2, "time": 27870, "process": 15, "type": "invoke", "f": "send"}
{"index": 3, "time": 28320, "process": -1, "type": "invoke", "f": "heal", "value": {"links": ["peer-0-1"], "mode": "isolate"}}
{"index": 4, "time": 28321, "process": -1, "type": "ok", "f": "heal", "invoke_index": 3}
{"index": 5, "time": 29810, "process": -1, "type": "invoke", "f": "partition", "value": {"links": ["client-0"], "mode": "clients"}}
{"index": 6, "time": 29811, "process": -1, "type": "ok", "f": "partition", "invoke_index": 5}
{"index": 7, "time": 34310, "process": -1, "type": "invoke", "f": "heal", "value": {"links": ["client-0"], "mode": "clients"}}
{"index": 8, "time": 34320, "process": -1, "type": "ok", "f": "heal", "invoke_index": 7}
{"index": 9, "time": 35911, "process": 15, "type": "info", "f": "send", "invoke_index": 2, "error": "TimeoutError", "value": {"broker": 0, "probe": "answered", "timeout_ms": 3000, "waited_ms": 8041}}
{"index": 10, "time": 40000, "process": 16, "type": "invoke", "f": "send"}
{"index": 11, "time": 41000, "process": -1, "type": "invoke", "f": "pause", "value": {"brokers": [2], "role": "leader"}}
{"index": 12, "time": 41001, "process": -1, "type": "ok", "f": "pause", "invoke_index": 11}
{"index": 13, "time": 46000, "process": -1, "type": "invoke", "f": "resume", "value": {"brokers": [2], "role": "leader"}}
{"index": 14, "time": 46001, "process": -1, "type": "ok", "f": "resume", "invoke_index": 13}
{"index": 15, "time": 48100, "process": 16, "type": "info", "f": "send", "invoke_index": 10, "error": "TimeoutError", "value": {"broker": 2, "probe": "answered", "timeout_ms": 3000, "waited_ms": 8100}}
{"index": 16, "time": 50000, "process": 17, "type": "invoke", "f": "send"}
{"index": 17, "time": 58100, "process": 17, "type": "info", "f": "send", "invoke_index": 16, "error": "TimeoutError", "value": {"broker": 1, "probe": "answered", "timeout_ms": 3000, "waited_ms": 8100}}
{"index": 18, "time": 60000, "process": 9, "type": "invoke", "f": "final_read"}
{"index": 19, "time": 60001, "process": 9, "type": "ok", "f": "final_read", "invoke_index": 18, "records": [{"kind": "hw", "topic": "t", "partition": 0, "offset": 0}]}
"""


def test_a_request_silenced_by_a_clients_cut_or_a_pause_is_not_hung(spark, tmp_path):
    result = _judge(spark, tmp_path, _SILENCED)
    assert result.anomalies["hung_request"] == ((17, 3000, 8100),)


def test_latency_is_not_judged_in_a_history_with_clock_faults(spark, tmp_path):
    # A broker whose monotonic clock jumped expires its timers early: a correct one then
    # answers an empty fetch at once.
    history = _probe_history([("ok", '{"max_wait_ms": 400, "empty_fetch_ms": 1}')]) + """
    {"index": 4, "time": 2000, "process": -1, "type": "invoke", "f": "clock"}
    {"index": 5, "time": 2001, "process": -1, "type": "ok", "f": "clock", "invoke_index": 4}
    """
    result = _judge(spark, tmp_path, history)
    assert result.anomalies["early_empty_fetch"] == ()


def test_a_read_of_bytes_that_are_no_batch_is_a_corrupt_read(spark, tmp_path):
    # The final read of t/0 met a torn batch at offset 3 (no CRC fix makes it one): the reader
    # gave up (info), and where it stopped is the case; a poll without an observation is not.
    result = _judge(spark, tmp_path, _probe_history([
        ("info", '{"corrupt_batch": {"topic": "t", "partition": 0, "offset": 3}}'),
        ("info", '{"corrupt_batch": "elsewhere"}'),  # not an observation of this kind
    ]))
    assert result.anomalies["corrupt_read"] == ((1, "t", 0, 3),)
    assert result.valid is False
