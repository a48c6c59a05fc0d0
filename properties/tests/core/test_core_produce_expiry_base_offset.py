"""An acks=all produce that expires answers REQUEST_TIMED_OUT with the base offset its records
got, as Kafka does (DelayedProduce starts every waiting partition's answer as the append's
PartitionResponse with error REQUEST_TIMED_OUT, and clears the error when the acks arrive); the
broker answered -1. Found by the threaded lockstep (properties/threaded_machine.py)."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.core.replica_manager import ReplicaManager
from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.clock import ManualClock

KEY = ("t", 0)


def test_an_expired_acks_all_produce_keeps_its_base_offset():
    clock = ManualClock(1_000)
    rm = ReplicaManager(1, clock, lambda key: MemoryLog())
    rm.become_leader(KEY, PartitionConfig(), 0, (1, 2), (1, 2))
    one = build_batch([(None, b"a", (), None)])
    rm.append_records(1_000, 1, {KEY: one}, lambda results: None)  # offset 0, acks=1
    answers = []
    rm.append_records(100, -1, {KEY: one}, answers.append)  # offset 1; follower 2 is silent
    assert answers == []
    clock.advance(101)
    rm.advance_clock(clock())
    assert len(answers) == 1
    assert (answers[0][KEY].error, answers[0][KEY].base_offset) == (ErrorCode.request_timed_out, 1)
