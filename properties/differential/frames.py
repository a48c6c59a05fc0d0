"""Frames the differential machine builds byte by byte: ApiVersions at versions no codec knows
(a client newer than the broker asks that way; the broker answers UNSUPPORTED_VERSION in the v0
layout) and frames that are not well-formed requests at all (the broker closes the connection,
or answers: either is compared).

A `malformed` step names its frame: MALFORMED below says what each one is.
"""

from __future__ import annotations

import struct

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build

SIZE = struct.Struct(">i")
HEADER = struct.Struct(">hhi")  # api key, version, correlation id
CORRELATION_ID = 7
CLIENT = b"kafkaref-differential"
FLEXIBLE_API_VERSIONS = 3

MALFORMED = {
    "short": "a 3-byte frame: shorter than any request header",
    "unknown_api": "a well-formed header naming api key 1000",
    "bad_version": "Produce at version 200",
    "below_minimum": "Fetch v3, below both brokers' oldest Fetch",
    "garbage_body": "a Metadata v9 header followed by 5 bytes that are not its body",
    "truncated_body": "a CreateTopics v4 request cut 3 bytes short (the size says so)",
    "trailing_bytes": "a ListOffsets v5 request followed by 3 extra bytes",
    "negative_size": "a frame size of -1",
    "zero_size": "a frame size of 0",
}


def frame_for(step, endpoint) -> tuple[bytes, tuple[int, int] | None]:
    """(the bytes to send, (api key, version) to decode the answer as, or None: its size)."""
    if step.kind == "api_versions":
        return api_versions_frame(step.version), _api_versions_layout(step.version, endpoint)
    return malformed_frame(step.args["frame"]), answer_layout(step.args["frame"])


def _api_versions_layout(version: int, endpoint) -> tuple[int, int]:
    low, high = endpoint.versions.get(18, (0, 0))
    return (18, version) if low <= version <= high else (18, 0)


def _header(api_key: int, version: int, flexible: bool) -> bytes:
    client = SIZE.pack(len(CLIENT))[2:] + CLIENT
    return HEADER.pack(api_key, version, CORRELATION_ID) + client + (b"\x00" if flexible else b"")


def _framed(payload: bytes) -> bytes:
    return SIZE.pack(len(payload)) + payload


def _compact(text: bytes) -> bytes:
    return bytes([len(text) + 1]) + text


def api_versions_frame(version: int) -> bytes:
    flexible = version >= FLEXIBLE_API_VERSIONS
    body = (_compact(b"kafkaref-differential") + _compact(b"1") + b"\x00") if flexible else b""
    return _framed(_header(18, version, flexible) + body)


def _request(api_key: int, version: int, values: dict) -> bytes:
    return wire.encode_request(CORRELATION_ID, CLIENT.decode(),
                               build(wire.request_class(api_key, version), values))


def malformed_frame(name: str) -> bytes:
    if name == "short":
        return _framed(b"\x00\x03\x00")
    if name == "unknown_api":
        return _framed(_header(1000, 0, False))
    if name == "bad_version":
        return _framed(_header(0, 200, True) + b"\x00" * 8)
    if name == "below_minimum":
        return _framed(_header(1, 3, False) + b"\x00" * 16)
    if name == "garbage_body":
        return _framed(_header(3, 9, True) + b"\xff\xfe\xfd\xfc\xfb")
    if name == "truncated_body":
        whole = _request(19, 4, {"topics": [{"name": "never-created", "num_partitions": 1,
                                             "replication_factor": 1}],
                                 "timeout": 1000, "validate_only": True})
        return _framed(whole[4:-3])
    if name == "trailing_bytes":
        whole = _request(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": []})
        return _framed(whole[4:] + b"\x00\x00\x00")
    if name == "negative_size":
        return SIZE.pack(-1) + b"\x00" * 8
    if name == "zero_size":
        return SIZE.pack(0)
    raise ValueError(f"no malformed frame {name!r} (known: {', '.join(MALFORMED)})")


def answer_layout(name: str) -> tuple[int, int] | None:
    """How to read an answer to a malformed frame, should the broker answer at all."""
    return {"trailing_bytes": (2, 5)}.get(name)
