"""A blocking Kafka protocol connection: send a kio request, get the kio response back.

Used by the replica fetchers, the `kafkaref topics/produce/consume` commands and the benchmarks.
send() keeps one request in flight; send_request() / receive() let a caller pipeline requests
(the broker mutes the connection while one is inside, so they are handled and answered in order).
"""

from __future__ import annotations

import itertools
import socket
import struct

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build

SIZE = struct.Struct(">i")
RESPONSE_BYTES_MAX = 512 * 1024 * 1024
# A connection receives responses up to this size into one buffer it keeps (a fresh 1 MiB
# bytearray per fetch is zero-filled and, on these VMs, page-faulted in: ~5% of a follower's
# CPU); bigger ones get a buffer of their own, so a rare huge response is not held for ever.
KEPT_BUFFER_MAX = 16 * 1024 * 1024


_PRODUCE_HEAD = struct.Struct(">ihhih")  # size, api key, version, correlation id, client id len
_PRODUCE_FIXED = struct.Struct(">hhiih")  # txn id (null), acks, timeout, 1 topic, name length
_PRODUCE_PARTITION = struct.Struct(">iii")  # 1 partition, index, records length


def produce_prefix(version: int, correlation_id: int, client_id: str | None, acks: int,
                   timeout_ms: int, topic: str, partition: int, records_size: int) -> bytes:
    """Everything of a one-partition Produce request (v3-v8: non-flexible, header v1) that
    comes before the batch, its size prefix included."""
    if not 3 <= version <= 8:
        raise ValueError(f"hand-built Produce supports v3-v8, not v{version}")
    client = b"" if client_id is None else client_id.encode("utf-8")
    name = topic.encode("utf-8")
    size = (10 + len(client) + _PRODUCE_FIXED.size + len(name) + _PRODUCE_PARTITION.size
            + records_size)
    return b"".join((
        _PRODUCE_HEAD.pack(size, 0, version, correlation_id,
                           -1 if client_id is None else len(client)),
        client,
        _PRODUCE_FIXED.pack(-1, acks, timeout_ms, 1, len(name)),
        name,
        _PRODUCE_PARTITION.pack(1, partition, records_size),
    ))


def _send_all(sock: socket.socket, buffers: list) -> None:
    """sendmsg until every byte of buffers is out (sendmsg may write only part)."""
    views = [memoryview(b).cast("B") for b in buffers if len(b)]
    while views:
        sent = sock.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if sent:
            views[0] = views[0][sent:]


class ConnectionClosed(ConnectionError):
    pass


