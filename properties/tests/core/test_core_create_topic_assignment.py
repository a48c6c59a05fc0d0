"""CreateTopics with an explicit replica assignment names each partition 0..n-1 exactly once:
Kafka's ReplicationControlManager.createTopic refuses a partition named twice ("Found multiple
manual partition assignments for partition N") and indexes that are not a consecutive 0-based
sequence, both INVALID_REPLICA_ASSIGNMENT, with or without validate_only; anything else (each
partition on the one broker here) is created with the partitions named.

Found by mutation testing (session 9df4313ef37b's survivor 00200: the consecutive-indexes check
with `or` read `and` passed the core layer, whose tests named partitions 0..n-1 in order); the
property found with it that kafkaref let a later entry for a partition overwrite an earlier one
and created the topic."""

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers


@given(indexes=st.lists(st.integers(0, 4), min_size=1, max_size=5),
       validate_only=st.booleans())
def test_an_assignment_names_each_partition_once_from_zero(indexes, validate_only):
    (b,) = core_brokers(1)
    body = call(b, 19, 7, {"topics": [{
        "name": "t", "num_partitions": -1, "replication_factor": -1, "configs": [],
        "assignments": [{"partition_index": i, "broker_ids": [0]} for i in indexes]}],
        "timeout": 5000, "validate_only": validate_only})
    whole = sorted(indexes) == list(range(len(indexes)))
    assert body.topics[0].error_code == (
        ErrorCode.none if whole else ErrorCode.invalid_replica_assignment), indexes
    topic = b.metadata.topic("t")
    assert (topic is not None) == (whole and not validate_only)
    if topic is not None:
        assert len(topic.partitions) == len(indexes)
