"""The chaos workload with Apache Kafka's Java client (chaos/java_workload.py): how the JSON lines
of VerifiableProducer and VerifiableConsumer become history ops (from canned lines, no JVM), and
one short run of the real JVMs against the embedded cluster with broker kills, judged valid."""

from __future__ import annotations

import json

import attrs
import pytest

from kafkaref.chaos.java_workload import JAVA_CLIENTS, KEYS, ROUND_S, JavaRoles, PollRecorder
from kafkaref.chaos.run import EXIT_VALID, RunOptions, run
from kafkaref.chaos.values import decode_value, encode_value
from kafkaref.chaos.workload import WorkloadConfig
from kafkaref.impl.client.partitioner import keyed_partition
from kafkaref.spark_checks.checker import history_checker


@attrs.frozen
class Invocation:
    process: int
    f: str
    value: object


class ListRecorder:
    """The recorder's interface, keeping (f, type, records, error) of every completion."""

    def __init__(self):
        self.done: list[tuple] = []

    def invoke(self, process, f, value=None):
        return Invocation(process, f, value)

    def complete(self, invocation, type_, *, error=None, value=None, records=()):
        self.done.append((invocation.f, type_, list(records), error))


class CannedWorkload:
    bootstrap, seed = "127.0.0.1:1", 0

    def __init__(self, config):
        self.config, self.recorder = config, ListRecorder()


class CannedRoles(JavaRoles):
    def __init__(self, workload, lines):
        super().__init__(workload)
        self.lines = lines

    def _events(self, command):
        yield from self.lines


def test_a_producer_round_completes_every_value_it_invoked():
    config = WorkloadConfig(rate=1.0, **JAVA_CLIENTS)
    workload = CannedWorkload(config)
    process, count = 7, int(config.rate * ROUND_S)
    CannedRoles(workload, [
        {"name": "startup_complete"},
        {"name": "producer_send_success", "value": "7.0", "partition": 2, "offset": 41},
        {"name": "producer_send_error", "value": "7.1", "exception": "TimeoutException"},
        {"name": "shutdown_complete"},
        {"name": "tool_data", "sent": 3, "acked": 1},
    ]).produce_round(process, "settings.properties")
    done = workload.recorder.done
    assert len(done) == count and all(f == "send" for f, *_ in done)
    outcome = {records[0][4] & 0xFFFFFFFF: (type_, records[0]) for _, type_, records, _ in done}
    assert outcome[0] == ("ok", ("send", "chaos", 2, 41, 7 << 32))
    partition = keyed_partition(str(1 % KEYS).encode(), config.partitions)
    assert outcome[1] == ("info", ("send", "chaos", partition, None, 7 << 32 | 1))
    assert outcome[2][0] == "info"  # handed to the client, never reported
    assert {outcome[n][0] for n in range(3, count)} == {"fail"}  # never sent


def test_a_consumer_s_lines_become_subscribe_and_poll_ops():
    recorder = ListRecorder()
    record = {"name": "record_data", "topic": "chaos", "partition": 1}
    PollRecorder(recorder, 5, "chaos").follow([
        {"name": "partitions_assigned", "partitions": [{"topic": "chaos", "partition": 1}]},
        {**record, "offset": 0, "value": "3.0"}, {**record, "offset": 1, "value": "3.1"},
        {"name": "records_consumed", "count": 2},
        {**record, "offset": 2, "value": "garbage"},
    ])
    assert [(f, t) for f, t, *_ in recorder.done] == [
        ("subscribe", "ok"), ("poll", "ok"), ("subscribe", "ok"), ("poll", "ok"), ("poll", "ok")]
    assert recorder.done[3][2] == [("poll", "chaos", 1, 0, 3 << 32), ("poll", "chaos", 1, 1,
                                                                       3 << 32 | 1)]
    assert recorder.done[4][2][0][4] < 0  # a value nobody wrote: a garbage read, not a crash


def test_values_decode_from_either_client():
    assert decode_value(b"12.345") == 12 << 32 | 345
    assert decode_value(encode_value(3 << 32 | 9)) == 3 << 32 | 9
    assert decode_value(b"1.2.3") < 0 and decode_value(None) < 0


def test_the_java_consumer_needs_java_producers():
    with pytest.raises(ValueError, match="every producer must be a Java one"):
        WorkloadConfig(java_consumers=1)


def test_a_chaos_run_with_the_java_client_is_valid(tmp_path):
    """2 VerifiableProducer JVMs and a VerifiableConsumer under broker kills (10 s)."""
    options = RunOptions(seed=3, time_limit_s=10, nemesis=("kill",),
                         workload=WorkloadConfig(**JAVA_CLIENTS), runs_dir=str(tmp_path),
                         run_id="java")
    result = run(options, log=lambda _: None, check=history_checker("twin"))
    report = json.loads((tmp_path / "java" / "report.json").read_text())
    assert result.exit_code == EXIT_VALID, {k: v for k, v in report.items() if k != "run"}
    counts = report["run"]["counts"]
    assert report["run"]["acknowledged"] > 200, counts
    assert counts.get("subscribe:ok", 0) >= 1 and counts.get("poll:ok", 0) > 10, counts