def parse_address(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad address {address!r}, expected HOST:PORT")
    return host, int(port)


class KafkaConnection:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0,
                 client_id: str = "kafkaref", response_bytes_max: int = RESPONSE_BYTES_MAX):
        self.host, self.port, self.client_id = host, port, client_id
        self.response_bytes_max = response_bytes_max
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = itertools.count(1)
        self._buffer = bytearray()  # reused by receive(): see KEPT_BUFFER_MAX

    @classmethod
    def to(cls, address: str, **kwargs) -> KafkaConnection:
        host, port = parse_address(address)
        return cls(host, port, **kwargs)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, api_key: int, version: int, values: dict, expect_response: bool = True):
        """Send one request built from values; return the decoded response body (or None)."""
        correlation_id = self.send_request(api_key, version, values)
        if not expect_response:
            return None
        return self.receive(api_key, version, correlation_id)

    def send_request(self, api_key: int, version: int, values: dict) -> int:
        """Send one request without waiting; its correlation id. Responses come back in request
        order (the broker mutes a connection while a request is inside), so a caller pipelining
        requests calls receive() for them in the order it sent them."""
        request = build(wire.request_class(api_key, version), values)
        correlation_id = self.next_correlation_id()
        self.sock.sendall(wire.encode_request(correlation_id, self.client_id, request))
        return correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int):
        """The decoded body of the next response, which must answer correlation_id. The frame
        is received into the connection's kept buffer: kio copies what it decodes (records
        included), so nothing returned refers to it."""
        payload = self._recv_frame()
        try:
            got, body = wire.decode_response(api_key, version, payload)
        except Exception as exc:  # noqa: BLE001 -- kio raises KeyError, ValueError, ...
            raise ConnectionClosed(f"undecodable response: {exc!r}") from exc
        if got != correlation_id:
            raise ConnectionClosed(f"correlation id {got}, expected {correlation_id}")
        return body

    def send_produce_request(self, version: int, acks: int, timeout_ms: int, topic: str,
                             partition: int, records) -> int:
        """Send a Produce request for one partition's batch without waiting; its correlation
        id. The same bytes as send_request(0, version, ...) builds with kio (tested), but the
        batch goes to the socket as it is (sendmsg of prefix + batch): kio copied a 1 MiB batch
        about three times, ~1 ms per request or 1 us per 1 KiB record."""
        correlation_id = self.next_correlation_id()
        prefix = produce_prefix(version, correlation_id, self.client_id, acks, timeout_ms,
                                topic, partition, len(records))
        _send_all(self.sock, [prefix, records])
        return correlation_id

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def next_correlation_id(self) -> int:
        """A correlation id for a request the caller encodes itself (send_raw)."""
        return next(self._correlation) & 0x7FFFFFFF

    def receive_payload(self) -> memoryview:
        """The next response's payload, undecoded (for callers with their own decoder): a
        read-only view of the kept buffer, valid until the next receive on this connection."""
        return self._recv_frame()

    def _recv_frame(self) -> memoryview:
        """The next frame's payload, in the kept buffer when it fits (valid until the next)."""
        size = _frame_size(self.sock, self.response_bytes_max)
        if size > KEPT_BUFFER_MAX:
            return _exactly(self.sock, size)
        if len(self._buffer) < size:
            self._buffer = bytearray(size)
        return _exactly(self.sock, size, self._buffer)


def receive_frame(sock: socket.socket, limit: int = RESPONSE_BYTES_MAX) -> memoryview:
    """The next size-prefixed frame's payload, received with recv_into straight into one buffer
    (a 1 MiB recv per call and a join copied every fetched byte twice more); a read-only view
    of it, which kio decodes in place. A size below 0 or above limit is ConnectionClosed."""
    return _exactly(sock, _frame_size(sock, limit))


def _frame_size(sock: socket.socket, limit: int) -> int:
    head = _exactly(sock, 4)
    (size,) = SIZE.unpack(head)
    if size < 0 or size > limit:
        raise ConnectionClosed(_not_a_frame(bytes(head), size, sock))
    return size


def _not_a_frame(head: bytes, size: int, sock: socket.socket) -> str:
    """Why a size prefix makes no sense, in words: a server speaking another protocol answers
    text, whose first four bytes read as a huge size ("HTTP" is 1213486160)."""
    try:
        peer = sock.getpeername()
    except OSError:
        peer = None
    # an address pair for TCP; a Unix socket's peer (a socketpair's, in tests) is a path or ""
    where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "the server"
    if head.isascii() and head.decode().isprintable():
        return (f"{where} answered {head.decode()!r}..., not a Kafka response: is it a Kafka "
                f"broker's address?" + (" (that is an HTTP server)" if head == b"HTTP" else ""))
    return f"{where} answered a response of {size} bytes, not a Kafka response size"


def _exactly(sock: socket.socket, n: int, buffer: bytearray | None = None) -> memoryview:
    """n bytes from sock, read-only, in buffer (its first n bytes) or a new one."""
    buffer = bytearray(n) if buffer is None else buffer
    view, got = memoryview(buffer)[:n], 0
    while got < n:
        count = sock.recv_into(view[got:], n - got)
        if not count:
            raise ConnectionClosed("connection closed by broker")
        got += count
    return view.toreadonly()


__all__ = ["KafkaConnection", "ConnectionClosed", "parse_address", "receive_frame", "wire"]
