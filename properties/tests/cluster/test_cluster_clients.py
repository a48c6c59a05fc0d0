"""Real clients against a 3-broker kafkaref cluster (separate OS processes), RF 3, min ISR 2:
acks=all with keys, headers and every compression type; the partition leader is SIGKILLed
mid-stream; no acknowledged record may be lost or reordered, and with idempotence there are no
duplicates (without it, duplicates from retries are counted and reported)."""

import time

import confluent_kafka as ck
import kafka
import pytest

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.properties.consumer_groups import consume_in_group
from kafkaref.properties.waiting import wait_until

N, KILL_AT = 400, 150
COMPRESSIONS = ["none", "gzip", "snappy", "lz4", "zstd"]


def live_addresses(cluster):
    return [f"127.0.0.1:{cluster.ports[b]}" for b, p in cluster.processes.items()
            if p.poll() is None]


def metadata(cluster, topic):
    for address in live_addresses(cluster):
        try:
            with KafkaConnection.to(address, timeout_s=5) as connection:
                return connection.send(3, 8, {"topics": [{"name": topic}],
                                              "allow_auto_topic_creation": False})
        except OSError:
            continue
    raise AssertionError("no live broker answered")


def create_topic(cluster, topic):
    with KafkaConnection.to(live_addresses(cluster)[0]) as connection:
        answer = connection.send(19, 4, {"topics": [{
            "name": topic, "num_partitions": 1, "replication_factor": 3, "assignments": [],
            "configs": [{"name": "min.insync.replicas", "value": "2"}]}],
            "timeout": 10_000, "validate_only": False})
    assert answer.topics[0].error_code == 0, answer
    wait_until(lambda: all(len(metadata(cluster, topic).topics[0].partitions[0].isr_nodes) == 3
                         for _ in range(1)), what="full ISR")


def leader_of(cluster, topic):
    return metadata(cluster, topic).topics[0].partitions[0].leader_id


def heal(cluster, broker_id, topic):
    cluster.start_broker(broker_id)
    cluster.wait_registered({broker_id}, 30)
    wait_until(lambda: len(metadata(cluster, topic).topics[0].partitions[0].isr_nodes) == 3,
             what="the restarted broker back in the ISR")


