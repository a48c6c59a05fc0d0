"""A topic's segment.bytes through a real admin client (confluent-kafka) against a 3-broker
kafkaref cluster (separate processes): every replica's log rolls at it, a value below the 1 MiB
minimum is INVALID_CONFIG, and IncrementalAlterConfigs DELETE goes back to the brokers'
log.segment.bytes (1 GiB) for the following rolls."""

import os

import confluent_kafka as ck
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.properties.admin_futures import future_results
from kafkaref.properties.waiting import wait_until

MIB = 1024 * 1024
VALUE = b"s" * 50_000


def segment_files(cluster, broker_id, topic) -> list[str]:
    directory = os.path.join(cluster.directory, f"broker-{broker_id}", f"{topic}-0")
    return sorted(n for n in os.listdir(directory) if n.endswith(".log"))


def produce(cluster, topic, count):
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                            "linger.ms": 0, "log_level": 3})
    failed = []
    for _ in range(count):
        producer.produce(topic, VALUE, on_delivery=lambda e, m: e and failed.append(e))
        producer.poll(0)
    assert producer.flush(60) == 0 and not failed, failed


def test_segment_bytes_rolls_every_replica_and_delete_restores_the_brokers(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
    small = NewTopic("too-small", 1, 3, config={"segment.bytes": "16384"})
    assert list(future_results(admin.create_topics([small])).values()) == [
        ck.KafkaError.INVALID_CONFIG]
    topic = NewTopic("rolled", 1, 3, config={"segment.bytes": str(MIB)})
    assert list(future_results(admin.create_topics([topic])).values()) == [None]
    produce(cluster, "rolled", 70)  # ~3.4 MiB of ~50 KB batches: four segments
    wait_until(lambda: all(len(segment_files(cluster, b, "rolled")) == 4 for b in range(3)),
               what="four segments on every replica")
    back = ConfigResource("topic", "rolled", incremental_configs=[ConfigEntry(
        "segment.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    assert list(future_results(admin.incremental_alter_configs([back])).values()) == [None]
    described = future_results(admin.describe_configs([ConfigResource("topic", "rolled")]))
    (entries,) = described.values()
    assert entries["segment.bytes"].value == "1073741824"
    # the brokers apply the change at their next heartbeat; then 1 GiB decides the rolls
    wait_until(lambda: _describes_default(cluster), what="every broker back to 1 GiB")
    produce(cluster, "rolled", 70)
    files = {b: segment_files(cluster, b, "rolled") for b in range(3)}
    assert all(len(names) == 4 for names in files.values()), files


def _describes_default(cluster) -> bool:
    """Every broker's own image (what DescribeConfigs answers from, and what its partitions
    took) has no segment.bytes override for the topic any more."""
    for port in cluster.ports.values():
        with KafkaConnection("127.0.0.1", port, timeout_s=5) as connection:
            answer = connection.send(32, 3, {"resources": [{
                "resource_type": 2, "resource_name": "rolled",
                "configuration_keys": ["segment.bytes"]}], "include_synonyms": False,
                "include_documentation": False})
        if answer.results[0].configs[0].value != "1073741824":
            return False
    return True
