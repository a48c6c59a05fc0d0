"""A request whose last byte arrives in a TCP segment of its own is answered whole: the network
thread waits for the size its frame announces, to the byte. Found by mutation testing (session
2225a17's 00289: the frame held complete one byte short, so the request was decoded without its
last byte and the connection closed as malformed)."""

import socket
import struct

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.properties.waiting import wait_until


def answered_correlation_id(sock) -> int:
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    return struct.unpack_from(">i", sock.recv(size, socket.MSG_WAITALL))[0]


def buffered(server) -> int:
    """The bytes the server's network threads hold of requests not yet whole."""
    return sum(len(c.inbuf) for thread in server.network_threads
               for c in list(thread.connections.values()))


def test_a_request_whose_last_byte_comes_late_is_answered(broker):
    frame = wire.encode_request(7, "split", build(wire.request_class(18, 3), {
        "client_software_name": "split", "client_software_version": "1"}))
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(frame[:-1])
        wait_until(lambda: buffered(broker) == len(frame) - 1,
                   what="the broker holding all but the frame's last byte")
        sock.sendall(frame[-1:])
        assert answered_correlation_id(sock) == 7