def end_offset(cluster, topic) -> int:
    """The partition's hw as its leader reports it (ListOffsets latest)."""
    leader = leader_of(cluster, topic)
    with KafkaConnection("127.0.0.1", cluster.ports[leader], timeout_s=5) as connection:
        answer = connection.send(2, 5, {"replica_id": -1, "topics": [{
            "name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    return answer.topics[0].partitions[0].offset


def consume_all(cluster, topic, expected_count):
    """Everything up to the hw (duplicates make the log longer than what was acknowledged)."""
    wait_until(lambda: end_offset(cluster, topic) >= expected_count, what="hw past the acks")
    end = end_offset(cluster, topic)
    consumer = ck.Consumer({"bootstrap.servers": ",".join(live_addresses(cluster)),
                            "group.id": "checker", "enable.auto.commit": False})
    got = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while (not got or got[-1][0] < end - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append((message.offset(), message.key(), message.value(),
                            tuple(message.headers() or ())))
    finally:
        consumer.close()
    return got


def check(acked, got, idempotent, cluster=None, topic=None):
    values = [g[2] for g in got]
    assert len({g[0] for g in got}) == len(got), "an offset was delivered twice"
    lost = {a for a in acked} - set(values)
    assert not lost, f"{len(lost)} acknowledged records lost; read {len(got)}, " + (
        diagnose(cluster, topic) if cluster is not None else "")
    first_offset = {}
    for offset, _, value, _ in got:
        first_offset.setdefault(value, offset)
    order = [first_offset[v] for v in acked]
    assert order == sorted(order), "acknowledged records reordered"
    duplicates = len(values) - len(set(values))
    if idempotent:
        assert duplicates == 0
    return duplicates


def diagnose(cluster, topic) -> str:
    """Each live broker's view of the partition (leader, epoch, ISR, hw) for a failure message."""
    out = [repr(metadata(cluster, topic).topics[0].partitions[0])]
    for address in live_addresses(cluster):
        try:
            with KafkaConnection.to(address, timeout_s=5) as connection:
                answer = connection.send(2, 5, {"replica_id": -1, "topics": [{
                    "name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
            out.append(f"{address}: {answer.topics[0].partitions[0]!r}")
        except OSError as exc:
            out.append(f"{address}: {exc}")
    return "; ".join(out)


def payload(i):
    return f"k{i % 13}".encode(), f"value-{i}".encode() * 3, [("i", str(i).encode())]


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("idempotent", [True, False])
def test_confluent_kafka_survives_leader_sigkill(cluster, compression, idempotent):
    topic = f"ck-{compression}-{int(idempotent)}"
    create_topic(cluster, topic)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                            "compression.type": compression, "linger.ms": 2,
                            "enable.idempotence": idempotent, "message.timeout.ms": 60_000})
    acked, errors = [], []

    def on_delivery(error, message):
        (errors if error else acked).append(error or message.value())

    killed = None
    for i in range(N):
        key, value, headers = payload(i)
        producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
        producer.poll(0)
        if i == KILL_AT:  # records still in flight: no flush before the kill
            killed = leader_of(cluster, topic)
            cluster.kill(killed)
    assert producer.flush(60) == 0
    assert not errors, errors[:3]
    got = consume_all(cluster, topic, len(acked))
    duplicates = check(acked, got, idempotent, cluster, topic)
    print(f"confluent {compression} idempotent={idempotent}: {len(acked)} acked, "
          f"{duplicates} duplicates")
    heal(cluster, killed, topic)


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("idempotent", [True, False])
def test_kafka_python_survives_leader_sigkill(cluster, compression, idempotent):
    topic = f"kp-{compression}-{int(idempotent)}"
    create_topic(cluster, topic)
    producer = kafka.KafkaProducer(
        bootstrap_servers=cluster.bootstrap, acks="all", retries=20,
        compression_type=None if compression == "none" else compression,
        enable_idempotence=idempotent, linger_ms=2, request_timeout_ms=10_000,
        **({} if idempotent else {"max_in_flight_requests_per_connection": 1}))
    acked, killed = [], None
    try:
        futures = []
        for i in range(N):
            key, value, headers = payload(i)
            futures.append((value, producer.send(topic, key=key, value=value, headers=headers)))
            if i == KILL_AT:  # records still in flight: no flush before the kill
                killed = leader_of(cluster, topic)
                cluster.kill(killed)
        producer.flush(60)
        for value, future in futures:
            future.get(timeout=30)
            acked.append(value)
    finally:
        producer.close(10)
    got = consume_all(cluster, topic, len(acked))
    duplicates = check(acked, got, idempotent, cluster, topic)
    print(f"kafka-python {compression} idempotent={idempotent}: {len(acked)} acked, "
          f"{duplicates} duplicates")
    heal(cluster, killed, topic)


def test_confluent_group_on_the_cluster_uses_one_coordinator(cluster):
    with KafkaConnection.to(live_addresses(cluster)[0]) as connection:
        connection.send(19, 4, {"topics": [{
            "name": "grouped", "num_partitions": 3, "replication_factor": 3, "assignments": [],
            "configs": []}], "timeout": 10_000, "validate_only": False})
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(60):
        producer.produce("grouped", key=b"%d" % i, value=b"v%d" % i)
    assert producer.flush(30) == 0
    got, parts = consume_in_group(cluster.bootstrap, "grouped", "cg", 60, timeout_s=60)
    assert sorted(got) == sorted(b"v%d" % i for i in range(60))
    assert parts[0].isdisjoint(parts[1]) and parts[0] | parts[1] == {0, 1, 2}


@pytest.mark.slow
def test_rolling_sigkills_lose_nothing_acknowledged(cluster):
    """Kill and restart every broker in turn (leaders and followers) while an idempotent
    producer keeps writing; every acknowledged record is read back once, in order."""
    topic = "rolling"
    create_topic(cluster, topic)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                            "enable.idempotence": True, "linger.ms": 2,
                            "message.timeout.ms": 120_000})
    acked, errors = [], []

    def on_delivery(error, message):
        (errors if error else acked).append(error or message.value())

    sent = 0

    def send(count):
        nonlocal sent
        for _ in range(count):
            key, value, headers = payload(sent)
            producer.produce(topic, key=key, value=value, headers=headers,
                             on_delivery=on_delivery)
            producer.poll(0)
            sent += 1

    for victim in [0, 1, 2, 0, 1, 2]:
        send(150)
        cluster.kill(victim)
        send(150)
        assert producer.flush(120) == 0
        heal(cluster, victim, topic)
    assert not errors, errors[:3]
    got = consume_all(cluster, topic, len(acked))
    check(acked, got, True, cluster, topic)
    assert len(acked) == sent
