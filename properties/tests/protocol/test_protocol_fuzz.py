"""A protocol fuzzer against a running broker: random and mutated frames, huge length prefixes,
wrong API versions, truncated requests, batches with bad CRCs or wrong counts. The broker must
keep serving, answer with error codes or close only the offending connection, and lose no data.
Deterministic: every case comes from one seeded random.Random."""

import random
import socket
import struct

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.client.consumer import Consumer
from kafkaref.impl.client.producer import Producer
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.config import ServerConfig
from kafkaref.properties.servers import BrokerSetup

SEED = 20261122
CASES = 300


pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(
    storage="disk", server=ServerConfig(num_network_threads=2, num_io_threads=2,
                                        socket_request_max_bytes=1 << 20))])


def produce_frame(records_bytes, version=8, acks=1, correlation_id=1):
    request = build(load_request_schema(0, version), {
        "transactional_id": None, "acks": acks, "timeout": 1000,
        "topic_data": [{"name": "fz", "partition_data": [{"index": 0,
                                                          "records": records_bytes}]}]})
    return wire.encode_request(correlation_id, "fuzz", request)


def valid_frames(rng):
    batch = build_batch([(b"k", b"v" * rng.randrange(50), (), None)])
    large = build_batch([(b"k", rng.randbytes(300_000 + rng.randrange(100_000)), (), None)])
    return [
        produce_frame(batch),
        produce_frame(large),  # > one recv(): received into a frame buffer lent to the request
        wire.encode_request(2, "f", build(load_request_schema(3, 8), {"topics": None})),
        wire.encode_request(3, "f", build(load_request_schema(18, 3), {
            "client_software_name": "f", "client_software_version": "1"})),
        wire.encode_request(4, "f", build(load_request_schema(1, 11), {
            "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 16,
            "topics": [{"topic": "fz", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                       "partition_max_bytes": 1 << 16}]}]})),
    ]


def mutate(rng, frame: bytes) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(7)
    if kind == 0:  # bit flips anywhere after the size prefix
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(4, len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # truncated body, size prefix fixed up
        cut = rng.randrange(4, len(data))
        data = data[:cut]
        data[0:4] = struct.pack(">i", len(data) - 4)
    elif kind == 2:  # huge or negative length prefix
        data[0:4] = struct.pack(">i", rng.choice([1 << 30, 2**31 - 1, -1, -(2**31), 7]))
    elif kind == 3:  # wrong API version
        data[6:8] = struct.pack(">h", rng.choice([-1, 99, 1000, 12, 2]))
    elif kind == 4:  # unknown API key
        data[4:6] = struct.pack(">h", rng.choice([-5, 77, 1000, 32767]))
    elif kind == 5:  # trailing garbage, size prefix fixed up
        data += rng.randbytes(rng.randrange(1, 40))
        data[0:4] = struct.pack(">i", len(data) - 4)
    else:  # pure noise with a plausible size
        body = rng.randbytes(rng.randrange(0, 200))
        data = bytearray(struct.pack(">i", len(body)) + body)
    return bytes(data)


def send_and_settle(broker, frame: bytes) -> str:
    """Send one frame on a new connection: 'answered', 'closed' or 'silent' (still open)."""
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    try:
        sock.sendall(frame)
        sock.settimeout(1.0)
        try:
            data = sock.recv(1 << 16)
        except TimeoutError:
            return "silent"  # e.g. a frame whose size promises more bytes than were sent
        except ConnectionResetError:
            return "closed"
        return "answered" if data else "closed"
    finally:
        sock.close()


def assert_serves(broker):
    with KafkaConnection("127.0.0.1", broker.port, timeout_s=5) as connection:
        assert connection.send(18, 2, {}).error_code == ErrorCode.none


def test_fuzzed_frames_never_break_the_broker_or_its_data(broker):
    rng = random.Random(SEED)
    with Producer(broker.address) as producer:
        acked = [producer.send("fz", b"acked-%d" % i, partition=0) for i in range(20)]
    acked_values = [f.result(timeout=5) and b"acked-%d" % i for i, f in enumerate(acked)]
    outcomes = {"answered": 0, "closed": 0, "silent": 0}
    for case in range(CASES):
        frame = mutate(rng, rng.choice(valid_frames(rng)))
        outcomes[send_and_settle(broker, frame)] += 1
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
    print(f"fuzz outcomes: {outcomes}, log holds {len(values)} records")


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
