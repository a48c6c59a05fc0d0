"""Network threads: sockets, framing, muting, backpressure.

Each network thread owns its connections (handed over by the Acceptor, acceptor.py) and a
selector. After a whole request frame is read the connection is MUTED (no further reads) until
its response has been written (or, for acks=0, until the request was handled): per-connection
ordering, response_queue.py. Requests go to the one bounded request queue (request_queue.py); a
full queue blocks the network thread (backpressure on every connection it owns). Responses come
back on the thread's own ResponseQueue (response_queue.py), which only this thread drains and
writes to the sockets. A malformed frame (bad size, undecodable, unsupported API) closes that
connection only.
"""

from __future__ import annotations

import collections
import logging
import queue
import selectors
import socket
import struct
import threading
import time

from kafkaref.impl.protocol import wire
from kafkaref.impl.server.config import FRAME_BUFFERS_MAX_BYTES, LARGE_FRAME_BYTES, ServerConfig
from kafkaref.impl.server.request_queue import QueuedRequest, RequestQueue
from kafkaref.impl.server.response_queue import (
    CLOSE,
    ResponseQueue,
    discard,
    queue_parts,
    release_unsent,
    write_pending,
)

log = logging.getLogger(__name__)
SIZE = struct.Struct(">i")


class Connection:
    __slots__ = ("id", "sock", "inbuf", "outbuf", "muted", "last_active", "peer", "host",
                 "frame", "frame_got", "frame_buffer", "lent_buffer", "events")

    def __init__(self, connection_id: int, sock: socket.socket):
        self.id, self.sock = connection_id, sock
        self.inbuf = bytearray()
        self.outbuf: collections.deque = collections.deque()  # memoryviews and FileParts
        self.muted = False
        self.events = 0  # what the selector watches for; 0 = not registered
        self.last_active = time.monotonic()
        self.frame: memoryview | None = None  # a large frame's payload being received
        self.frame_got = 0
        self.frame_buffer: bytearray | None = None  # kept for the next frame of the same size
        # The buffer of the request inside the broker: its records are views of it (see
        # impl/protocol/produce_request.py), so no frame is received into it until the
        # response has been written; then it is kept again as frame_buffer.
        self.lent_buffer: bytearray | None = None
        try:
            self.peer = sock.getpeername()
        except OSError:
            self.peer = None
        # The peer's address as Kafka's RequestContext names it (InetAddress.toString of an
        # address without a host name): what DescribeGroups answers as a member's client_host.
        self.host = f"/{self.peer[0]}" if self.peer else ""


