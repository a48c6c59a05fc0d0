"""Real clients with subscribe() and a group against one broker: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit."""

import time

import confluent_kafka as ck
import kafka
import pytest

from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.server.config import ServerConfig
from kafkaref.properties.consumer_groups import consume_in_group
from kafkaref.properties.servers import BrokerSetup

pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(
    storage="disk", server=ServerConfig(), broker=BrokerConfig(default_partitions=4))])


def test_confluent_group_splits_partitions_and_consumes_everything(broker):
    producer = ck.Producer({"bootstrap.servers": broker.address})
    for i in range(40):
        producer.produce("g", key=b"%d" % i, value=b"v%d" % i)
    assert producer.flush(10) == 0
    got, assignments = consume_in_group(broker.address, "g", "grp", 40, timeout_s=40,
                                        config={"session.timeout.ms": 6000})
    assert sorted(got) == sorted(b"v%d" % i for i in range(40))
    assert assignments[0].isdisjoint(assignments[1])
    assert assignments[0] | assignments[1] == {0, 1, 2, 3}


def test_kafka_python_subscribe_and_commit(broker):
    producer = kafka.KafkaProducer(bootstrap_servers=broker.address)
    for i in range(20):
        producer.send("k", value=b"v%d" % i)
    producer.flush(10)
    producer.close()
    consumer = kafka.KafkaConsumer("k", bootstrap_servers=broker.address, group_id="kgrp",
                                   auto_offset_reset="earliest", enable_auto_commit=False)
    got = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            for records in consumer.poll(200).values():
                got += [r.value for r in records]
        consumer.commit()
        committed = {tp.partition: consumer.committed(tp) for tp in consumer.assignment()}
    finally:
        consumer.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(20))
    assert sum(committed.values()) == 20
