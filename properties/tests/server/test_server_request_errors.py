"""Regressions for broker answers that peer test suites (librdkafka's, the conformance suite)
showed wrong: ListOffsets by timestamp, OffsetCommit for an unknown topic, Metadata for an
illegal name, CreateTopics configs and replica assignments, MESSAGE_TOO_LARGE."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.core.topic_rules import check_assignment, legal_topic_name
from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.waiting import wait_until


@pytest.fixture
def connection(broker):
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        yield conn


def create(connection, name, configs=(), assignments=(), partitions=1, rf=1,
           validate_only=False):
    return connection.send(19, 4, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": rf,
        "assignments": list(assignments),
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": 5000, "validate_only": validate_only}).topics[0]


def produce(connection, topic, batch):
    return connection.send(0, 8, {"transactional_id": None, "acks": 1, "timeout": 5000,
                                  "topic_data": [{"name": topic, "partition_data": [
                                      {"index": 0, "records": batch}]}]}
                           ).responses[0].partition_responses[0]


def list_offset(connection, topic, timestamp):
    answer = connection.send(2, 5, {"replica_id": -1, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "timestamp": timestamp}]}]}).topics[0].partitions[0]
    return answer.error_code, answer.offset, answer.timestamp


def test_list_offsets_by_time_finds_the_record_inside_a_batch(connection):
    assert create(connection, "by-time").error_code == ErrorCode.none
    produce(connection, "by-time", build_batch(
        [(None, b"a", (), 1000), (None, b"b", (), 1100), (None, b"c", (), 1200)],
        base_timestamp=1000))
    produce(connection, "by-time", build_batch([(None, b"d", (), 2000)], base_timestamp=2000))
    none = ErrorCode.none
    assert list_offset(connection, "by-time", 900) == (none, 0, 1000)
    assert list_offset(connection, "by-time", 1100) == (none, 1, 1100)  # was 0: the batch's base
    assert list_offset(connection, "by-time", 1150) == (none, 2, 1200)
    assert list_offset(connection, "by-time", 1500) == (none, 3, 2000)
    assert list_offset(connection, "by-time", 2001) == (none, -1, -1)  # was the hw


def test_offset_commit_for_an_unknown_topic_is_refused(connection):
    assert create(connection, "committed").error_code == ErrorCode.none
    # COORDINATOR_NOT_AVAILABLE (retriable) until __consumer_offsets exists, as on Kafka
    wait_until(lambda: connection.send(10, 2, {"key": "g1", "key_type": 0}).error_code == (
        ErrorCode.none), what="a coordinator")

    def commit(topic, partition):
        return connection.send(8, 7, {"group_id": "g1", "generation_id_or_member_epoch": -1,
                                      "member_id": "", "topics": [{"name": topic, "partitions": [
                                          {"partition_index": partition, "committed_offset": 5,
                                           "committed_metadata": ""}]}]}
                               ).topics[0].partitions[0].error_code

    assert commit("committed", 0) == ErrorCode.none
    assert commit("no-such-topic", 0) == ErrorCode.unknown_topic_or_partition
    assert commit("committed", 3) == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("name", ["with space", "a/b", "x" * 250, ".", "..", ""])
def test_metadata_for_an_illegal_name_is_invalid_topic(connection, name):
    answer = connection.send(3, 8, {"topics": [{"name": name}],
                                    "allow_auto_topic_creation": True})
    assert answer.topics[0].error_code == ErrorCode.invalid_topic_exception
    assert not legal_topic_name(name)


def test_metadata_for_a_legal_unknown_name_is_unknown_topic(connection):
    answer = connection.send(3, 8, {"topics": [{"name": "legal.but_absent-1"}],
                                    "allow_auto_topic_creation": False})
    assert answer.topics[0].error_code == ErrorCode.unknown_topic_or_partition


def test_create_topics_refuses_unknown_and_bad_configs(connection):
    assert create(connection, "cfg1", [("no.such.config", "1")]).error_code == (
        ErrorCode.invalid_config)
    assert create(connection, "cfg2", [("min.insync.replicas", "two")]).error_code == (
        ErrorCode.invalid_config)
    assert create(connection, "cfg3", [("retention.ms", "1000")]).error_code == ErrorCode.none


def test_create_topics_honours_an_explicit_assignment(connection, broker):
    me = broker.broker.broker_id
    answer = create(connection, "assigned", partitions=-1, rf=-1, assignments=[
        {"partition_index": 0, "broker_ids": [me]}, {"partition_index": 1, "broker_ids": [me]}])
    assert answer.error_code == ErrorCode.none
    meta = connection.send(3, 8, {"topics": [{"name": "assigned"}]}).topics[0]
    assert [list(p.replica_nodes) for p in meta.partitions] == [[me], [me]]
    refused = create(connection, "assigned-bad", partitions=-1, rf=-1, assignments=[
        {"partition_index": 0, "broker_ids": [me + 7]}])
    assert refused.error_code == ErrorCode.invalid_replica_assignment
    both = create(connection, "assigned-both", partitions=1, rf=1, assignments=[
        {"partition_index": 0, "broker_ids": [me]}])
    assert both.error_code == ErrorCode.invalid_request


def test_create_topics_validate_only_answers_every_topic_and_creates_none(connection):
    """librdkafka's 0081_admin: valid topics got no entry at all, and the client crashed."""
    answer = create(connection, "validated", partitions=3, validate_only=True)
    assert (answer.name, answer.error_code) == ("validated", ErrorCode.none)
    too_many = create(connection, "validated-rf", rf=5, validate_only=True)
    assert too_many.error_code == ErrorCode.invalid_replication_factor
    bad = create(connection, "validated-cfg", [("no.such.config", "1")], validate_only=True)
    assert bad.error_code == ErrorCode.invalid_config
    meta = connection.send(3, 8, {"topics": [{"name": "validated"}],
                                  "allow_auto_topic_creation": False}).topics[0]
    assert meta.error_code == ErrorCode.unknown_topic_or_partition


