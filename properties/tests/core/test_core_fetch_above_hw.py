"""A consumer fetch above the hw (and within the leo) with max_wait > 0 waits in purgatory for
the hw to pass its offset, as in Kafka (DelayedFetch accumulates bytes only for a fetch offset
below the hw; the read above it is empty, not an error). Found by the threaded lockstep
(properties/threaded_machine.py): the broker answered at once, empty, while the model waited."""

from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.core.replica_manager import ReplicaManager
from kafkaref.impl.protocol.records import build_batch

KEY = ("t", 0)


def clock():
    return 1_000


def leader_with_a_silent_follower():
    rm = ReplicaManager(1, clock, lambda key: MemoryLog())
    rm.become_leader(KEY, PartitionConfig(), 0, (1, 2), (1, 2))
    batch = build_batch([(None, v, (), None) for v in (b"a", b"b", b"c")])
    rm.append_records(1_000, 1, {KEY: batch}, lambda results: None)
    assert rm.partition(KEY).high_watermark == 0  # follower 2 has not fetched: leo 3, hw 0
    return rm


def test_a_consumer_fetch_above_the_hw_waits_for_it():
    rm = leader_with_a_silent_follower()
    answers = []
    rm.fetch(-1, 500, 1, 1 << 20, {KEY: FetchPartition(1)}, answers.append)
    assert answers == []  # parked, not answered empty
    rm.fetch(2, 0, 1, 1 << 20, {KEY: FetchPartition(3)}, lambda results: None)  # hw -> 3
    assert len(answers) == 1
    result = answers[0][KEY]
    assert result.high_watermark == 3 and len(result.records) > 0


def test_a_consumer_fetch_beyond_the_leo_is_still_answered_at_once():
    rm = leader_with_a_silent_follower()
    answers = []
    rm.fetch(-1, 500, 1, 1 << 20, {KEY: FetchPartition(4)}, answers.append)
    assert len(answers) == 1 and answers[0][KEY].error.name == "offset_out_of_range"
