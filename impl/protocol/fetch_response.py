"""Fetch responses (v4-v12) encoded straight from the broker's answers, without kio objects.

Every follower fetch names every partition its leader leads, idle ones included, and is
answered twice over (read when it arrives, read again when it completes). Through kio (dicts,
then dataclasses, then its generic writer) each partition entry cost ~20 us, most of a fetch's
CPU on the leader; here it is a few struct packs. The bytes are exactly those kio writes for the
same response (property-tested against kio, version by version), so kio stays the reference.

The result is a list of frame parts: bytes, and each non-empty records value as it was given
(bytes, or a file range the caller sends with sendfile), so records are never copied here.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kafkaref.impl.protocol.varint import encode_unsigned

FLEXIBLE_FROM = 12  # Fetch v12 is the first flexible version (compact fields, tagged fields)
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
_ERROR_SESSION = struct.Struct(">hi")
_PARTITION = struct.Struct(">ihqq")  # index, error code, high watermark, last stable offset
_I64 = struct.Struct(">q")
# One tagged field: tag 0 (diverging epoch), 13 bytes: epoch int32, end offset int64, no tags.
_DIVERGING = struct.Struct(">BBBiqB")
# aborted_transactions, never any here: null, or an empty array (read_committed, and the
# partitions a request names that do not exist: what Kafka sends, see Broker._fetch_fields)
_NULL_ARRAY = {False: _I32.pack(-1), True: b"\x00"}
_EMPTY_ARRAY = {False: _I32.pack(0), True: b"\x01"}


class PartitionAnswer(NamedTuple):
    index: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: object = None  # None, bytes, or a sized object sent as it is (a file range)
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset), v12 only
    last_stable_offset: int | None = None  # None: the high watermark (no transactions)
    aborted_empty: bool = False  # aborted_transactions: an empty array rather than null


def encode_fetch_response(version: int, correlation_id: int,
                          topics: list[tuple[str, list[PartitionAnswer]]],
                          error_code: int = 0, session_id: int = 0) -> list:
    """The whole frame, size prefix first, as parts; no aborted transactions (null or an
    empty array), no preferred read replica."""
    if not 4 <= version <= FLEXIBLE_FROM:
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
    for name, partitions in topics:
        encoded = name.encode()
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
                diverging = p.diverging_epoch
                if diverging is not None and diverging != (-1, -1):
                    out += _DIVERGING.pack(1, 0, 13, diverging[0], diverging[1], 0)
                else:
                    out.append(0)
        if flexible:
            out.append(0)  # topic: no tagged fields
    if flexible:
        out.append(0)  # response: no tagged fields
    parts.append(out)
    size = sum(len(part) for part in parts) - 4
    _I32.pack_into(parts[0], 0, size)
    return parts


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
