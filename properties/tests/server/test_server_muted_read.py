"""A muted connection is not read: while its request is in the broker, a network thread only
writes to it, even when the socket is also readable -- the bytes a client pipelines stay in the
kernel's buffer (the memory bound, and Kafka's mute: no read until the response is sent). Found
by mutation testing (session 2225a17's 00242: `mask & EVENT_READ` to `|`, which read on every
write event, passed the server layer; 00315: a muted connection watched for reads too; 00362:
the large-frame buffers' budget never reached)."""

import selectors
import socket
import threading

import pytest

from kafkaref.impl.server.config import FRAME_BUFFERS_MAX_BYTES, ServerConfig
from kafkaref.impl.server.network_thread import Connection, NetworkThread
from kafkaref.impl.server.request_queue import RequestQueue


@pytest.fixture
def thread():
    """A network thread, never started: its methods are called by the test."""
    network_thread = NetworkThread(0, ServerConfig(), RequestQueue(10), threading.Event())
    yield network_thread
    network_thread.selector.close()
    network_thread._wake_r.close()
    network_thread._wake_w.close()


@pytest.fixture
def sockets():
    """(the broker's end, the client's end) of a connected pair, the broker's non-blocking."""
    broker_side, client = socket.socketpair()
    broker_side.setblocking(False)
    yield broker_side, client
    broker_side.close()
    client.close()


def test_a_write_event_on_a_muted_connection_reads_nothing(thread, sockets):
    broker_side, client = sockets
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


def test_a_muted_connection_is_watched_for_writes_only_and_not_at_all_when_idle(thread, sockets):
    broker_side, _ = sockets
    connection = Connection(1, broker_side)
    thread._interest(connection)
    assert thread.selector.get_key(broker_side).events == selectors.EVENT_READ
    connection.muted = True
    connection.outbuf.append(memoryview(b"answer"))
    thread._interest(connection)
    assert thread.selector.get_key(broker_side).events == selectors.EVENT_WRITE
    connection.outbuf.clear()
    thread._interest(connection)
    assert broker_side not in thread.selector.get_map()


def test_large_frame_buffers_stay_within_their_budget(thread, sockets):
    """Each connection starting a large frame gets a buffer of the frame's size while the
    thread's buffers stay within FRAME_BUFFERS_MAX_BYTES; past it, the frame is read the
    ordinary way (into the connection's input buffer, bounded by the frame's size)."""
    size, given = 10 << 20, []
    for i in range(FRAME_BUFFERS_MAX_BYTES // size + 2):
        connection = Connection(i, sockets[0])
        connection.inbuf += size.to_bytes(4, "big") + b"\x00" * 64
        thread._maybe_start_frame(connection)
        given.append(connection.frame is not None)
    assert given == [True] * (FRAME_BUFFERS_MAX_BYTES // size) + [False, False]
    assert thread._frame_bytes <= FRAME_BUFFERS_MAX_BYTES
    # and the budget is one the fast path is for: several large produces at once take it (a
    # budget shrunk below one frame would pass the lines above: the sample on 9df4313's 00373)
    assert given[:4] == [True] * 4
