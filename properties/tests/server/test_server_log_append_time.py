"""Real clients (confluent-kafka/librdkafka, kafka-python) against one served kafkaref broker on
disk: a topic with message.timestamp.type=LogAppendTime gives every record the broker's append
time, with the LogAppendTime timestamp type, in the producer's delivery report and in what the
consumers read; the producer's own timestamps are not seen. AlterConfigs switching a topic acts
on later appends only. librdkafka's test 0052 checks the same (docs/compatibility.md)."""

import time

import confluent_kafka as ck
import kafka
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kafkaref.impl.server.config import ServerConfig
from kafkaref.properties.admin_futures import future_results
from kafkaref.properties.servers import BrokerSetup

pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk",
                                                                  server=ServerConfig())])
TIMEOUT_S = 30
PRODUCER_TIMESTAMP = 1_000  # 1970: a LogAppendTime topic's reader never sees it
KAFKA_PYTHON_LOG_APPEND_TIME = 1  # ConsumerRecord.timestamp_type


def now_ms() -> int:
    return int(time.time() * 1000)


def create(address: str, name: str, configs: dict) -> None:
    admin = AdminClient({"bootstrap.servers": address, "log_level": 3})
    assert future_results(admin.create_topics([NewTopic(name, 1, 1, config=configs)])) == {
        name: None}


def produce(address: str, topic: str, values: list[bytes]) -> list[tuple[int, int]]:
    """Each value in its own batch, with the producer's timestamp 1000; the delivery reports'
    (timestamp type, timestamp), in order."""
    producer = ck.Producer({"bootstrap.servers": address, "acks": "all", "linger.ms": 0,
                            "enable.idempotence": True, "log_level": 3})
    reports = []

    def on_delivery(error, message):
        assert error is None, error
        reports.append(message.timestamp())

    for value in values:
        producer.produce(topic, value, partition=0, timestamp=PRODUCER_TIMESTAMP,
                         on_delivery=on_delivery)
        assert producer.flush(TIMEOUT_S) == 0
    return reports


def consume_confluent(address: str, topic: str, count: int) -> list[tuple[bytes, tuple]]:
    consumer = ck.Consumer({"bootstrap.servers": address, "group.id": "g",
                            "enable.auto.commit": False, "log_level": 3})
    got = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                got.append((message.value(), message.timestamp()))
    finally:
        consumer.close()
    return got


def consume_kafka_python(address: str, topic: str) -> list[tuple[bytes, int, int]]:
    consumer = kafka.KafkaConsumer(bootstrap_servers=address, consumer_timeout_ms=3000,
                                   auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        return [(m.value, m.timestamp_type, m.timestamp) for m in consumer]
    finally:
        consumer.close()


def test_every_reader_sees_the_brokers_append_time(broker):
    create(broker.address, "lat", {"message.timestamp.type": "LogAppendTime"})
    before = now_ms()
    reports = produce(broker.address, "lat", [b"a", b"b", b"c"])
    after = now_ms()
    assert {kind for kind, _ in reports} == {ck.TIMESTAMP_LOG_APPEND_TIME}
    times = [stamp for _, stamp in reports]
    assert before <= times[0] <= times[1] <= times[2] <= after
    assert consume_confluent(broker.address, "lat", 3) == [
        (value, (ck.TIMESTAMP_LOG_APPEND_TIME, stamp))
        for value, stamp in zip((b"a", b"b", b"c"), times, strict=True)]
    assert consume_kafka_python(broker.address, "lat") == [
        (value, KAFKA_PYTHON_LOG_APPEND_TIME, stamp)
        for value, stamp in zip((b"a", b"b", b"c"), times, strict=True)]


def test_a_create_time_topic_switched_to_log_append_time_stamps_later_records_only(broker):
    create(broker.address, "t", {})
    (first,) = produce(broker.address, "t", [b"before"])
    assert first == (ck.TIMESTAMP_CREATE_TIME, PRODUCER_TIMESTAMP)
    admin = AdminClient({"bootstrap.servers": broker.address, "log_level": 3})
    resource = ConfigResource("topic", "t", incremental_configs=[ConfigEntry(
        "message.timestamp.type", "LogAppendTime",
        incremental_operation=AlterConfigOpType.SET)])
    assert future_results(admin.incremental_alter_configs([resource])) == {resource: None}
    before = now_ms()
    ((kind, stamp),) = produce(broker.address, "t", [b"after"])
    assert kind == ck.TIMESTAMP_LOG_APPEND_TIME and before <= stamp <= now_ms()
    assert consume_confluent(broker.address, "t", 2) == [
        (b"before", (ck.TIMESTAMP_CREATE_TIME, PRODUCER_TIMESTAMP)),
        (b"after", (ck.TIMESTAMP_LOG_APPEND_TIME, stamp))]
