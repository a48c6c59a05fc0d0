"""kafkaref's own client: Java-identical murmur2, producer batching/compression/idempotence,
consumer assign/seek/poll -- against an in-process broker."""

import time

import kafka.partitioner.default as kafka_default
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.client.consumer import Consumer
from kafkaref.impl.client.partitioner import StickyPartitioner, keyed_partition, murmur2
from kafkaref.impl.client.producer import Producer
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST
from kafkaref.properties.servers import BrokerSetup

# From the Java client's UtilsTest.testMurmur2 (signed 32-bit results).
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_murmur2_matches_java_vectors():
    for data, expected in JAVA_VECTORS.items():
        assert murmur2(data) == expected


@given(st.binary(max_size=64))
def test_murmur2_agrees_with_kafka_python(data):
    assert murmur2(data) & 0xFFFFFFFF == kafka_default.murmur2(data)


def test_sticky_partitioner_keeps_keys_and_moves_unkeyed_after_a_batch():
    p = StickyPartitioner()
    assert p.partition("t", b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    first = p.partition("t", None, 5)
    assert p.partition("t", None, 5) == first
    p.batch_sent("t", 5)
    assert p.partition("t", None, 5) != first


THREE_PARTITIONS = pytest.mark.parametrize(
    "broker_setup", [BrokerSetup(broker=BrokerConfig(default_partitions=3))])


@THREE_PARTITIONS
@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_then_consume_everything_in_order(broker, compression):
    with Producer(broker.address, compression=compression, batch_size=2000,
                  enable_idempotence=True) as producer:
        futures = [producer.send("t", b"v%d" % i, key=b"k%d" % (i % 5),
                                 headers=[("h", b"%d" % i)]) for i in range(200)]
        producer.flush()
    metas = [f.result(timeout=5) for f in futures]
    for key_index in range(5):
        partitions = {m.partition for i, m in enumerate(metas) if i % 5 == key_index}
        assert partitions == {keyed_partition(b"k%d" % key_index, 3)}
    with Consumer(broker.address) as consumer:
        consumer.assign([("t", p) for p in range(3)])
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 200 and time.monotonic() < deadline:
            got += consumer.poll(max_wait_ms=100)
    assert sorted(int(r.value[1:]) for r in got) == list(range(200))
    for p in range(3):
        offsets = [r.offset for r in got if r.partition == p]
        assert offsets == list(range(len(offsets)))
        values = [int(r.value[1:]) for r in got if r.partition == p]
        assert values == sorted(values)


@THREE_PARTITIONS
def test_consumer_seek_and_long_poll(broker):
    with Producer(broker.address) as producer:
        for i in range(10):
            producer.send("s", b"%d" % i, partition=0)
    with Consumer(broker.address) as consumer:
        consumer.assign([("s", 0)])
        consumer.seek("s", 0, 7)
        assert [r.value for r in consumer.poll(100)] == [b"7", b"8", b"9"]
        consumer.seek_to(EARLIEST)
        assert consumer.position("s", 0) == 0
        consumer.seek_to(LATEST)
        started = time.monotonic()
        assert consumer.poll(max_wait_ms=300) == []
        assert time.monotonic() - started >= 0.25  # the broker held the fetch (max_wait)
