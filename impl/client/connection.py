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


class ConnectionClosed(ConnectionError):
    pass


def parse_address(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad address {address!r}, expected HOST:PORT")
    return host, int(port)


class KafkaConnection:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0,
                 client_id: str = "kafkaref"):
        self.host, self.port, self.client_id = host, port, client_id
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = itertools.count(1)

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
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        self.sock.sendall(wire.encode_request(correlation_id, self.client_id, request))
        return correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int):
        """The decoded body of the next response, which must answer correlation_id."""
        payload = self._recv_frame()
        try:
            got, body = wire.decode_response(api_key, version, payload)
        except Exception as exc:  # noqa: BLE001 -- kio raises KeyError, ValueError, ...
            raise ConnectionClosed(f"undecodable response: {exc!r}") from exc
        if got != correlation_id:
            raise ConnectionClosed(f"correlation id {got}, expected {correlation_id}")
        return body

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def _recv_frame(self) -> bytes:
        (size,) = SIZE.unpack(self._exactly(4))
        if size < 0 or size > RESPONSE_BYTES_MAX:
            raise ConnectionClosed(f"response size {size}")
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        chunks, remaining = [], n
        while remaining:
            chunk = self.sock.recv(min(remaining, 1 << 20))
            if not chunk:
                raise ConnectionClosed("connection closed by broker")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)


__all__ = ["KafkaConnection", "ConnectionClosed", "parse_address", "wire"]
