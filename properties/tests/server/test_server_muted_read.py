"""A muted connection is not read: while its request is in the broker, a network thread only
writes to it, even when the socket is also readable -- the bytes a client pipelines stay in the
kernel's buffer (the memory bound, and Kafka's mute: no read until the response is sent). Found
by mutation testing (session 2225a17's 00242: `mask & EVENT_READ` to `|`, which read on every
write event, passed the server layer)."""

import selectors
import socket
import threading

from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.network_thread import Connection, NetworkThread
from kafkaref.impl.server.request_queue import RequestQueue


def test_a_write_event_on_a_muted_connection_reads_nothing():
    thread = NetworkThread(0, ServerConfig(), RequestQueue(10), threading.Event())
    broker_side, client = socket.socketpair()
    broker_side.setblocking(False)
    try:
        connection = Connection(1, broker_side)
        thread.connections[connection.id] = connection
        connection.muted = True  # its request is in the broker; the answer is half sent
        connection.outbuf.append(memoryview(b"\x00" * (4 << 20)))  # more than the socket takes
        client.sendall(b"\x00\x00\x00\x05hello")  # a request pipelined behind it
        thread._serve(connection, selectors.EVENT_WRITE)
        assert connection.muted and connection.outbuf  # still writing
        assert connection.inbuf == b""
        assert client.recv(1) == b"\x00"  # the answer's bytes flow
        assert broker_side.recv(64, socket.MSG_PEEK) == b"\x00\x00\x00\x05hello"
    finally:
        broker_side.close()
        client.close()
        thread.selector.close()
        thread._wake_r.close()
        thread._wake_w.close()
