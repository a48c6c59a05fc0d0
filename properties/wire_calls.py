"""One request through an in-process core broker exactly as the server would carry it: the
request encoded and decoded from its frame, handled, the response encoded and decoded back.
Used by the core tests that speak to a Broker without sockets."""

from __future__ import annotations

from kio.index import load_request_schema

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build

CORRELATION_ID = 42


def call(broker, api_key: int, version: int, values: dict, client_id: str = "test"):
    """The decoded response body; None when the broker answered "send nothing" (acks=0);
    "pending" when it has not answered yet (the request waits in a purgatory)."""
    request = build(load_request_schema(api_key, version), values)
    decoded = wire.decode_request(wire.encode_request(CORRELATION_ID, client_id, request)[4:])
    out = []
    broker.handle(decoded, out.append)
    if not out or out[0] is None:
        return out[0] if out else "pending"
    frame = wire.encode_response(decoded.correlation_id, out[0])
    correlation_id, body = wire.decode_response(api_key, version, frame[4:])
    assert correlation_id == CORRELATION_ID
    return body
