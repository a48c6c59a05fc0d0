"""The frame receiver of client connections and replica fetchers: frames split across many recv
calls, a big frame then small ones, bad sizes and early close are errors."""

import socket
import struct
import threading

import pytest

from kafkaref.impl.client.connection import (
    KEPT_BUFFER_MAX,
    ConnectionClosed,
    KafkaConnection,
    receive_frame,
    wire,
)
from kafkaref.impl.replication.fetcher import RESPONSE_BYTES_MAX


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def send_in_pieces(sock, data: bytes, piece: int) -> threading.Thread:
    def run():
        for i in range(0, len(data), piece):
            sock.sendall(data[i:i + piece])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_frames_round_trip_whatever_the_recv_sizes(piece):
    payloads = [bytes(range(256)) * 4096, b"small", b"", b"\x01" * 70_000, b"tail"]
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(10)
        sender = send_in_pieces(a, b"".join(frame(p) for p in payloads), piece)
        for expected in payloads:
            view = receive_frame(b, RESPONSE_BYTES_MAX)
            assert view.readonly and bytes(view) == expected
            view.release()
        sender.join(10)


@pytest.mark.parametrize("size", [-1, RESPONSE_BYTES_MAX + 1])
def test_absurd_sizes_are_refused(size):
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(10)
        a.sendall(struct.pack(">i", size))
        with pytest.raises(ConnectionClosed):
            receive_frame(b, RESPONSE_BYTES_MAX)


def test_close_mid_frame_is_connection_closed():
    a, b = socket.socketpair()
    with b:
        b.settimeout(10)
        a.sendall(struct.pack(">i", 100) + b"x" * 10)
        a.close()
        with pytest.raises(ConnectionClosed):
            receive_frame(b, RESPONSE_BYTES_MAX)


def fetch_response(records: bytes):
    from kafkaref.impl.protocol.messages import build

    return build(wire.response_class(1, 12), {
        "throttle_time": 0, "error_code": 0, "session_id": 0, "responses": [{
            "topic": "t", "partitions": [{
                "partition_index": 0, "error_code": 0, "high_watermark": 1,
                "aborted_transactions": None, "records": records}]}]})


def test_receive_reuses_its_buffer_and_returns_nothing_that_aliases_it():
    """KafkaConnection.receive reads frames into one kept buffer; what it returns is kio's copy,
    so a later, bigger or smaller response does not change an earlier answer's records."""
    payloads = [b"a" * 70_000, b"b" * 300_000, b"c" * 10, b"d" * (KEPT_BUFFER_MAX + 1)]
    with socket.create_server(("127.0.0.1", 0)) as server:
        connection = KafkaConnection("127.0.0.1", server.getsockname()[1], timeout_s=10)
        peer, _ = server.accept()
        with connection, peer:
            answers = []
            for correlation_id, records in enumerate(payloads, start=1):
                sender = send_in_pieces(
                    peer, wire.encode_response(correlation_id, fetch_response(records)), 65536)
                answers.append(connection.receive(1, 12, correlation_id))
                sender.join(10)
            got = [a.responses[0].partitions[0].records for a in answers]
            assert got == payloads
            # kept: the largest frame up to KEPT_BUFFER_MAX (300,000 records bytes + headers)
            assert 300_000 < len(connection._buffer) < 300_100
