"""Real consumers for tests: members of one group (confluent-kafka), for the tests that check a
group splits a topic's partitions between its members and that together they read every record;
and read_partition, one partition read from the start (kafka-python)."""

from __future__ import annotations

import time


def consume_in_group(bootstrap: str, topic: str, group: str, count: int, timeout_s: float,
                     members: int = 2, config: dict | None = None
                     ) -> tuple[list[bytes], list[set[int]]]:
    """Subscribe `members` consumers of `group` to `topic` (from the earliest offset) and poll
    them in turn until `count` values arrived and every member has partitions, or timeout_s.
    Returns the values read and each member's assigned partitions."""
    import confluent_kafka as ck  # the dev extra's client, not a dependency of kafkaref itself

    consumers = [ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "auto.offset.reset": "earliest", **(config or {})})
                 for _ in range(members)]
    got = []
    try:
        for consumer in consumers:
            consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (
                len(got) < count or not all(c.assignment() for c in consumers)):
            for consumer in consumers:
                message = consumer.poll(0.05)
                if message is not None and message.error() is None:
                    got.append(message.value())
        assignments = [{tp.partition for tp in c.assignment()} for c in consumers]
    finally:
        for consumer in consumers:
            consumer.close()
    return got, assignments


def read_partition(bootstrap: str, topic: str, partition: int = 0) -> list[bytes]:
    """Every value of one partition from its start, read by a kafka-python consumer assigned to
    it (no group); it stops after 3 s without a new record."""
    import kafka  # the dev extra's client

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=3000,
                                   auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer.assign([kafka.TopicPartition(topic, partition)])
        return [m.value for m in consumer]
    finally:
        consumer.close()
