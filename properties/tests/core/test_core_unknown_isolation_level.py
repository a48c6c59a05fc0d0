"""ListOffsets at an isolation level Kafka does not know, in the core layer: every partition
named, known or not, answers ListOffsetsRequest.getErrorResponse's values (UNKNOWN_SERVER_ERROR,
offset and timestamp -1, leader epoch -1 from v4). The same rule through a server is
properties/tests/server/test_server_isolation_level.py; the core's own layer never sent the
field other than 0.

A Fetch at such a level fails the same way from a consumer (replica id -1), while a follower's
Fetch, which Kafka never reads the field of, is served (broker 0's as any other's).

Found by mutation testing (session 2225a175104f's survivor 00368): the answer's timestamp -1
read -2, on a line the core layer never ran; session 9df4313ef37b's survivor 00117: the
consumer test `replica_id < 0` read `< 1` failed broker 0's follower fetch."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers, create_topic

UNKNOWN = -1  # ListOffsetsResponse.UNKNOWN_OFFSET, UNKNOWN_TIMESTAMP, UNKNOWN_EPOCH


@pytest.mark.parametrize("version", [2, 3, 4, 6, 9, 10])
@pytest.mark.parametrize("level", [2, -1, 127])
def test_list_offsets_at_an_unknown_isolation_level(version, level):
    (b,) = core_brokers(1)
    named = [{"partition_index": i, "timestamp": -1, "current_leader_epoch": -1} for i in (0, 3)]
    body = call(b, 2, version, {"replica_id": -1, "isolation_level": level,
                                "topics": [{"name": "absent", "partitions": named}]})
    (topic,) = body.topics
    answered = [(p.partition_index, p.error_code, p.offset, p.timestamp,
                 getattr(p, "leader_epoch", UNKNOWN)) for p in topic.partitions]
    assert answered == [(i, ErrorCode.unknown_server_error, UNKNOWN, UNKNOWN, UNKNOWN)
                        for i in (0, 3)]


@pytest.mark.parametrize("follower", [0, 1, -1])  # -1: a consumer
@pytest.mark.parametrize("level", [2, -1, 127])
def test_fetch_at_an_unknown_isolation_level(follower, level):
    brokers = core_brokers(2)
    create_topic(brokers[0], "t", 2, 2)  # partition p is led by broker p
    index = 1 - follower if follower >= 0 else 0
    leader = brokers[index]
    assert leader.metadata.topic("t").partitions[index].leader == leader.broker_id
    body = call(leader, 1, 12, {
        "replica_id": follower, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": level, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [{"topic": "t", "partitions": [{
            "partition": index, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": 0, "last_fetched_epoch": -1}]}]})
    error = ErrorCode.unknown_server_error if follower < 0 else ErrorCode.none
    assert (body.error_code, body.responses[0].partitions[0].error_code) == (error, error)
