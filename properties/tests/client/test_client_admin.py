"""Real admin clients against one kafkaref broker on disk: confluent_kafka's AdminClient
(librdkafka) and kafka-python's KafkaAdminClient delete, recreate and grow topics and describe
and alter their configs, with Kafka's error codes for what is refused."""

import os
import time

import confluent_kafka as ck
import kafka
import kafka.errors
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from kafka.admin import ConfigResource as KafkaConfigResource
from kafka.admin import NewPartitions as KafkaNewPartitions
from kafka.admin import NewTopic as KafkaNewTopic

from kafkaref.properties.admin_futures import future_results
from kafkaref.properties.consumer_groups import read_partition
from kafkaref.properties.servers import BrokerSetup

pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk")])
TIMEOUT_S = 30


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.address, "log_level": 3})


def topic_dirs(tmp_path, topic):
    return sorted(n for n in os.listdir(tmp_path) if n.startswith(f"{topic}-"))


def produce_one(address, topic, value, partition=0):
    producer = ck.Producer({"bootstrap.servers": address, "acks": "all", "log_level": 3})
    reports = []
    producer.produce(topic, value, partition=partition,
                     on_delivery=lambda err, msg: reports.append((err, msg)))
    producer.flush(TIMEOUT_S)
    assert len(reports) == 1 and reports[0][0] is None, reports
    return reports[0][1].offset()


def test_confluent_admin_delete_recreate_grow(broker, tmp_path):
    a = admin(broker)
    assert future_results(a.create_topics([NewTopic("t", 1, 1)])) == {"t": None}
    produce_one(broker.address, "t", b"old")
    assert topic_dirs(tmp_path, "t") == ["t-0"]
    assert future_results(a.delete_topics(["t"])) == {"t": None}
    assert topic_dirs(tmp_path, "t") == []
    assert future_results(a.delete_topics(["t"])) == {"t": ck.KafkaError.UNKNOWN_TOPIC_OR_PART}
    assert future_results(a.create_topics([NewTopic("t", 1, 1)])) == {"t": None}
    assert produce_one(broker.address, "t", b"new") == 0
    assert read_partition(broker.address, "t") == [b"new"]

    assert future_results(a.create_partitions([NewPartitions("t", 3)])) == {"t": None}
    assert produce_one(broker.address, "t", b"p2", partition=2) == 0
    assert read_partition(broker.address, "t", partition=2) == [b"p2"]
    assert future_results(a.create_partitions([NewPartitions("t", 2)])) == {
        "t": ck.KafkaError.INVALID_PARTITIONS}
    assert future_results(a.create_partitions([NewPartitions("t", 5)], validate_only=True)) == {
        "t": None}
    assert len(a.list_topics(timeout=TIMEOUT_S).topics["t"].partitions) == 3
    # an explicit assignment on a broker on disk (its config-saving wrapper passes it on)
    assigned = NewTopic("assigned", num_partitions=1, replica_assignment=[[0]],
                        config={"retention.ms": "1000"})
    assert future_results(a.create_topics([assigned])) == {"assigned": None}


def test_a_producer_follows_a_topic_deleted_and_created_again_with_fewer_partitions(broker):
    """librdkafka's 0107: a producer keeps producing while its topic (4 partitions) is deleted
    and created again with 1. It learns of the new topic only from its new topic id in
    Metadata (v10+); with none it kept 4 partitions, and its batches for partitions 1-3 were
    refused until they timed out: flush() left them behind."""
    a = admin(broker)
    assert future_results(a.create_topics([NewTopic("re", 4, 1)])) == {"re": None}
    producer = ck.Producer({"bootstrap.servers": broker.address, "log_level": 0,
                            "topic.metadata.refresh.interval.ms": 500,
                            "message.timeout.ms": 60_000,
                            "allow.auto.create.topics": False})  # as 0107 runs: noautocreate

    def produce_for(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            producer.produce("re", b"v")
            producer.poll(0.05)

    produce_for(1)
    assert future_results(a.delete_topics(["re"])) == {"re": None}
    produce_for(1)
    assert future_results(a.create_topics([NewTopic("re", 1, 1)])) == {"re": None}
    produce_for(3)
    assert producer.flush(TIMEOUT_S) == 0


def test_confluent_admin_configs(broker):
    a = admin(broker)
    future_results(a.create_topics([NewTopic("c", 1, 1, config={"retention.ms": "1000"})]))
    resource = ConfigResource("topic", "c")
    (described,) = future_results(a.describe_configs([resource])).values()
    assert described["retention.ms"].value == "1000"
    assert described["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert described["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    change = ConfigResource("topic", "c", incremental_configs=[
        ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    assert list(future_results(a.incremental_alter_configs([change])).values()) == [None]
    (described,) = future_results(a.describe_configs([resource])).values()
    assert described["min.insync.replicas"].value == "2"
    assert described["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert broker.broker.replica_manager.partition(("c", 0)).config.min_insync_replicas == 2

    bad = ConfigResource("topic", "c", incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    assert list(future_results(a.incremental_alter_configs([bad])).values()) == [
        ck.KafkaError.INVALID_CONFIG]
    missing = ConfigResource("topic", "gone")
    assert list(future_results(a.describe_configs([missing])).values()) == [
        ck.KafkaError.UNKNOWN_TOPIC_OR_PART]

    (broker_configs,) = future_results(a.describe_configs([ConfigResource("broker", "0")])).values()
    assert broker_configs["broker.id"].value == "0" and broker_configs["broker.id"].is_read_only
    refused = ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("num.partitions", "4", incremental_operation=AlterConfigOpType.SET)])
    assert list(future_results(a.incremental_alter_configs([refused])).values()) == [
        ck.KafkaError.INVALID_REQUEST]


def test_kafka_python_admin(broker, tmp_path):
    a = kafka.KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        a.create_topics([KafkaNewTopic("k", 1, 1)])
        produce_one(broker.address, "k", b"old")
        a.create_partitions({"k": KafkaNewPartitions(2)})
        assert topic_dirs(tmp_path, "k") == ["k-0", "k-1"]
        with pytest.raises(kafka.errors.InvalidPartitionsError):
            a.create_partitions({"k": KafkaNewPartitions(1)})

        assert a.alter_configs([KafkaConfigResource("TOPIC", "k", {"retention.ms": "2000"})]) == {
            "topic": {"k": "OK"}}
        described = a.describe_configs([KafkaConfigResource("TOPIC", "k")])["topic"]["k"]
        assert described["retention.ms"]["value"] == "2000"
        assert described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        everything = a.describe_configs([KafkaConfigResource("TOPIC", "k")], config_filter="all")
        assert everything["topic"]["k"]["max.message.bytes"]["value"] == "1048588"
        with pytest.raises(ValueError):  # kafka-python checks names against DescribeConfigs
            a.alter_configs([KafkaConfigResource("TOPIC", "k", {"bogus": "1"})])

        a.delete_topics(["k"])
        assert topic_dirs(tmp_path, "k") == []
        with pytest.raises(kafka.errors.UnknownTopicOrPartitionError):
            a.delete_topics(["k"])
        a.create_topics([KafkaNewTopic("k", 1, 1)])
        produce_one(broker.address, "k", b"new")
        assert read_partition(broker.address, "k") == [b"new"]
    finally:
        a.close()
