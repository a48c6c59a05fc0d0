"""DelayedFetch completes exactly when min_bytes are readable across its partitions, and when
min_bytes <= 1 it completes on the first readable partition without counting bytes."""

from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.core.replica_manager import ReplicaManager
from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.clock import ManualClock

A, B = ("a", 0), ("b", 0)


def batch(value: bytes) -> bytes:
    return build_batch([(None, value, (), None)])


def two_partitions():
    rm = ReplicaManager(1, ManualClock(1_000), lambda key: MemoryLog())
    for key in (A, B):
        rm.become_leader(key, PartitionConfig(), 0, (1,), (1,))
    return rm


def produce(rm, key, value):
    rm.append_records(1_000, 1, {key: batch(value)}, lambda results: None)


def test_min_bytes_summed_across_partitions():
    rm = two_partitions()
    answers = []
    rm.fetch(-1, 500, 6_000, 1 << 20, {A: FetchPartition(0), B: FetchPartition(0)},
             answers.append)
    produce(rm, A, b"x" * 4_000)
    assert answers == []  # 4 KB readable, 6 KB wanted
    produce(rm, B, b"y" * 4_000)
    assert len(answers) == 1 and len(answers[0][A].records) > 4_000
    assert len(answers[0][B].records) > 4_000


class CountingLog(MemoryLog):
    counted = 0

    def bytes_between(self, start, end):
        CountingLog.counted += 1
        return super().bytes_between(start, end)


def test_min_bytes_one_completes_without_counting_bytes():
    rm = ReplicaManager(1, ManualClock(1_000), lambda key: CountingLog())
    rm.become_leader(A, PartitionConfig(), 0, (1,), (1,))
    answers = []
    rm.fetch(-1, 500, 1, 1 << 20, {A: FetchPartition(0)}, answers.append)
    CountingLog.counted = 0
    produce(rm, A, b"v")
    assert len(answers) == 1 and answers[0][A].records
    assert CountingLog.counted == 0


def test_parked_follower_fetch_wakes_on_append_not_on_expiry():
    rm = ReplicaManager(1, ManualClock(1_000), lambda key: MemoryLog())
    rm.become_leader(A, PartitionConfig(), 0, (1, 2), (1, 2))
    answers = []
    rm.fetch(2, 500, 1, 1 << 20, {A: FetchPartition(0, current_leader_epoch=0)},
             answers.append)
    assert answers == []  # parked: nothing to read
    produce(rm, A, b"v")
    assert len(answers) == 1 and answers[0][A].records  # woken by the append itself
