"""kafkaref's producer with pipelined produce requests (max_in_flight > 1) against an in-process
broker on storage logs (the large-frame receive path and the copy-free leader append)."""

import time

import pytest

from kafkaref.impl.client.consumer import Consumer
from kafkaref.impl.client.producer import Producer
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.properties.servers import BrokerSetup

pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(
    storage="disk", broker=BrokerConfig(default_partitions=2))])


def consume_all(address, topic, partitions, count, timeout_s=20):
    with Consumer(address) as consumer:
        consumer.assign([(topic, p) for p in range(partitions)])
        got, deadline = [], time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            got.extend(consumer.poll(max_wait_ms=200))
    return got


@pytest.mark.parametrize("value_bytes", [10, 70_000])  # small frames and large ones
def test_pipelined_producer_keeps_order_and_offsets(broker, value_bytes):
    count = 300 if value_bytes < 1000 else 40
    with Producer(broker.address, acks=1, batch_size=4 * value_bytes + 200,
                  max_in_flight=4) as producer:
        futures = [producer.send("pipe", b"%06d" % i + b"x" * value_bytes, partition=i % 2)
                   for i in range(count)]
        producer.flush()
        assert not producer._in_flight
    metas = [f.result(timeout=5) for f in futures]
    for partition in range(2):
        offsets = [m.offset for m in metas if m.partition == partition]
        assert offsets == list(range(len(offsets)))
    got = consume_all(broker.address, "pipe", 2, count)
    for partition in range(2):
        values = [r.value[:6] for r in got if r.partition == partition]
        assert values == [b"%06d" % i for i in range(partition, count, 2)]


def test_result_settles_a_pipelined_batch_without_flush(broker):
    with Producer(broker.address, acks="all", batch_size=1, max_in_flight=3) as producer:
        futures = [producer.send("pipe2", b"v%d" % i, partition=0) for i in range(5)]
        assert futures[0].result(timeout=5).offset == 0  # reads the answers in flight
        assert [f.result(timeout=5).offset for f in futures] == list(range(5))


def test_idempotent_or_acks_0_producers_do_not_pipeline(broker):
    with Producer(broker.address, acks="all", enable_idempotence=True,
                  max_in_flight=5) as producer:
        assert not producer._pipelined
    with Producer(broker.address, acks=0, max_in_flight=5) as producer:
        assert not producer._pipelined
    with pytest.raises(ValueError):
        Producer(broker.address, max_in_flight=0)
