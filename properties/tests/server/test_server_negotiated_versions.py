"""The versions real clients negotiate with kafkaref (issue 23 point 4): each client
(confluent-kafka, kafka-python, and Kafka's Java client through its Verifiable tools) produces,
consumes in a group and commits against one broker while the broker's core notes every request's
API and version; the test prints what each client used (pytest -s) and holds it to the
versions pinned below: each client's own newest, within kafkaref's ranges (librdkafka, kafka-python
and the Java client speak the flexible versions kafkaref advertises since it serves Apache Kafka
4.3.1's ranges)."""

from __future__ import annotations

import subprocess

import confluent_kafka as ck
import kafka
import pytest

from kafkaref.chaos import java_clients as java
from kafkaref.impl.protocol.wire import SUPPORTED
from kafkaref.properties.servers import BrokerSetup

pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk")])


def noting(broker, monkeypatch) -> dict[str, set[int]]:
    """{API name: versions} of every request the broker's core handles from now on."""
    seen: dict[str, set[int]] = {}
    core = broker.broker
    handle = core.handle

    def noted(request, respond):
        seen.setdefault(request.name, set()).add(request.api_version)
        return handle(request, respond)

    monkeypatch.setattr(core, "handle", noted)
    return seen


def shown(client: str, seen: dict[str, set[int]]) -> str:
    return f"{client}: " + ", ".join(f"{name} v{'/'.join(map(str, sorted(found)))}"
                                     for name, found in sorted(seen.items()))


def confluent_round(address: str, topic: str) -> None:
    producer = ck.Producer({"bootstrap.servers": address, "enable.idempotence": True})
    for i in range(5):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": address, "group.id": f"g-{topic}",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = []
    while len(got) < 5:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()


def kafka_python_round(address: str, topic: str) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=address, acks="all")
    for i in range(5):
        producer.send(topic, value=b"v%d" % i)
    producer.flush(30)
    producer.close(5)
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=address, group_id=f"g-{topic}",
                                   auto_offset_reset="earliest", enable_auto_commit=False,
                                   consumer_timeout_ms=20_000)
    got = [m.value for _, m in zip(range(5), consumer, strict=False)]
    assert len(got) == 5
    consumer.commit()
    consumer.close()


def java_round(address: str, topic: str, tmp_path) -> None:
    """Kafka's own Java client (4.3.1, the pinned jars): VerifiableProducer, then
    VerifiableConsumer in a group, each to its end."""
    config = java.properties_file({"enable.idempotence": "true", "retries": "10"}, str(tmp_path))
    for command in (java.verifiable_producer(address, topic, config, max_messages=5),
                    java.verifiable_consumer(address, topic, f"g-{topic}", config,
                                             max_messages=5)):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, done.stderr[-2000:]


# What each client sends with kafkaref advertising Apache Kafka 4.3.1's ranges: its own newest
# version of each API (all within kafkaref's, most of them flexible: Fetch v16 and Produce v10
# with KIP-951's leader hints, Metadata v13, ListOffsets v11 for kafka-python). Heartbeats are
# left out: whether one falls within the run is a matter of timing.
NEGOTIATED = {
    "confluent-kafka": {  # librdkafka 2.16
        "api_versions": 3, "metadata": 13, "init_producer_id": 4, "produce": 10,
        "find_coordinator": 2, "join_group": 5, "sync_group": 3, "offset_fetch": 9,
        "list_offsets": 7, "fetch": 16, "offset_commit": 9, "leave_group": 1},
    "java": {  # Kafka's clients 4.3.1: the newest of every API, Produce v13 naming the topic by id
        "api_versions": 4, "metadata": 13, "init_producer_id": 5, "produce": 13,
        "find_coordinator": 6, "join_group": 9, "sync_group": 5, "offset_fetch": 9,
        "list_offsets": 11, "fetch": 18, "offset_commit": 9, "leave_group": 5},
    "kafka-python": {  # kafka-python 3.0
        "api_versions": 4, "metadata": 13, "init_producer_id": 4, "produce": 9,
        "find_coordinator": 6, "join_group": 7, "sync_group": 5, "offset_fetch": 8,
        "list_offsets": 11, "fetch": 12, "offset_commit": 8, "leave_group": 5},
}
ROUNDS = {"confluent-kafka": lambda address, topic, _: confluent_round(address, topic),
          "kafka-python": lambda address, topic, _: kafka_python_round(address, topic),
          "java": java_round}


@pytest.mark.parametrize("client", sorted(NEGOTIATED))
def test_the_versions_clients_negotiate(broker, monkeypatch, client, tmp_path):
    seen = noting(broker, monkeypatch)
    ROUNDS[client](broker.address, f"negotiated-{client}", tmp_path)
    print(shown(client, seen))  # pytest -s: the log the issue asks for
    ranges = {name: (low, high) for name, low, high in SUPPORTED.values()}
    for name, found in seen.items():
        low, high = ranges[name]
        assert all(low <= v <= high for v in found), (name, found)
    assert {name: seen.get(name) for name in NEGOTIATED[client]} == {
        name: {version} for name, version in NEGOTIATED[client].items()}, shown(client, seen)
