"""DescribeTopicPartitions (KIP-966) names a partition's leader only while that broker is
registered: a leader the image no longer lists is answered -1 (Kafka's NO_LEADER_ID), and the
replicas on brokers it does not list are the offline ones.

Found by mutation testing (session 79fa682's survivor 00271: the -1 read as -2 passed the core
layer, whose brokers were always all registered when it asked)."""

import attrs

from kafkaref.properties.wire_calls import call, core_brokers


def described(broker) -> list[tuple[int, int, list[int]]]:
    body = call(broker, 75, 0, {"topics": [{"name": "t"}], "response_partition_limit": 10,
                                "cursor": None})
    return [(p.partition_index, p.leader_id, list(p.offline_replicas))
            for p in body.topics[0].partitions]


def test_a_leader_no_longer_registered_is_no_leader():
    b0, b1 = core_brokers(2)
    assert call(b0, 19, 7, {"topics": [{
        "name": "t", "num_partitions": 2, "replication_factor": 2, "assignments": [],
        "configs": []}], "timeout": 5000, "validate_only": False}).topics[0].error_code == 0
    assert described(b1) == [(0, 0, []), (1, 1, [])]
    image = b1.metadata
    b1.apply_metadata(attrs.evolve(  # broker 0 gone from the image, its leadership not yet moved
        image, brokers=tuple(b for b in image.brokers if b.broker_id != 0), epoch=image.epoch + 1))
    assert described(b1) == [(0, -1, [0]), (1, 1, [0])]
