"""The workload's recording rules, on fake clients (no broker): what each outcome means."""

from __future__ import annotations

import random

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.chaos.recorder import Recorder
from kafkaref.chaos.workload import (
    ObservingConsumer,
    Workload,
    WorkloadConfig,
    decode_value,
    encode_value,
)
from kafkaref.impl.client.cluster_view import NoBrokerAvailable
from kafkaref.impl.client.producer import ProduceError


class ListWriter:
    """The two calls a Recorder makes on a HistoryWriter, kept in lists."""

    def __init__(self):
        self.ops, self.records = [], []

    def op(self, index, time, process, type, f, **kw):
        self.ops.append({"index": index, "process": process, "type": type, "f": f, **kw})

    def record(self, op_index, position, kind, process, type, invoke_time, complete_time,
               topic, partition, offset, value):
        self.records.append((op_index, kind, partition, offset, value))


class FakeView:
    """The producer's cluster view: partition 0's leader is broker 0, nobody listens there."""

    def __init__(self):
        self.leaders = {("chaos", 0): (0, 1)}
        self.brokers = {0: ("127.0.0.1", 1)}

    def refresh(self, topics):
        pass


class RaisingProducer:
    def __init__(self, error):
        self.error = error
        self.cluster = FakeView()

    def send(self, topic, value, partition=None):
        raise self.error

    def flush(self):
        pass


def _workload(writer):
    return Workload("127.0.0.1:1", Recorder(writer), WorkloadConfig(partitions=1), seed=0)


@pytest.mark.parametrize(("error", "expected"), [
    # a deposed leader answers the produces waiting in its purgatory with this, although the
    # batch is in its log and may be committed by the new leader: not a definite failure
    (ProduceError(ErrorCode.not_leader_or_follower), "info"),
    (ProduceError(ErrorCode.request_timed_out), "info"),
    (ProduceError(ErrorCode.not_enough_replicas_after_append), "info"),
    (ProduceError(ErrorCode.not_enough_replicas), "fail"),
    (NoBrokerAvailable("no leader"), "fail"),
    (ConnectionRefusedError(), "fail"),
    (TimeoutError(), "info"),
    (ConnectionResetError(), "info"),
])
def test_send_outcome_meaning(error, expected):
    writer = ListWriter()
    outcome = _workload(writer)._send_ours(RaisingProducer(error), 5, 7, random.Random(0))
    assert outcome == expected
    assert [op["type"] for op in writer.ops] == ["invoke", expected]
    assert writer.records == [(1, "send", 0, None, 5 << 32 | 7)]
    if isinstance(error, TimeoutError):  # silence: the broker was probed, and did not answer
        assert '"probe": "silent"' in writer.ops[1]["value"]
        assert '"timeout_ms": 3000' in writer.ops[1]["value"]


class FakeConsumer(ObservingConsumer):
    """Polls return nothing; each poll reports the next (hw, epoch) of a script."""

    def __init__(self, script):
        self.script = list(script)
        self.hws = {}
        self.positions = {("chaos", 0): 0}

    def poll(self, max_wait_ms=500, min_bytes=1):
        self.hws[("chaos", 0)] = self.script.pop(0)
        return []


def test_leader_change_ends_the_observing_process():
    """hw 10 at epoch 1, then 8 at epoch 2 (a new leader one fetch round behind): the second
    hw is not recorded for the same process, whose polling ends there."""
    writer = ListWriter()
    workload, consumer, epochs = _workload(writer), FakeConsumer([(10, 1), (8, 2)]), {}
    assert workload._poll_ours(consumer, 3, epochs) is True
    assert workload._poll_ours(consumer, 3, epochs) is False
    hws = [r for r in writer.records if r[1] == "hw"]
    assert hws == [(1, "hw", 0, 10, None)]


def test_values_round_trip_and_garbage_is_never_a_producer_value():
    for value in (0, 1, 5 << 32 | 7, -(1 << 63)):
        assert decode_value(encode_value(value)) == value
    assert decode_value(b"abc") < 0 and decode_value(None) < 0
