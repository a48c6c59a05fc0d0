"""The flexible encodings (KIP-482) read by hand: what the hand codecs of the hot paths
(produce_request.py, replica_fetch.py) share.

A flexible version writes lengths as unsigned varints holding length + 1 (0 is null) and ends
every struct with tagged fields: a count, then (tag, size, bytes) for each. A reader skips the
tags it does not know, as Kafka's generated readers do (they keep them as unknown tagged fields):
a newer client may send tags an older broker never heard of. Anything that runs past the end of
the buffer raises Truncated, which each codec turns into its own malformed-input error.
"""

from __future__ import annotations

import uuid

from kafkaref.impl.protocol.varint import VARINT_BYTES_MAX, decode_unsigned

UUID_BYTES = 16


class Truncated(ValueError):
    """A flexible field runs past the end of its buffer, or a varint is longer than allowed."""


def unsigned(view, pos: int) -> tuple[int, int]:
    """(value, next position) of an unsigned varint of at most 5 bytes (an int32's)."""
    decoded = decode_unsigned(view, pos, VARINT_BYTES_MAX)
    if decoded is None:
        raise Truncated("bad or truncated varint")
    return decoded


def length(view, pos: int, nullable: bool = False) -> tuple[int | None, int]:
    """(n, next position) of a compact array, string or bytes length; None for null, which only
    a nullable field may be."""
    raw, pos = unsigned(view, pos)
    if raw == 0:
        if not nullable:
            raise Truncated("null where a value is required")
        return None, pos
    return raw - 1, pos


def skip_tags(view, pos: int) -> int:
    """The position after a struct's tagged fields, every one skipped."""
    count, pos = unsigned(view, pos)
    for _ in range(count):
        _, pos = unsigned(view, pos)
        size, pos = unsigned(view, pos)
        pos += size
        if pos > len(view):
            raise Truncated("tagged field past the end")
    return pos


def topic_id(view, pos: int) -> tuple[uuid.UUID | None, int]:
    """(the uuid, next position) of a topic id field; the all-zero id is None, as kio reads it."""
    if pos + UUID_BYTES > len(view):
        raise Truncated("topic id past the end")
    value = int.from_bytes(view[pos : pos + UUID_BYTES], "big")
    return (uuid.UUID(int=value) if value else None), pos + UUID_BYTES
