"""Authorized operations as Apache Kafka 4.3.1 answers them without an authorizer
(AuthHelper.authorizedOperations: every operation AclEntry.supportedOperations lists for the
resource). Metadata (KafkaApis.handleTopicMetadataRequest): a client that asks
(include_topic_authorized_operations, v8+) is told every topic operation for each topic it is
answered about, known or not; one that asks for the cluster's (v8-v10; KIP-700 moved it to
DescribeCluster) every cluster operation. DescribeGroups (handleDescribeGroupsRequest): a client
that asks (v3+) every group operation, for each group answered without an error. Otherwise the
schema's default, INT32_MIN.

Found by mutation testing (session 2225a175104f's survivor 00059): the topics' INT32_MIN read
-2**30 passed the core layer, and kafkaref answered INT32_MIN even to a client that asked (and
so did DescribeGroups)."""

import itertools

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers, create_topic

INT32_MIN = -(2**31)
# Kafka's bitfields of every operation (AclOperation codes): READ 3, WRITE 4, CREATE 5,
# DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11 for a topic; CREATE 5,
# ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
# IDEMPOTENT_WRITE 12 for the cluster (AclEntry.supportedOperations)
TOPIC_OPERATIONS = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))
# READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11 for a group (4.3.1's
# AclEntry, read with javap)
GROUP_OPERATIONS = sum(1 << code for code in (3, 6, 8, 10, 11))


@pytest.fixture(scope="module")
def broker():
    (b,) = core_brokers(1, auto_create_topics=False)
    create_topic(b, "t", 2)
    return b


@pytest.mark.parametrize(("version", "ask_topics", "ask_cluster"),
                         list(itertools.product(range(14), (False, True), (False, True))))
def test_authorized_operations_as_kafka_answers_them(broker, version, ask_topics, ask_cluster):
    body = call(broker, 3, version, {
        "topics": [{"name": "t", "topic_id": None}, {"name": "nope", "topic_id": None}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": ask_topics,
        "include_cluster_authorized_operations": ask_cluster})
    answered = {t.name: t for t in body.topics}
    assert answered["t"].error_code == ErrorCode.none
    assert answered["nope"].error_code == ErrorCode.unknown_topic_or_partition
    if version >= 8:
        expected = TOPIC_OPERATIONS if ask_topics else INT32_MIN
        assert [answered[n].topic_authorized_operations for n in ("t", "nope")] == [expected] * 2
    if 8 <= version <= 10:
        expected = CLUSTER_OPERATIONS if ask_cluster else INT32_MIN
        assert body.cluster_authorized_operations == expected


def _coordinating(broker) -> None:
    """Ask for a coordinator until __consumer_offsets exists (one broker leads it all), then
    put one member in group "g" (once: the broker is the module's)."""
    if "g" in broker.groups.groups:
        return
    for _ in range(3):
        if call(broker, 10, 2, {"key": "g", "key_type": 0}).error_code == ErrorCode.none:
            break
    joined = call(broker, 11, 3, {
        "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"x"}]})
    assert joined.error_code == ErrorCode.none


@pytest.mark.parametrize(("version", "ask"), list(itertools.product(range(7), (False, True))))
def test_describe_groups_as_kafka_answers_them(broker, version, ask):
    _coordinating(broker)
    body = call(broker, 15, version, {"groups": ["g", "nope"],
                                      "include_authorized_operations": ask})
    answered = {g.group_id: g for g in body.groups}
    if version < 3:
        return  # no such field
    unknown_found = version < 6  # v6+: GROUP_ID_NOT_FOUND, an error: never told
    expected = GROUP_OPERATIONS if ask else INT32_MIN
    assert answered["g"].authorized_operations == expected
    assert answered["nope"].authorized_operations == (expected if unknown_found else INT32_MIN)


def test_the_bitfields_are_the_ones_describe_answers():
    """DescribeTopicPartitions and DescribeCluster answer the same bitfields (impl/core/describe.py
    states them once)."""
    from kafkaref.impl.core.describe import CLUSTER_OPERATIONS as CLUSTER
    from kafkaref.impl.core.describe import GROUP_OPERATIONS as GROUP
    from kafkaref.impl.core.describe import TOPIC_OPERATIONS as TOPIC
    assert (TOPIC, CLUSTER, GROUP) == (TOPIC_OPERATIONS, CLUSTER_OPERATIONS, GROUP_OPERATIONS)
