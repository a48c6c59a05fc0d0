"""Real admin clients against a 3-broker kafkaref cluster (separate processes): a topic deleted
is gone from every broker (partitions stopped, log directories removed) and comes back empty when
recreated; partitions added are replicated and take writes; min.insync.replicas altered through
the controller reaches the leader, which then refuses acks=all with NOT_ENOUGH_REPLICAS once a
follower is gone."""

import os

import confluent_kafka as ck
import kafka
import kafka.errors
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kafka.admin import ConfigResource as KafkaConfigResource
from kafka.admin import NewPartitions as KafkaNewPartitions

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.properties.admin_futures import future_results
from kafkaref.properties.consumer_groups import read_partition
from kafkaref.properties.waiting import wait_until

TIMEOUT_S = 30


def live(cluster) -> list[int]:
    return [b for b, p in cluster.processes.items() if p.poll() is None]


def bootstrap(cluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.ports[b]}" for b in live(cluster))


def topic_seen_by(cluster, broker_id, topic):
    """The topic's Metadata entry as broker_id answers it (error code, partitions)."""
    with KafkaConnection("127.0.0.1", cluster.ports[broker_id], timeout_s=5) as connection:
        answer = connection.send(3, 8, {"topics": [{"name": topic}],
                                        "allow_auto_topic_creation": False})
    return answer.topics[0]


def brokers_seen_by(cluster, broker_id) -> set[int]:
    with KafkaConnection("127.0.0.1", cluster.ports[broker_id], timeout_s=5) as connection:
        answer = connection.send(3, 8, {"topics": [], "allow_auto_topic_creation": False})
    return {b.node_id for b in answer.brokers}


def every_broker_seen(cluster) -> None:
    """Wait until every live broker's image lists every live broker (a restarted broker is
    registered with the controller before the others' images show it)."""
    wait_until(lambda: all(set(live(cluster)) <= brokers_seen_by(cluster, b)
                           for b in live(cluster)), what="every broker in every image")


def min_insync_seen_by(cluster, broker_id, topic) -> str:
    """min.insync.replicas as broker_id describes it (from its own metadata image)."""
    with KafkaConnection("127.0.0.1", cluster.ports[broker_id], timeout_s=5) as connection:
        answer = connection.send(32, 1, {"resources": [{
            "resource_type": 2, "resource_name": topic,
            "configuration_keys": ["min.insync.replicas"]}], "include_synonyms": False})
    return answer.results[0].configs[0].value


def on_every_broker(cluster, topic, check) -> bool:
    return all(check(topic_seen_by(cluster, b, topic)) for b in live(cluster))


def full_isr(cluster, topic, partitions):
    wait_until(lambda: on_every_broker(cluster, topic, lambda t: t.error_code == 0 and len(
        t.partitions) == partitions and all(len(p.isr_nodes) == 3 for p in t.partitions)),
        what=f"{topic}: {partitions} partitions with a full ISR on every broker")


def dirs(cluster, topic) -> list[str]:
    found = []
    for broker_id in cluster.processes:
        directory = os.path.join(cluster.directory, f"broker-{broker_id}")
        if os.path.isdir(directory):
            found += [n for n in os.listdir(directory) if n.startswith(f"{topic}-")]
    return found


def produce(cluster, topic, values, partition=0, **config):
    producer = ck.Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all",
                            "log_level": 3, **config})
    reports = []
    for value in values:
        producer.produce(topic, value, partition=partition,
                         on_delivery=lambda err, msg: reports.append(err))
    producer.flush(TIMEOUT_S)
    return reports


def test_delete_then_recreate_starts_empty_on_every_broker(cluster):
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster), "log_level": 3})
    assert future_results(admin.create_topics([NewTopic("gone", 2, 3)])) == {"gone": None}
    full_isr(cluster, "gone", 2)
    assert produce(cluster, "gone", [b"old-%d" % i for i in range(20)]) == [None] * 20
    assert len(dirs(cluster, "gone")) == 6
    assert future_results(admin.delete_topics(["gone"])) == {"gone": None}
    # answered only once every live broker applied the deletion (as creations are): a client
    # recreating the topic at once never meets a broker that still hosts the old one (0107)
    assert on_every_broker(cluster, "gone", lambda t: t.error_code == 3)
    wait_until(lambda: dirs(cluster, "gone") == [], what="every log directory removed")
    assert future_results(admin.create_topics([NewTopic("gone", 2, 3)])) == {"gone": None}
    full_isr(cluster, "gone", 2)
    assert produce(cluster, "gone", [b"new"]) == [None]
    assert read_partition(bootstrap(cluster), "gone") == [b"new"]


