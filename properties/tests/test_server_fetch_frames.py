"""The frame receiver of client connections and replica fetchers: frames split across many recv
calls, a big frame then small ones, bad sizes and early close are errors."""

import socket
import struct
import threading

import pytest

from kafkaref.impl.client.connection import ConnectionClosed, receive_frame
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
