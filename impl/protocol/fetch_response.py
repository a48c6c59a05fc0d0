"""Fetch responses (v4-v18) encoded straight from the broker's answers, without kio objects.

Every follower fetch names every partition its leader leads, idle ones included, and is
answered twice over (read when it arrives, read again when it completes). Through kio (dicts,
then dataclasses, then its generic writer) each partition entry cost ~20 us, most of a fetch's
CPU on the leader; here it is a few struct packs. The bytes are exactly those kio writes for the
same response (property-tested against kio, version by version), so kio stays the reference.

The result is a list of frame parts: bytes, and each non-empty records value as it was given
(bytes, or a file range the caller sends with sendfile), so records are never copied here. The
core answers a Fetch with a FetchAnswer (values); the server encodes it here, through
wire.encode_response_parts like every other response.

Versions: v12 is the first flexible one (compact lengths, tagged fields: the diverging epoch and
the current leader per partition); from v13 a topic is named by its id (KIP-516); from v16 the
response's tagged fields may carry the endpoints of the leaders it names (KIP-951).
"""

from __future__ import annotations

import struct
import uuid
from typing import NamedTuple

from kafkaref.impl.protocol.varint import encode_unsigned

FLEXIBLE_FROM = 12  # Fetch v12 is the first flexible version (compact fields, tagged fields)
TOPIC_IDS_FROM, NODE_ENDPOINTS_FROM, LAST_VERSION = 13, 16, 18
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
_ERROR_SESSION = struct.Struct(">hi")
_PARTITION = struct.Struct(">ihqq")  # index, error code, high watermark, last stable offset
_I64 = struct.Struct(">q")
# Partition tagged fields: tag 0 (diverging epoch), 13 bytes: epoch int32, end offset int64, no
# tags; tag 1 (current leader), 9 bytes: leader id int32, leader epoch int32, no tags.
_DIVERGING = struct.Struct(">BBiqB")
_CURRENT_LEADER = struct.Struct(">BBiiB")
_NODE = struct.Struct(">i")
# aborted_transactions, never any here: null, or an empty array (read_committed, and the
# partitions a request names that do not exist: what Kafka sends, see impl/core/broker.py fetch_answer_fields)
_NULL_ARRAY = {False: _I32.pack(-1), True: b"\x00"}
_EMPTY_ARRAY = {False: _I32.pack(0), True: b"\x01"}


class PartitionAnswer(NamedTuple):
    index: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: object = None  # None, bytes, or a sized object sent as it is (a file range)
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset), v12+
    current_leader: tuple[int, int] | None = None  # (leader id, leader epoch), v12+ (KIP-951)
    last_stable_offset: int | None = None  # None: the high watermark (no transactions)
    aborted_empty: bool = False  # aborted_transactions: an empty array rather than null


class NodeEndpoint(NamedTuple):
    """A broker's address in the response's node_endpoints (v16+, KIP-951)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class FetchAnswer(NamedTuple):
    """A Fetch response as values: what the core answers a Fetch with. The server encodes it
    (wire.encode_response_parts, where every response is encoded) with encode_fetch_response."""

    api_version: int
    topics: list[tuple[str | uuid.UUID, list[PartitionAnswer]]]  # the topic as the version
    error_code: int = 0                                          # names it: id from v13
    session_id: int = 0
    node_endpoints: tuple[NodeEndpoint, ...] = ()


def encode_fetch_response(version: int, correlation_id: int,
                          topics: list[tuple[str | uuid.UUID, list[PartitionAnswer]]],
                          error_code: int = 0, session_id: int = 0,
                          node_endpoints: tuple[NodeEndpoint, ...] = ()) -> list:
    """The whole frame, size prefix first, as parts; no aborted transactions (null or an
    empty array), no preferred read replica. Each topic is its
    name before v13, its id (a uuid.UUID) from v13."""
    if not 4 <= version <= LAST_VERSION:
        raise ValueError(f"fetch response v{version} is not encoded here")
    flexible = version >= FLEXIBLE_FROM
    parts: list = []
    out = bytearray(b"\0\0\0\0")
    out += _I32.pack(correlation_id)
    if flexible:
        out.append(0)  # response header v1: no tagged fields
    out += _I32.pack(0)  # throttle time
    if version >= 7:
        out += _ERROR_SESSION.pack(error_code, session_id)
    _length(out, len(topics), flexible)
    by_id = version >= TOPIC_IDS_FROM
    for topic, partitions in topics:
        if by_id:
            out += topic.bytes
        else:
            encoded = topic.encode()
            _length(out, len(encoded), flexible, legacy=_I16)
            out += encoded
        _length(out, len(partitions), flexible)
        for p in partitions:
            stable = p.high_watermark if p.last_stable_offset is None else p.last_stable_offset
            out += _PARTITION.pack(p.index, p.error_code, p.high_watermark, stable)
            if version >= 5:
                out += _I64.pack(p.log_start_offset)
            out += (_EMPTY_ARRAY if p.aborted_empty else _NULL_ARRAY)[flexible]
            if version >= 11:
                out += _I32.pack(-1)  # preferred read replica: none
            out = _records(out, p.records, flexible, parts)
            if flexible:
                _partition_tags(out, p)
        if flexible:
            out.append(0)  # topic: no tagged fields
    if flexible:
        _response_tags(out, node_endpoints if version >= NODE_ENDPOINTS_FROM else ())
    parts.append(out)
    size = sum(len(part) for part in parts) - 4
    _I32.pack_into(parts[0], 0, size)
    return parts


def _partition_tags(out: bytearray, p: PartitionAnswer) -> None:
    """A partition's tagged fields, in tag order, each only when set (as kio writes them)."""
    diverging, leader = p.diverging_epoch, p.current_leader
    has_diverging = diverging is not None and diverging != (-1, -1)
    has_leader = leader is not None and leader != (-1, -1)
    out.append(has_diverging + has_leader)
    if has_diverging:
        out += _DIVERGING.pack(0, 13, diverging[0], diverging[1], 0)
    if has_leader:
        out += _CURRENT_LEADER.pack(1, 9, leader[0], leader[1], 0)


def _response_tags(out: bytearray, node_endpoints: tuple[NodeEndpoint, ...]) -> None:
    """The response's tagged fields: node_endpoints (tag 0) when there are any."""
    if not node_endpoints:
        out.append(0)
        return
    field = bytearray()
    _length(field, len(node_endpoints), True)
    for node in node_endpoints:
        field += _NODE.pack(node.node_id)
        host = node.host.encode()
        _length(field, len(host), True)
        field += host
        field += _NODE.pack(node.port)
        if node.rack is None:
            field.append(0)
        else:
            rack = node.rack.encode()
            _length(field, len(rack), True)
            field += rack
        field.append(0)  # node: no tagged fields
    out += b"\x01\x00"  # one tagged field, tag 0
    out += encode_unsigned(len(field))
    out += field


def _length(out: bytearray, n: int, flexible: bool, legacy: struct.Struct = _I32) -> None:
    """An array or string length: unsigned varint n + 1 when flexible, else legacy."""
    out += encode_unsigned(n + 1) if flexible else legacy.pack(n)


def _records(out: bytearray, records, flexible: bool, parts: list) -> bytearray:
    """Write a nullable records field; a non-empty value becomes its own part (not copied), and
    the bytes after it go into a new bytearray, which is returned."""
    if records is None:
        out += b"\x00" if flexible else _I32.pack(-1)
        return out
    _length(out, len(records), flexible)
    if not len(records):
        return out
    parts.append(out)
    parts.append(records)
    return bytearray()
