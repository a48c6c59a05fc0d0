"""Fetch v12 as a replica fetcher speaks it: the request encoded and the response decoded by
hand, with the fetched records left in the receive buffer instead of copied.

A follower sends one fetch per round naming every partition it follows on that leader, and
gets up to a MiB of records back; through kio, building and encoding the request and decoding
the response (which copies the records) cost ~70 us of the follower's round, on the path every
acks=all produce waits for. The bytes and the decoded fields are kio's (property-tested against
kio), so kio stays the reference. Anything malformed raises MalformedFetchResponse.

Why v12 when the leader serves up to v18: it is the last version naming topics by name, which
is how replicas key their partitions, and the newer ones add nothing a kafkaref follower uses
(topic ids, KIP-903's broker epoch, KIP-951's leader hints: a follower learns its leader from
the controller). The compact fields are read with flexible.py, as produce_request.py reads them.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafkaref.impl.protocol import flexible
from kafkaref.impl.protocol.flexible import length as _length
from kafkaref.impl.protocol.flexible import skip_tags as _skip_tags
from kafkaref.impl.protocol.flexible import unsigned as _unsigned
from kafkaref.impl.protocol.varint import encode_unsigned

FETCH_API, VERSION = 1, 12
_HEAD = struct.Struct(">ihhih")  # size, api key, version, correlation id, client id length
_BODY = struct.Struct(">iiiibii")  # replica, max wait, min bytes, max bytes, isolation, session
_PARTITION = struct.Struct(">iiqiqiB")  # index, leader epoch, offset, last epoch, start, max, tags
_I32 = struct.Struct(">i")
_TOP = struct.Struct(">ihi")  # throttle time, error code, session id
_PARTITION_HEAD = struct.Struct(">ihqqq")  # index, error code, hw, last stable, log start
_EPOCH_END = struct.Struct(">iq")


class MalformedFetchResponse(ValueError):
    pass


class FetchPosition(NamedTuple):
    """One partition of a replica fetch request."""

    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    partition_max_bytes: int
    log_start_offset: int = -1  # the follower's: how far a DeleteRecords has reached


class FetchedPartition(NamedTuple):
    """One partition of a fetch response; records is a view of the receive buffer (valid until
    the connection's next receive) or None."""

    partition_index: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: memoryview | None
    diverging_epoch: tuple[int, int] | None  # (epoch, end offset) when the leader set it


def encode_fetch_request(correlation_id: int, client_id: str | None, replica_id: int,
                         max_wait_ms: int, min_bytes: int, max_bytes: int,
                         topics: list[tuple[str, list[FetchPosition]]]) -> bytes:
    """A whole Fetch v12 request frame (request header v2), size prefix included: no fetch
    session (id 0, epoch -1), read-uncommitted, no rack, nothing forgotten."""
    client = None if client_id is None else client_id.encode()
    out = bytearray(_HEAD.pack(0, FETCH_API, VERSION, correlation_id,
                               -1 if client is None else len(client)))
    out += client or b""
    out.append(0)  # request header tagged fields
    out += _BODY.pack(replica_id, max_wait_ms, min_bytes, max_bytes, 0, 0, -1)
    out += encode_unsigned(len(topics) + 1)
    for name, positions in topics:
        encoded = name.encode()
        out += encode_unsigned(len(encoded) + 1)
        out += encoded
        out += encode_unsigned(len(positions) + 1)
        for p in positions:
            out += _PARTITION.pack(p.partition, p.current_leader_epoch, p.fetch_offset,
                                   p.last_fetched_epoch, p.log_start_offset,
                                   p.partition_max_bytes, 0)
        out.append(0)  # topic tagged fields
    out += b"\x01\x01\x00"  # no forgotten topics, rack id "", no tagged fields
    _I32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_fetch_response(payload) -> tuple[int, int, list[tuple[str, list[FetchedPartition]]]]:
    """(correlation id, top-level error code, [(topic, [FetchedPartition])]) of a Fetch v12
    response payload (size prefix excluded)."""
    view = memoryview(payload)
    try:
        return _decode(view)
    except (struct.error, UnicodeDecodeError, IndexError, flexible.Truncated) as exc:
        raise MalformedFetchResponse(f"fetch response: {exc}") from exc


def _decode(view: memoryview):
    (correlation_id,) = _I32.unpack_from(view, 0)
    pos = _skip_tags(view, 4)
    _, error_code, _ = _TOP.unpack_from(view, pos)
    pos += _TOP.size
    count, pos = _length(view, pos)
    topics = []
    for _ in range(count):
        size, pos = _length(view, pos)
        if pos + size > len(view):
            raise MalformedFetchResponse("topic name past the end of the response")
        name = str(view[pos : pos + size], "utf-8")
        pos += size
        partitions_count, pos = _length(view, pos)
        partitions = []
        for _ in range(partitions_count):
            answer, pos = _partition(view, pos)
            partitions.append(answer)
        pos = _skip_tags(view, pos)
        topics.append((name, partitions))
    pos = _skip_tags(view, pos)
    if pos != len(view):
        raise MalformedFetchResponse(f"{len(view) - pos} trailing bytes")
    return correlation_id, error_code, topics


def _partition(view: memoryview, pos: int) -> tuple[FetchedPartition, int]:
    index, error_code, high_watermark, _, log_start_offset = _PARTITION_HEAD.unpack_from(view, pos)
    pos += _PARTITION_HEAD.size
    aborted, pos = _length(view, pos, nullable=True)
    for _ in range(aborted or 0):  # producer id, first offset, tagged fields
        pos = _skip_tags(view, pos + 16)
    pos += 4  # preferred read replica
    size, pos = _length(view, pos, nullable=True)
    records = None
    if size is not None:
        if pos + size > len(view):
            raise MalformedFetchResponse("records past the end of the response")
        records, pos = view[pos : pos + size], pos + size
    diverging, pos = _partition_tags(view, pos)
    return FetchedPartition(index, error_code, high_watermark, log_start_offset, records,
                            diverging), pos


def _partition_tags(view: memoryview, pos: int) -> tuple[tuple[int, int] | None, int]:
    """The diverging epoch (tag 0) if present; other tags (current leader, snapshot id, any
    newer ones) are skipped."""
    count, pos = _unsigned(view, pos)
    diverging = None
    for _ in range(count):
        tag, pos = _unsigned(view, pos)
        size, pos = _unsigned(view, pos)
        if pos + size > len(view):
            raise MalformedFetchResponse("tagged field past the end of the response")
        if tag == 0:
            diverging = _EPOCH_END.unpack_from(view, pos)
        pos += size
    return diverging, pos
