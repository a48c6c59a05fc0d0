"""Committed group offsets survive their coordinator's SIGKILL: real clients (confluent-kafka,
kafka-python) commit through a 3-broker cluster of separate processes, the coordinator (the
leader of the group's __consumer_offsets partition) is SIGKILLed, and a fresh consumer reads the
commits back through the new coordinator. Also ListGroups / DescribeGroups via the admin
clients."""

import time

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin
import kafka
import pytest

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.core import offsets_topic
from kafkaref.properties.servers import ClusterSetup
from kafkaref.properties.waiting import wait_until

SETUP = ClusterSetup(brokers=3, offsets_topic_partitions=5)
pytestmark = pytest.mark.parametrize("cluster_setup", [SETUP], scope="module")
TOPIC = "committed"


def live_bootstrap(cluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.ports[b]}" for b, p in cluster.processes.items()
                    if p.poll() is None)


def create_topic(cluster):
    with KafkaConnection.to(live_bootstrap(cluster).split(",")[0]) as connection:
        answer = connection.send(19, 4, {"topics": [{
            "name": TOPIC, "num_partitions": 3, "replication_factor": 3, "assignments": [],
            "configs": []}], "timeout": 10_000, "validate_only": False})
    assert answer.topics[0].error_code in (0, 36), answer  # 36: made by an earlier test


def offsets_partition(cluster, group):
    """The group's __consumer_offsets partition as the controller sees it (None: not yet)."""
    topic = cluster.controller.metadata().topic(offsets_topic.NAME)
    if topic is None:
        return None
    return topic.partitions[offsets_topic.partition_for(group, len(topic.partitions))]


def fully_replicated(cluster, group) -> bool:
    p = offsets_partition(cluster, group)
    return p is not None and p.leader >= 0 and len(p.isr) == 3


def every_live_broker_forgot(cluster, gone: int) -> bool:
    """No live broker's Metadata lists `gone` any more. The controller fences first; brokers
    learn it at their next heartbeat, and a client that bootstraps meanwhile may pick the dead
    broker for FindCoordinator (kafka-python's committed() raises on that refused connection)."""
    for address in live_bootstrap(cluster).split(","):
        with KafkaConnection.to(address) as connection:
            answer = connection.send(3, 1, {"topics": []})
        if gone in {b.node_id for b in answer.brokers}:
            return False
    return True


def restart(cluster, broker_id):
    cluster.start_broker(broker_id)
    cluster.wait_registered({broker_id}, 60)


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_commits_survive_the_coordinators_sigkill(cluster, client):
    create_topic(cluster)
    group = f"survivor-{client}"
    wanted = {0: 11, 1: 22, 2: 33}
    if client == "confluent":
        consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[ck.TopicPartition(TOPIC, p, o) for p, o in wanted.items()],
                            asynchronous=False)
        finally:
            consumer.close()
    else:
        consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group,
                                       enable_auto_commit=False)
        try:
            consumer.commit({kafka.TopicPartition(TOPIC, p): kafka.structs.OffsetAndMetadata(
                o, "", -1) for p, o in wanted.items()})
        finally:
            consumer.close()
    wait_until(lambda: fully_replicated(cluster, group), what="the offsets partition's full ISR")
    coordinator = offsets_partition(cluster, group).leader
    killed_at = time.monotonic()
    cluster.kill(coordinator)  # SIGKILL
    wait_until(lambda: offsets_partition(cluster, group).leader not in (-1, coordinator),
               timeout_s=60, what="a new coordinator elected")
    wait_until(lambda: every_live_broker_forgot(cluster, coordinator), timeout_s=60,
               what="the live brokers' metadata without the killed coordinator")
    try:
        assert read_back(live_bootstrap(cluster), group, client) == wanted
        print(f"{client}: commits read back {time.monotonic() - killed_at:.1f} s after the "
              f"coordinator's SIGKILL (controller session timeout "
              f"{SETUP.session_timeout_ms} ms)")
    finally:
        restart(cluster, coordinator)


def read_back(bootstrap, group, client) -> dict[int, int]:
    if client == "confluent":
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            found = consumer.committed([ck.TopicPartition(TOPIC, p) for p in range(3)],
                                       timeout=60)
        finally:
            consumer.close()
        return {tp.partition: tp.offset for tp in found}
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                   enable_auto_commit=False, request_timeout_ms=60_000)
    try:
        return {p: consumer.committed(kafka.TopicPartition(TOPIC, p)) for p in range(3)}
    finally:
        consumer.close()


def test_admin_lists_and_describes_groups(cluster):
    create_topic(cluster)
    group = "described"
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                            "session.timeout.ms": 6000, "auto.offset.reset": "earliest"})
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        consumer.subscribe([TOPIC])
        wait_until(lambda: consumer.assignment(), step=lambda: consumer.poll(0.1),
                   timeout_s=60, what="an assignment")
        listed = admin.list_consumer_groups(request_timeout=30).result()
        assert group in {g.group_id for g in listed.valid}
        described = admin.describe_consumer_groups([group], request_timeout=30)[group].result()
        assert str(described.state).endswith("STABLE") and len(described.members) == 1
        [member] = described.members
        assert {tp.partition for tp in member.assignment.topic_partitions} == {0, 1, 2}
    finally:
        consumer.close()
