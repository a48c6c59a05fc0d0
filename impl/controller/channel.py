"""The broker <-> controller channel: size-prefixed JSON messages over TCP on 127.0.0.1.

A deliberate simplification (see the package docstring): KRaft uses Kafka protocol APIs
(BrokerRegistration, BrokerHeartbeat, AlterPartition, metadata log fetches). Here a broker
sends register / heartbeat / alter_isr / create_topic / ...; every answer may carry the newest
metadata image, so heartbeats double as the push channel. Messages that queued up while the
broker waited go as one {"type": "batch", "messages": [...]} (at most BATCH_MAX_MESSAGES, config.py), answered by
{"answers": [...]} with one metadata image.
"""

from __future__ import annotations

import json
import socket
import struct

from kafkaref.impl.controller.config import MESSAGE_MAX_BYTES

SIZE = struct.Struct(">i")


def send_message(sock: socket.socket, message: dict) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    sock.sendall(SIZE.pack(len(data)) + data)


def recv_message(sock: socket.socket) -> dict | None:
    """The next message, or None when the peer closed the connection."""
    header = _exactly(sock, 4)
    if header is None:
        return None
    (size,) = SIZE.unpack(header)
    if size < 0 or size > MESSAGE_MAX_BYTES:
        raise ValueError(f"control message size {size}")
    data = _exactly(sock, size)
    if data is None:
        return None
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("control message is not an object")
    return message


def _exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, remaining = [], n
    while remaining:
        chunk = sock.recv(remaining)
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