def test_check_assignment_rules():
    ok = ErrorCode.none
    assert check_assignment({0: [1, 2], 1: [2, 1]}, {1, 2}, -1, -1)[0] == ok
    assert check_assignment({0: [1, 1]}, {1}, -1, -1)[0] == ErrorCode.invalid_replica_assignment
    assert check_assignment({1: [1]}, {1}, -1, -1)[0] == ErrorCode.invalid_replica_assignment
    assert check_assignment({0: [1], 1: [1, 2]}, {1, 2}, -1, -1)[0] == (
        ErrorCode.invalid_replica_assignment)


def test_a_batch_over_max_message_bytes_is_message_too_large(connection):
    assert create(connection, "small", [("max.message.bytes", "2000")]).error_code == (
        ErrorCode.none)
    assert produce(connection, "small", build_batch([(None, bytes(100), (), None)])
                   ).error_code == ErrorCode.none
    answer = produce(connection, "small", build_batch([(None, bytes(3000), (), None)]))
    assert answer.error_code == ErrorCode.message_too_large
    assert list_offset(connection, "small", -1)[1] == 1  # nothing of it written


def test_a_failed_acks0_produce_closes_the_connection_as_kafka_does(connection):
    """Found by the differential walk: Apache Kafka closes the connection of an acks=0 produce
    that failed anywhere (the producer, waiting for no answer, notices); kafkaref kept it."""
    assert create(connection, "acks0").error_code == ErrorCode.none

    def produce_acks0(topic):
        connection.send(0, 8, {"transactional_id": None, "acks": 0, "timeout": 5000,
                               "topic_data": [{"name": topic, "partition_data": [
                                   {"index": 0, "records": build_batch([(None, b"a", (), 1)])}]}]},
                        expect_response=False)

    produce_acks0("acks0")
    assert connection.send(18, 0, {}).error_code == ErrorCode.none  # still open
    produce_acks0("no-such-topic")
    with pytest.raises(ConnectionError):
        connection.send(18, 0, {})
