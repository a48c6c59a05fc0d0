"""Real Kafka clients (kafka-python, confluent-kafka/librdkafka) against ONE kafkaref broker."""

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin
import kafka
import kafka.admin as kafka_admin
import pytest

from kafkaref.impl.server.config import ServerConfig
from kafkaref.properties.servers import BrokerSetup
from kafkaref.properties.waiting import wait_until

COMPRESSIONS = ["none", "gzip", "snappy", "lz4", "zstd"]
N = 30


pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk",
                                                                  server=ServerConfig())])


def records(topic):
    return [(f"k{i}".encode(), f"{topic}-{i}".encode() * 5) for i in range(N)]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_kafka_python_produce_and_consume(broker, compression):
    topic = f"kp-{compression}"
    # Every codec's library is a dependency (lz4, zstandard; python-snappy in dev): a codec
    # kafka-python cannot load is a broken install, and fails here rather than skipping.
    producer = kafka.KafkaProducer(
        bootstrap_servers=broker.address, acks="all",
        compression_type=None if compression == "none" else compression)
    try:
        for key, value in records(topic):
            producer.send(topic, key=key, value=value, headers=[("h", key)])
        producer.flush(20)
    finally:
        producer.close(5)
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.address,
                                   auto_offset_reset="earliest", enable_auto_commit=False)
    got = []
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        wait_until(lambda: len(got) >= N, step=lambda: got.extend(
            r for rs in consumer.poll(200).values() for r in rs), timeout_s=20)
    finally:
        consumer.close()
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
        (i, k, v, [("h", k)]) for i, (k, v) in enumerate(records(topic))]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_confluent_kafka_produce_and_consume(broker, compression):
    topic = f"ck-{compression}"
    producer = ck.Producer({"bootstrap.servers": broker.address, "acks": "all",
                            "compression.type": compression, "enable.idempotence": True,
                            "linger.ms": 5})
    acked = []

    def on_delivery(error, message):
        assert error is None, error
        acked.append(message.offset())

    for key, value in records(topic):
        producer.produce(topic, key=key, value=value, headers=[("h", key)],
                         on_delivery=on_delivery)
    assert producer.flush(20) == 0
    assert sorted(acked) == list(range(N))
    consumer = ck.Consumer({"bootstrap.servers": broker.address, "group.id": "g",
                            "enable.auto.commit": False})
    got = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])

        def step():
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                got.append(message)

        wait_until(lambda: len(got) >= N, step=step, timeout_s=20)
        consumer.commit(message=got[-1], asynchronous=False)
        committed = consumer.committed([ck.TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset == N
    finally:
        consumer.close()
    assert [(m.offset(), m.key(), m.value(), m.headers()) for m in got] == [
        (i, k, v, [("h", k)]) for i, (k, v) in enumerate(records(topic))]


def test_admin_clients_create_and_list_topics(broker):
    admin = kafka_admin.KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        admin.create_topics([kafka_admin.NewTopic("kp-admin", 3, 1,
                                                  topic_configs={"min.insync.replicas": "1"})])
        assert "kp-admin" in admin.list_topics()
    finally:
        admin.close()
    client = ck_admin.AdminClient({"bootstrap.servers": broker.address})
    for future in client.create_topics([ck_admin.NewTopic("ck-admin", 2, 1)]).values():
        assert future.result(10) is None
    topics = client.list_topics(timeout=10).topics
    assert len(topics["ck-admin"].partitions) == 2 and "kp-admin" in topics
