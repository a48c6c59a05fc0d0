"""Zero-copy fetch answers far bigger than the socket buffers: os.sendfile() sends them in many
parts. A slow reader gets every byte, in order; a client that closes its connection before
reading the answer leaves no descriptor of the segment open (network_thread._close ->
response_queue.release_unsent).

Found by mutation testing (docs/mutation.md, the sample on 9df4313's 00159 and 00327): no test
had a file range sent in parts, or a connection closed with output unsent."""

import os
import socket
import struct

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import LENGTH_POS, LOG_OVERHEAD, build_batch, decode_batch
from kafkaref.impl.server.response_queue import FilePart
from kafkaref.properties.servers import BrokerSetup
from kafkaref.properties.waiting import wait_until

ON_DISK = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk")])
BATCH_VALUE = b"v" * (256 * 1024)
BATCHES = 16  # 4 MiB: far more than the socket buffers hold while the client reads nothing


def segment_descriptors(directory: str) -> int:
    """This process's open descriptors of .log files under directory."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed since listed
        count += target.startswith(directory) and target.endswith(".log")
    return count


def fetch_frame(correlation_id: int) -> bytes:
    everything = 64 << 20
    return wire.encode_request(correlation_id, "t", build(load_request_schema(1, 11), {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": everything,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "topics": [{"topic": "big", "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
            "log_start_offset": -1, "partition_max_bytes": everything}]}],
        "forgotten_topics_data": []}))


def produce_big_partition(broker) -> None:
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        created = conn.send(19, 4, {"topics": [{
            "name": "big", "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": []}], "timeout": 5000, "validate_only": False}).topics[0]
        assert created.error_code == ErrorCode.none
        for _ in range(BATCHES):
            answer = conn.send(0, 8, {"transactional_id": None, "acks": 1, "timeout": 5000,
                                      "topic_data": [{"name": "big", "partition_data": [{
                                          "index": 0, "records": build_batch(
                                              [(None, BATCH_VALUE, (), None)])}]}]})
            assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none


def small_window_socket(broker) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.settimeout(10)
    sock.connect(("127.0.0.1", broker.port))
    return sock


def receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 8192))
        assert chunk, f"closed after {len(data)} of {size} bytes"
        data += chunk
    return bytes(data)


@ON_DISK
def test_a_slow_reader_gets_a_zero_copy_answer_whole(broker):
    produce_big_partition(broker)
    with small_window_socket(broker) as sock:
        sock.sendall(fetch_frame(1))
        (size,) = struct.unpack(">i", receive_exactly(sock, 4))
        _, answer = wire.decode_response(1, 11, receive_exactly(sock, size))
    partition = answer.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.none and partition.high_watermark == BATCHES
    records, values = partition.records, []
    while records:
        end = LOG_OVERHEAD + struct.unpack_from(">i", records, LENGTH_POS)[0]
        values += [r.value for r in decode_batch(records[:end]).records]
        records = records[end:]
    assert values == [BATCH_VALUE] * BATCHES


@ON_DISK
def test_a_connection_closed_with_a_fetch_answer_unsent_closes_its_file_ranges(broker, tmp_path):
    produce_big_partition(broker)
    network_thread = broker.network_threads[0]
    wait_until(lambda: not network_thread.connections, timeout_s=10,
               what="the set-up connection closed")
    before = segment_descriptors(str(tmp_path))

    sock = small_window_socket(broker)
    sock.sendall(fetch_frame(1))
    header = sock.recv(4)
    assert len(header) == 4 and struct.unpack(">i", header)[0] > BATCHES * len(BATCH_VALUE)

    def stalled_on_a_file_range():  # list() copies in one step: the thread keeps writing
        return any(isinstance(part, FilePart) for c in list(network_thread.connections.values())
                   for part in list(c.outbuf))

    wait_until(stalled_on_a_file_range, timeout_s=10, what="the answer stalled mid-file")
    assert segment_descriptors(str(tmp_path)) > before  # the queued range holds one
    sock.close()
    wait_until(lambda: not network_thread.connections, timeout_s=10,
               what="the broker closed the connection")
    wait_until(lambda: segment_descriptors(str(tmp_path)) == before, timeout_s=10,
               what="the unsent file range's descriptor closed")
