"""A protocol fuzzer against a running broker: random and mutated frames, huge length prefixes,
wrong API versions, truncated requests, batches with bad CRCs or wrong counts. The broker must
keep serving, answer with error codes or close only the offending connection, and lose no data.
Deterministic: every case comes from one seeded random.Random. The frames and mutations are
the conformance suite's fuzzer (chaos/conform/fuzz.py), which runs the same against any broker."""

import random
import struct

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import HIGHEST, LOWEST
from kafkaref.chaos.conform.fuzz import (
    SEED,
    mutate,
    probe_frames,
    produce_frame,
    send_and_settle,
    valid_frames,
)
from kafkaref.chaos.conform.probe import Probe
from kafkaref.chaos.conform.runner import negotiate
from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.client.consumer import Consumer
from kafkaref.impl.client.producer import Producer
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.config import ServerConfig
from kafkaref.properties.servers import BrokerSetup

CASES = 300


pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(
    storage="disk", server=ServerConfig(num_network_threads=2, num_io_threads=2,
                                        socket_request_max_bytes=1 << 20))])


def assert_serves(broker):
    with KafkaConnection("127.0.0.1", broker.port, timeout_s=5) as connection:
        assert connection.send(18, 2, {}).error_code == ErrorCode.none


@pytest.mark.parametrize("level", [LOWEST, HIGHEST])
def test_fuzzed_frames_never_break_the_broker_or_its_data(broker, level):
    """The frames mutated are at the lowest, then the highest, versions the broker advertises
    (as the conform check's levels: Produce v3 / v13, Fetch v4 / v18 by topic id, ...)."""
    rng = random.Random(SEED)
    with Producer(broker.address) as producer:
        acked = [producer.send("fz", b"acked-%d" % i, partition=0) for i in range(20)]
    acked_values = [f.result(timeout=5) and b"acked-%d" % i for i, f in enumerate(acked)]
    probe = Probe(broker.address, negotiate(broker.address), level=level)
    try:
        frames = probe_frames(probe, "fz")
    finally:
        probe.close()
    outcomes = {"answered": 0, "closed": 0, "silent": 0}
    for case in range(CASES):
        frame = mutate(rng, rng.choice(valid_frames(rng, frames)))
        outcomes[send_and_settle(("127.0.0.1", broker.port), frame)] += 1
        if case % 50 == 0:
            assert_serves(broker)
    assert_serves(broker)
    assert outcomes["closed"] > 0 and outcomes["answered"] > 0
    with Consumer(broker.address) as consumer:
        consumer.assign([("fz", 0)])
        consumer.seek("fz", 0, 0)
        got = []
        for _ in range(50):
            batch = consumer.poll(50)
            if not batch:
                break
            got += batch
    values = [r.value for r in got]
    assert values[:20] == acked_values  # acknowledged data intact, every stored batch decodes
    print(f"fuzz outcomes at {frames.versions}: {outcomes}, log holds {len(values)} records")


@pytest.mark.parametrize("damage", ["crc", "count", "length", "magic", "base_offset"])
def test_bad_batches_are_rejected_with_an_error_and_nothing_is_written(broker, damage):
    with Producer(broker.address) as producer:  # the topic exists: the batch is what is wrong
        producer.send("fz", b"before", partition=0).result(timeout=5)
    with KafkaConnection("127.0.0.1", broker.port) as connection:
        before = connection.send(2, 5, {"replica_id": -1, "topics": [{"name": "fz", "partitions": [
            {"partition_index": 0, "timestamp": -1}]}]}).topics[0].partitions[0].offset
        batch = bytearray(build_batch([(None, b"x", (), None), (None, b"y", (), None)]))
        if damage == "crc":
            batch[-1] ^= 0xFF
        elif damage == "count":
            batch[57:61] = struct.pack(">i", 5)  # RecordsCount
        elif damage == "length":
            batch[8:12] = struct.pack(">i", len(batch) + 100)
        elif damage == "magic":
            batch[16] = 1
        else:
            batch[0:8] = struct.pack(">q", 42)
        connection.send_raw(produce_frame(bytes(batch), correlation_id=99))
        _, answer = wire.decode_response(0, 8, connection._recv_frame())
        error = answer.responses[0].partition_responses[0].error_code
        assert error in (ErrorCode.corrupt_message, ErrorCode.invalid_record), error
        after = connection.send(2, 5, {"replica_id": -1, "topics": [{"name": "fz", "partitions": [
            {"partition_index": 0, "timestamp": -1}]}]}).topics[0].partitions[0].offset
        assert after == before
