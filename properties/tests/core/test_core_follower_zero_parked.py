"""A follower's parked fetch waits for its leader's log end, not the high watermark, whatever
the follower's broker id: broker 0 is a follower like any other (a replica id is >= 0, a
consumer's -1; Kafka's FetchParams.isFromFollower).

Found by mutation testing (session 79fa682's survivor 00261: `replica_id >= 0` read as `> 0`, so
broker 0's parked fetch waited for the high watermark, which only its own fetches move)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.wire_calls import call, call_later, core_brokers


@pytest.mark.parametrize("follower", [0, 1])
def test_a_parked_follower_fetch_is_answered_when_its_leaders_log_grows(follower):
    brokers = core_brokers(2)
    assert call(brokers[0], 19, 7, {"topics": [{
        "name": "t", "num_partitions": 2, "replication_factor": 2, "assignments": [],
        "configs": []}], "timeout": 5000, "validate_only": False}).topics[0].error_code == 0
    index = 1 - follower  # partition p is led by broker p: this one by the other broker
    leader = brokers[1 - follower]
    assert leader.metadata.topic("t").partitions[index].leader == leader.broker_id
    out = call_later(leader, 1, 12, {
        "replica_id": follower, "max_wait": 60_000, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [{"topic": "t", "partitions": [{
            "partition": index, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": 0, "last_fetched_epoch": -1}]}]})
    assert out == []  # nothing to read yet: parked
    call(leader, 0, 9, {"transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": [{
        "name": "t", "partition_data": [{"index": index, "records": build_batch(
            [(b"k", b"v", (), None)])}]}]})
    assert leader.replica_manager.partition(("t", index)).high_watermark == 0
    [body] = out  # the leader's log end moved: the follower's fetch has a batch to copy
    answer = body.responses[0].partitions[0]
    assert answer.error_code == ErrorCode.none and len(answer.records) > 0
