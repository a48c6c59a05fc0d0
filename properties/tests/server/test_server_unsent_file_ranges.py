"""A client that closes its connection before reading a zero-copy fetch answer: the file ranges
still queued for os.sendfile() are closed with the connection, so no descriptor of the segment
outlives it (network_thread._close -> response_queue.release_unsent).

Found by mutation testing (docs/mutation.md, the sample on 9df4313's 00159): release_unsent's
test negated passed every server test, since no test closed a connection with output unsent."""

import os
import socket
import struct

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import build_batch
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


@ON_DISK
def test_a_connection_closed_with_a_fetch_answer_unsent_closes_its_file_ranges(broker, tmp_path):
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
    network_thread = broker.network_threads[0]
    wait_until(lambda: not network_thread.connections, timeout_s=10,
               what="the set-up connection closed")
    before = segment_descriptors(str(tmp_path))

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.connect(("127.0.0.1", broker.port))
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