class NetworkThread(threading.Thread):
    def __init__(self, index: int, config: ServerConfig, requests: RequestQueue,
                 stopping: threading.Event):
        super().__init__(name=f"kafkaref-network-{index}", daemon=True)
        self.index, self.config, self.requests, self.stopping = index, config, requests, stopping
        self.selector = selectors.DefaultSelector()
        self.new_connections: queue.SimpleQueue = queue.SimpleQueue()
        self.responses = ResponseQueue(self.wake)
        # True only while run() may block in select: wake() writes to the socket pair then and
        # only then (see wake and _wait_for_events).
        self._selecting = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self.connections: dict[int, Connection] = {}
        self._next_id = 0
        self._frame_bytes = 0  # bytes held in Connection.frame buffers (capped)

    # -- called from other threads ------------------------------------------------------------
    def add_connection(self, sock: socket.socket) -> None:
        self.new_connections.put(sock)
        self.wake()

    def send_response(self, connection_id: int, frame) -> None:
        """frame: bytes to write, a list of parts, None (nothing to send: unmute), or CLOSE."""
        self.responses.put(connection_id, frame)

    def wake(self) -> None:
        """Called after putting a response or connection on this thread's queues. A thread
        that is not in select will look at its queues before it next blocks, so only a thread
        in select needs the byte: a send per response was 17% of an I/O thread's samples in
        a profile of acks=1 produce (a syscall, and the GIL to win back after it)."""
        if not self._selecting:
            return
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # already awake (buffer full) or shutting down

    # -- the thread ---------------------------------------------------------------------------
    def run(self) -> None:
        timeout = self.config.select_timeout_ms / 1000
        try:
            while not self.stopping.is_set():
                for key, mask in self._wait_for_events(timeout):
                    if key.data is None:
                        self._drain_wake()
                        continue
                    self._serve(key.data, mask)
                self._accept_new()
                self._process_responses()
                self._close_idle()
        finally:
            for connection in list(self.connections.values()):
                self._close(connection)
            self.selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _wait_for_events(self, timeout: float) -> list:
        """select(), not blocking when a response or connection is already queued. The flag
        is raised before the queues are looked at, and a writer wakes us after queueing: either
        it sees the flag (and sends the byte) or we see its item (and do not block)."""
        self._selecting = True
        try:
            queued = self.responses.pending() or not self.new_connections.empty()
            return self.selector.select(0 if queued else timeout)
        finally:
            self._selecting = False

    def _serve(self, connection: Connection, mask: int) -> None:
        try:
            if mask & selectors.EVENT_READ:
                self._read(connection)
            if mask & selectors.EVENT_WRITE and connection.id in self.connections:
                self._write(connection)
        except Exception:  # noqa: BLE001 -- a bug on one connection closes that connection
            log.exception("closing connection %s after an unexpected error", connection.id)
            self._close(connection)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _accept_new(self) -> None:
        while True:
            try:
                sock = self.new_connections.get_nowait()
            except queue.Empty:
                return
            if len(self.connections) >= self.config.max_connections:
                sock.close()  # over the limit: refuse rather than grow without bound
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._next_id += 1
            connection = Connection(self._next_id, sock)
            self.connections[connection.id] = connection
            self.selector.register(sock, selectors.EVENT_READ, connection)
            connection.events = selectors.EVENT_READ

    def _interest(self, connection: Connection) -> None:
        """Watch the socket for what the connection needs now: reads unless muted, writes while
        output is pending; a muted idle connection is not registered at all. The registration is
        tracked on the connection: selectors.modify on an unregistered socket raises a KeyError
        whose message formats the socket, which cost more than the rest of the call."""
        events = 0 if connection.muted else selectors.EVENT_READ
        if connection.outbuf:
            events |= selectors.EVENT_WRITE
        if events == connection.events:
            return
        if not events:
            self.selector.unregister(connection.sock)
        elif connection.events:
            self.selector.modify(connection.sock, events, connection)
        else:
            self.selector.register(connection.sock, events, connection)
        connection.events = events

    def _read(self, connection: Connection) -> None:
        if connection.frame is not None:
            self._read_into_frame(connection)
            return
        try:
            data = connection.sock.recv(self.config.recv_bytes)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(connection)
            return
        if not data:
            self._close(connection)
            return
        connection.last_active = time.monotonic()
        connection.inbuf += data
        self._after_input(connection)

    def _after_input(self, connection: Connection) -> None:
        self._maybe_dispatch(connection)
        if connection.id in self.connections and connection.frame is None:
            self._maybe_start_frame(connection)

    def _maybe_start_frame(self, connection: Connection) -> None:
        """If unmuted and the buffered bytes begin a large frame not yet whole: move them into
        a buffer of the frame's size, which the rest of the frame is received into."""
        inbuf = connection.inbuf
        if connection.muted or len(inbuf) < 4:
            return
        (size,) = SIZE.unpack_from(inbuf, 0)
        held = len(connection.frame_buffer) if connection.frame_buffer is not None else 0
        if not LARGE_FRAME_BYTES <= size <= self.config.socket_request_max_bytes or (
                len(inbuf) >= 4 + size
                or self._frame_bytes - held + size > FRAME_BUFFERS_MAX_BYTES):
            return
        buffer = connection.frame_buffer
        if buffer is None or not size <= len(buffer) <= 2 * size:  # else reuse it (no faults)
            self._frame_bytes += size - held
            buffer = connection.frame_buffer = bytearray(size)
        frame = memoryview(buffer)[:size]
        have = len(inbuf) - 4
        with memoryview(inbuf) as view:
            frame[:have] = view[4:]
        inbuf.clear()
        connection.frame, connection.frame_got = frame, have

    def _read_into_frame(self, connection: Connection) -> None:
        frame = connection.frame
        view = frame[connection.frame_got :]
        try:  # never past the frame's end: what follows is read by the ordinary path
            got = connection.sock.recv_into(view)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(connection)
            return
        finally:
            view.release()
        if not got:
            self._close(connection)
            return
        connection.last_active = time.monotonic()
        connection.frame_got += got
        if connection.frame_got == len(frame):
            connection.frame = None
            self._lend(connection)
            with frame, frame.toreadonly() as payload:  # kio reads read-only buffers only
                self._dispatch(connection, payload)

    def _maybe_dispatch(self, connection: Connection) -> None:
        """If unmuted and a whole frame is buffered: decode it, mute, queue it."""
        if connection.muted or len(connection.inbuf) < 4:
            return
        (size,) = SIZE.unpack_from(connection.inbuf, 0)
        if size < 8 or size > self.config.socket_request_max_bytes:
            self._malformed(connection, f"frame size {size}")
            return
        if len(connection.inbuf) < 4 + size:
            return
        with memoryview(connection.inbuf) as view:
            payload = bytes(view[4 : 4 + size])
        del connection.inbuf[: 4 + size]
        self._dispatch(connection, payload)

    def _dispatch(self, connection: Connection, payload) -> None:
        """Decode a whole request payload, mute the connection, queue the request."""
        try:
            request = wire.decode_request(payload, connection.host)
        except wire.MalformedRequest as exc:
            self._malformed(connection, str(exc))
            return
        connection.muted = self.config.mutes()
        self._interest(connection)
        item = QueuedRequest(self.index, connection.id, request, int(time.monotonic() * 1000))
        self.requests.put(item, self.stopping)  # blocks when full: backpressure, bounded by stop
        if not connection.muted:
            self._after_input(connection)  # mutant M9: the next frame goes in at once

    def _malformed(self, connection: Connection, why: str) -> None:
        log.info("closing connection %s from %s: %s", connection.id, connection.peer, why)
        self._close(connection)

    def _process_responses(self) -> None:
        for connection_id, frame in self.responses.drain():
            connection = self.connections.get(connection_id)
            if connection is None:  # closed meanwhile; the response is dropped
                discard(frame)
                continue
            try:
                self._deliver(connection, frame)
            except Exception:  # noqa: BLE001 -- one connection's failure stays its own
                log.exception("closing connection %s after an unexpected error", connection.id)
                self._close(connection)

    def _deliver(self, connection: Connection, frame) -> None:
        """frame: bytes, a list of parts (bytes and storage FetchSlices), None or CLOSE."""
        if frame is CLOSE:
            self._close(connection)
        elif frame is None:
            self._unmute(connection)
        else:
            queue_parts(connection.outbuf, frame)
            self._write(connection)

    def _write(self, connection: Connection) -> None:
        outbuf = connection.outbuf
        try:
            write_pending(connection.sock, outbuf)
        except OSError:
            self._close(connection)
            return
        connection.last_active = time.monotonic()
        if outbuf:
            self._interest(connection)
        else:
            self._unmute(connection)

    def _unmute(self, connection: Connection) -> None:
        connection.muted = False
        self._take_back(connection)
        self._interest(connection)
        self._after_input(connection)  # a pipelined request may already be buffered

    def _lend(self, connection: Connection) -> None:
        """A whole large frame goes to the broker with its buffer: the request's records are
        views of it, so no frame may be received into it until the response is written."""
        if connection.lent_buffer is not None:  # mutant M9: another request still holds one
            self._frame_bytes -= len(connection.lent_buffer)
        connection.lent_buffer, connection.frame_buffer = connection.frame_buffer, None

    def _take_back(self, connection: Connection) -> None:
        """The answered request's buffer is free: keep it for the next large frame (or drop it,
        if a frame arrived meanwhile, with mutant M9's unmuted connections, and got another)."""
        lent, connection.lent_buffer = connection.lent_buffer, None
        if lent is None:
            return
        if connection.frame_buffer is None:
            connection.frame_buffer = lent
        else:
            self._frame_bytes -= len(lent)

    def _close_idle(self) -> None:
        limit = self.config.connections_max_idle_ms / 1000
        now = time.monotonic()
        for connection in list(self.connections.values()):
            if not connection.muted and now - connection.last_active > limit:
                self._close(connection)

    def _close(self, connection: Connection) -> None:
        if self.connections.pop(connection.id, None) is None:
            return
        if connection.frame is not None:
            connection.frame.release()
        for held in (connection.frame_buffer, connection.lent_buffer):
            if held is not None:
                self._frame_bytes -= len(held)
        connection.frame = connection.frame_buffer = connection.lent_buffer = None
        release_unsent(connection.outbuf)
        if connection.events:
            try:
                self.selector.unregister(connection.sock)
            except (KeyError, ValueError):
                pass
            connection.events = 0
        try:
            connection.sock.close()
        except OSError:
            pass
