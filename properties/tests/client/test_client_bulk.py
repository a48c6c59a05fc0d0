"""Producer.send_many against send() one by one (same records, partitions, offsets and
batches under batch_size), and the stdin chunking of `kafkaref produce`."""

import io
import random

import pytest

from kafkaref.impl.client.console import ready_lines as _ready_lines
from kafkaref.impl.client.console import split_keys as _split_keys
from kafkaref.impl.client.consumer import Consumer
from kafkaref.impl.client.partitioner import StickyPartitioner
from kafkaref.impl.client.producer import Producer
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.properties.servers import BrokerSetup

THREE_PARTITIONS = pytest.mark.parametrize(
    "broker_setup", [BrokerSetup(broker=BrokerConfig(default_partitions=3))])


def consume_all(address, topic, expected):
    with Consumer(address) as consumer:
        consumer.assign([(topic, p) for p in range(3)])
        got = []
        for _ in range(200):
            if len(got) >= expected:
                break
            got += consumer.poll(max_wait_ms=50)
    return [(r.partition, r.offset, r.key, r.value, r.timestamp) for r in got]


def produce(address, topic, bulk, values, keys, partition, max_in_flight):
    with Producer(address, acks=1, batch_size=700, linger_ms=60_000,
                  partitioner=StickyPartitioner(random.Random(3)),
                  max_in_flight=max_in_flight) as producer:
        if bulk:
            futures = []
            for start in range(0, len(values), 37):  # several calls, batches span them
                futures += producer.send_many(
                    topic, values[start:start + 37],
                    keys=None if keys is None else keys[start:start + 37],
                    partition=partition, timestamp_ms=1000)
        else:
            futures = [producer.send(topic, v, key=None if keys is None else keys[i],
                                     partition=partition, timestamp_ms=1000)
                       for i, v in enumerate(values)]
        producer.flush()
        return [(m.partition, m.offset) for m in (f.result(timeout=10) for f in futures)]


@THREE_PARTITIONS
@pytest.mark.parametrize("partition", [None, 1])
@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("max_in_flight", [1, 5])
def test_send_many_matches_send(broker, partition, keyed, max_in_flight):
    rng = random.Random(7)
    values = [None if rng.random() < 0.05 else rng.randbytes(rng.randrange(0, 120))
              for _ in range(300)]
    keys = [None if rng.random() < 0.2 else b"k%d" % rng.randrange(9) for _ in values]
    keys = keys if keyed else None
    results = {}
    for bulk in (False, True):
        topic = f"t-{bulk}-{partition}-{keyed}-{max_in_flight}"
        metas = produce(broker.address, topic, bulk, values, keys, partition, max_in_flight)
        results[bulk] = metas, consume_all(broker.address, topic, len(values))
    assert results[True] == results[False]
    metas, records = results[True]
    by_position = {(p, o): (k, v) for p, o, k, v, _ in records}
    assert [by_position[m] for m in metas] == [
        (None if keys is None else keys[i], v) for i, v in enumerate(values)]


@THREE_PARTITIONS
def test_send_many_rejects_mismatched_keys(broker):
    with Producer(broker.address) as producer, pytest.raises(ValueError):
        producer.send_many("x", [b"a", b"b"], keys=[b"k"])


class Trickle(io.RawIOBase):
    """A stream that hands out its bytes in fixed small pieces (like a pipe or a terminal)."""

    def __init__(self, data: bytes, piece: int):
        self.data, self.piece = data, piece

    def readable(self):
        return True

    def read1(self, n=-1):
        out, self.data = self.data[:min(n, self.piece)], self.data[min(n, self.piece):]
        return out


@pytest.mark.parametrize("piece", [1, 3, 7, 1 << 20])
@pytest.mark.parametrize("data", [b"", b"a\nb\r\n\nc", b"one\ntwo\n", b"x" * 50 + b"\n"])
def test_ready_lines_split_like_line_iteration(data, piece):
    got = [line for chunk in _ready_lines(Trickle(data, piece), chunk_bytes=5) for line in chunk]
    assert got == [line.rstrip(b"\r\n") for line in io.BytesIO(data)]


def test_split_keys():
    assert _split_keys([b"k:v", b"novalue", b":x", b"a:b:c"], b":") == (
        [b"v", b"novalue", b"x", b"b:c"], [b"k", None, b"", b"a"])
    assert _split_keys([b"k:v"], None) == ([b"k:v"], None)


def test_record_futures_index_like_a_list():
    from concurrent.futures import Future

    from kafkaref.impl.client.producer import RecordFutures

    futures = RecordFutures()
    batches = [Future(), Future()]
    futures._add(batches[0], "t", 0, 5, 3)  # records 5..7 of batch 0
    futures._add(batches[1], "t", 2, 0, 0)  # empty runs are skipped
    futures._add(batches[1], "t", 1, 0, 2)
    batches[0].set_result(100)
    batches[1].set_result(200)
    expected = [("t", 0, 105), ("t", 0, 106), ("t", 0, 107), ("t", 1, 200), ("t", 1, 201)]
    got = [(m.topic, m.partition, m.offset) for m in (f.result() for f in futures)]
    assert got == expected and len(futures) == 5
    assert futures[-1].result().offset == 201 and futures[-5].result().offset == 105
    assert [f.result().offset for f in futures[1:4]] == [106, 107, 200]
    for bad in (5, -6):
        with pytest.raises(IndexError):
            futures[bad]


@THREE_PARTITIONS
def test_fetch_ahead_returns_what_plain_polls_return(broker):
    """The same records, poll by poll, with and without the fetch sent ahead, across seeks,
    a change of max_wait and records appended between polls."""
    rng = random.Random(11)
    with Producer(broker.address, acks=1, batch_size=300) as producer:
        producer.send_many("fa", [rng.randbytes(rng.randrange(1, 90)) for _ in range(400)],
                           partition=0)
        producer.send_many("fa", [b"p1-%d" % i for i in range(50)], partition=1)
        producer.flush()
        runs = {}
        for ahead in (True, False):
            polls = []
            with Consumer(broker.address, max_partition_fetch_bytes=700,
                          fetch_ahead=ahead) as consumer:
                consumer.assign([("fa", 0)])
                consumer.seek("fa", 0, 0)
                for step in range(12):
                    if step == 4:
                        consumer.seek("fa", 0, 17)
                    if step == 7:
                        consumer.assign([("fa", 0), ("fa", 1)])
                        consumer.seek("fa", 0, 100)
                        consumer.seek("fa", 1, 3)
                    wait = 0 if step % 3 else 5
                    polls.append([(r.partition, r.offset, r.value)
                                  for r in consumer.poll(max_wait_ms=wait)])
            runs[ahead] = polls
    assert runs[True] == runs[False]
    assert all(runs[True][:4]) and runs[True][4][0][1] == 17


@THREE_PARTITIONS
def test_fetch_ahead_sees_records_appended_later(broker):
    with Producer(broker.address, acks=1) as producer, Consumer(broker.address) as consumer:
        producer.send_many("late", [b"a", b"b"], partition=0)
        producer.flush()
        consumer.assign([("late", 0)])
        consumer.seek("late", 0, 0)
        assert [r.value for r in consumer.poll(max_wait_ms=50)] == [b"a", b"b"]
        producer.send_many("late", [b"c"], partition=0)
        producer.flush()
        got = []
        for _ in range(50):  # bounded: each poll waits at most 50 ms
            got += [r.value for r in consumer.poll(max_wait_ms=50)]
            if got:
                break
        assert got == [b"c"]
        assert consumer.position("late", 0) == 3