def test_grow_partitions_then_produce_to_the_new_one(cluster):
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    try:
        admin.create_topics([kafka.admin.NewTopic("grown", 1, 3)])
        full_isr(cluster, "grown", 1)
        admin.create_partitions({"grown": KafkaNewPartitions(3)})
    finally:
        admin.close()
    full_isr(cluster, "grown", 3)
    assert produce(cluster, "grown", [b"a", b"b"], partition=2) == [None, None]
    assert read_partition(bootstrap(cluster), "grown", partition=2) == [b"a", b"b"]
    confluent = AdminClient({"bootstrap.servers": bootstrap(cluster), "log_level": 3})
    assert future_results(confluent.create_partitions([NewPartitions("grown", 2)])) == {
        "grown": ck.KafkaError.INVALID_PARTITIONS}


def test_altered_min_insync_replicas_refuses_acks_all_below_it(cluster):
    confluent = AdminClient({"bootstrap.servers": bootstrap(cluster), "log_level": 3})
    future_results(confluent.create_topics([NewTopic("guarded", 1, 3)]))
    full_isr(cluster, "guarded", 1)
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    try:
        assert admin.alter_configs([KafkaConfigResource(
            "TOPIC", "guarded", {"min.insync.replicas": "3"})]) == {"topic": {"guarded": "OK"}}
        described = admin.describe_configs([KafkaConfigResource("TOPIC", "guarded")])
        assert described["topic"]["guarded"]["min.insync.replicas"]["value"] == "3"
    finally:
        admin.close()
    wait_until(lambda: all(min_insync_seen_by(cluster, b, "guarded") == "3"
                           for b in live(cluster)), what="every broker has min.insync.replicas 3")
    leader = topic_seen_by(cluster, live(cluster)[0], "guarded").partitions[0].leader_id
    follower = next(b for b in live(cluster) if b != leader)
    cluster.kill(follower)
    try:
        wait_until(lambda: on_every_broker(cluster, "guarded", lambda t: len(
            t.partitions[0].isr_nodes) == 2), what="the killed follower out of the ISR")
        refused = produce(cluster, "guarded", [b"x"], retries=0, **{"message.timeout.ms": 10000})
        assert [e.code() for e in refused] == [ck.KafkaError.NOT_ENOUGH_REPLICAS]
        back = ConfigResource("topic", "guarded", incremental_configs=[ConfigEntry(
            "min.insync.replicas", None, incremental_operation=AlterConfigOpType.DELETE)])
        # a new client: the old one may still wait for the killed broker, if it was the
        # controller its metadata named (librdkafka sends config changes to the controller)
        confluent = AdminClient({"bootstrap.servers": bootstrap(cluster), "log_level": 3})
        assert list(future_results(confluent.incremental_alter_configs([back])).values()) == [None]
        wait_until(lambda: all(min_insync_seen_by(cluster, b, "guarded") == "1"
                               for b in live(cluster)),
                   what="every broker back to the default min.insync.replicas")
        assert produce(cluster, "guarded", [b"y"], retries=0) == [None]
    finally:
        cluster.start_broker(follower)
        cluster.wait_registered({follower}, 30)
        every_broker_seen(cluster)


def test_a_broker_down_during_the_deletion_drops_its_stray_log(cluster):
    """Broker 2 is down while "stray" is deleted; its directory stays behind. When the topic is
    created again with broker 2 as leader, broker 2 sees that the directory records the old
    topic id and deletes it: the new topic serves only its own record, not the old five."""
    every_broker_seen(cluster)  # the assignment names every broker
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster), "log_level": 3})
    first = NewTopic("stray", num_partitions=1, replica_assignment=[[0, 1, 2]])
    assert future_results(admin.create_topics([first])) == {"stray": None}
    full_isr(cluster, "stray", 1)
    assert produce(cluster, "stray", [b"old-%d" % i for i in range(5)]) == [None] * 5
    cluster.kill(2)
    try:
        wait_until(lambda: 2 not in {b.broker_id for b in cluster.controller.metadata().brokers},
                   what="broker 2 fenced")  # else its old registration counts as alive
        admin = AdminClient({"bootstrap.servers": bootstrap(cluster), "log_level": 3})
        assert future_results(admin.delete_topics(["stray"])) == {"stray": None}
        wait_until(lambda: on_every_broker(cluster, "stray", lambda t: t.error_code == 3),
                   what="the live brokers no longer list the topic")
    finally:
        cluster.start_broker(2)
        cluster.wait_registered({2}, 30)
    every_broker_seen(cluster)  # broker 2 is in the assignment
    assert dirs(cluster, "stray") == ["stray-0"]  # broker 2's, left while it was down
    again = NewTopic("stray", num_partitions=1, replica_assignment=[[2, 0, 1]])
    assert future_results(admin.create_topics([again])) == {"stray": None}
    full_isr(cluster, "stray", 1)
    assert topic_seen_by(cluster, 2, "stray").partitions[0].leader_id == 2
    assert produce(cluster, "stray", [b"new"]) == [None]
    assert read_partition(bootstrap(cluster), "stray") == [b"new"]
