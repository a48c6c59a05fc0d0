"""DeleteRecords over several partitions, some answered at once and some waiting for their
follower: each partition is judged on its own, as Kafka's DelayedDeleteRecords.tryComplete
looks at every partition still pending. One that has its low watermark answers NONE with it,
whatever the partitions before it in the request; one still waiting when the request expires
answers REQUEST_TIMED_OUT with the low watermark it first saw.

Found by mutation testing (session 2225a175104f's survivor 00076): the `continue` past a
waiting partition read `break` passed the core layer, whose DeleteRecords named one partition;
the partitions after a waiting one then answered REQUEST_TIMED_OUT although done."""

from hypothesis import example, given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.wire_calls import call, core_brokers, create_topic, replicate_once

TIMEOUT_MS = 100


def _brokers_leading_every_partition(count: int):
    """Broker 0 leads partitions 0..count-1 of "t", broker 1 follows each; every partition
    holds 2 records ([0, 1]) on both, and the follower knows the hw."""
    leader, follower = core_brokers(2)
    create_topic(leader, "t", -1, -1, assignments=[(0, 1)] * count)
    for p in range(count):
        call(leader, 0, 12, {"transactional_id": None, "acks": 1, "timeout": 1000,
                             "topic_data": [{"name": "t", "partition_data": [{
                                 "index": p, "records": build_batch(
                                     [(b"k", b"v", (), None), (b"k", b"w", (), None)])}]}]})
        for _ in range(2):
            replicate_once(leader, follower, ("t", p))
    return leader, follower


@example(waits=[True, False])  # a done partition after a waiting one
@example(waits=[False, True, False])
@given(waits=st.lists(st.booleans(), min_size=1, max_size=5))
def test_each_partition_is_answered_on_its_own(waits):
    """waits[p]: partition p's deletion (to offset 1) waits for its follower, whose log start
    is still 0; else it deletes nothing (offset 0), which every replica already has."""
    leader, _ = _brokers_leading_every_partition(len(waits))
    offsets = {("t", p): 1 if waiting else 0 for p, waiting in enumerate(waits)}
    out = []
    leader.replica_manager.delete_records(TIMEOUT_MS, offsets, out.append)
    if any(waits):
        assert out == []  # parked
        leader.clock.now_ms += TIMEOUT_MS + 1
        leader.advance_clock()
    (results,) = out
    answered = {key: (r.error, r.low_watermark) for key, r in results.items()}
    assert answered == {("t", p): (ErrorCode.request_timed_out, 0) if waiting
                        else (ErrorCode.none, 0) for p, waiting in enumerate(waits)}


@given(waits=st.lists(st.booleans(), min_size=2, max_size=5))
def test_the_answer_comes_when_the_last_waiting_follower_has_the_new_start(waits):
    leader, follower = _brokers_leading_every_partition(len(waits))
    offsets = {("t", p): 1 if waiting else 0 for p, waiting in enumerate(waits)}
    out = []
    leader.replica_manager.delete_records(5000, offsets, out.append)
    for p in range(len(waits)):  # each follower learns its leader's start, then says so
        assert out == [] or not any(waits[p:])
        for _ in range(2):
            replicate_once(leader, follower, ("t", p))
    (results,) = out
    answered = {key: (r.error, r.low_watermark) for key, r in results.items()}
    assert answered == {("t", p): (ErrorCode.none, 1 if waiting else 0)
                        for p, waiting in enumerate(waits)}
