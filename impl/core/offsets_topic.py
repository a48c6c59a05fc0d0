"""__consumer_offsets: the internal topic holding committed group offsets, as Kafka lays it out.

A group's offsets live in partition abs(Java String.hashCode(group)) % partitions, and the leader
of that partition is the group's coordinator (Kafka's GroupMetadataManager.partitionFor). Each
commit is one record: the key says which offset (group, topic, partition: OffsetCommitKey v1), the
value what was committed (offset, leader epoch, metadata, commit time: OffsetCommitValue v3); a
null value deletes it. Both are Kafka's byte formats, so Kafka's own tools can read our topic.
Only offset commits are written: group membership stays in the coordinator's memory
(docs/semantics.md "Consumer groups").
"""

from __future__ import annotations

import struct

import attrs

NAME = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({NAME, "__transaction_state"})  # Kafka's Topic.isInternal
OFFSET_KEY_VERSION = 1  # v0 and v1 are both offset keys; v2 is group metadata (not written)
OFFSET_VALUE_VERSION = 3

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's Utils.abs(groupId.hashCode) % partitions (Utils.abs maps MIN_VALUE to 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@attrs.frozen
class OffsetKey:
    group: str
    topic: str
    partition: int


@attrs.frozen
class CommittedOffset:
    """An OffsetCommitValue: every field given, by a commit (its time, the broker's clock) or
    by the record a load reads."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


def _string(text: str) -> bytes:
    data = text.encode()
    return _I16.pack(len(data)) + data


def encode_key(key: OffsetKey) -> bytes:
    return (_I16.pack(OFFSET_KEY_VERSION) + _string(key.group) + _string(key.topic)
            + _I32.pack(key.partition))


def encode_value(value: CommittedOffset) -> bytes:
    return (_I16.pack(OFFSET_VALUE_VERSION) + _I64.pack(value.offset)
            + _I32.pack(value.leader_epoch) + _string(value.metadata)
            + _I64.pack(value.commit_timestamp))


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = bytes(data), 0

    def take(self, fmt: struct.Struct) -> int:
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def string(self) -> str:
        size = self.take(_I16)
        if size < 0 or self.pos + size > len(self.data):
            raise ValueError("bad string length")
        text = self.data[self.pos:self.pos + size].decode()
        self.pos += size
        return text


def decode_key(data: bytes) -> OffsetKey | None:
    """The offset key in a record's key bytes; None for any other kind of key (group metadata,
    a key we cannot read: loading skips what is not an offset commit)."""
    try:
        reader = _Reader(data)
        if reader.take(_I16) not in (0, 1):
            return None
        return OffsetKey(reader.string(), reader.string(), reader.take(_I32))
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def decode_value(data: bytes) -> CommittedOffset | None:
    """OffsetCommitValue v0-v3; None when unreadable."""
    try:
        reader = _Reader(data)
        version = reader.take(_I16)
        if version not in (0, 1, 2, 3):
            return None
        offset = reader.take(_I64)
        epoch = reader.take(_I32) if version >= 3 else -1
        metadata = reader.string()
        timestamp = reader.take(_I64)
        return CommittedOffset(offset, epoch, metadata, timestamp)
    except (struct.error, ValueError, UnicodeDecodeError):
        return None
