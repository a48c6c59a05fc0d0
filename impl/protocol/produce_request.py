"""Produce request bodies (v3-v13) decoded by hand, records left in the frame.

kio copies every records field into a new bytes object; for a 1 MiB batch that copy, into
freshly allocated (and, on these VMs, freshly faulted) memory, took ~130 us of the network
thread per request, on the path of every produce. Here the records are views of the request
payload; the network thread keeps that buffer untouched until the response is written (see
impl/server/network_thread.py, Connection.lent_buffer). The objects are kio's own classes, and the
decoded fields are kio's (property-tested against kio), so kio stays the reference.

Versions: v3-v8 classic encodings; v9 on flexible (compact lengths, tagged fields: flexible.py;
tags are skipped, as Kafka skips the ones it does not know); v13 names each topic by its id
instead of its name (KIP-516). v0-v2 are not decoded at all: Kafka 4 advertises them only for
librdkafka's sake and closes the connection of a request at one of them (wire.REFUSED).
"""

from __future__ import annotations

import datetime
import importlib
import struct

from kafkaref.impl.protocol import flexible

PRODUCE_API = 0
VERSIONS = range(3, 14)
FLEXIBLE_FROM, TOPIC_IDS_FROM = 9, 13
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


class MalformedProduce(ValueError):
    pass


def _classes(version: int):
    module = importlib.import_module(f"kio.schema.produce.v{version}.request")
    return module.ProduceRequest, module.TopicProduceData, module.PartitionProduceData


_CLASSES = {version: _classes(version) for version in VERSIONS}


def decode_produce_body(payload, pos: int, version: int):
    """(kio ProduceRequest, end position) of the body at payload[pos:]; records fields are
    read-only views of payload. Raises MalformedProduce for anything that does not parse."""
    reader = _Flexible(version) if version >= FLEXIBLE_FROM else _Classic()
    try:
        return _decode(memoryview(payload), pos, reader, *_CLASSES[version])
    except (struct.error, UnicodeDecodeError, flexible.Truncated) as exc:
        raise MalformedProduce(f"produce v{version}: {exc}") from exc


def _decode(view: memoryview, pos: int, reader, request_cls, topic_cls, partition_cls):
    transactional_id, pos = reader.string(view, pos, nullable=True)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(view, pos)
    pos += _ACKS_TIMEOUT.size
    topics = []
    count, pos = reader.count(view, pos)
    for _ in range(count):
        topic, pos = reader.topic(view, pos)
        partitions = []
        partition_count, pos = reader.count(view, pos)
        for _ in range(partition_count):
            (index,) = _I32.unpack_from(view, pos)
            records, pos = reader.records(view, pos + 4)
            pos = reader.tags(view, pos)
            partitions.append(partition_cls(index=index, records=records))
        pos = reader.tags(view, pos)
        topics.append(topic_cls(**{reader.topic_field: topic}, partition_data=tuple(partitions)))
    pos = reader.tags(view, pos)
    request = request_cls(transactional_id=transactional_id, acks=acks,
                          timeout=datetime.timedelta(milliseconds=timeout_ms),
                          topic_data=tuple(topics))
    return request, pos


def _text(view: memoryview, pos: int, size: int):
    if pos + size > len(view):
        raise MalformedProduce("string past the end of the request")
    return str(view[pos : pos + size], "utf-8"), pos + size


def _view(view: memoryview, pos: int, size: int):
    if pos + size > len(view):
        raise MalformedProduce("records past the end of the request")
    return view[pos : pos + size], pos + size


class _Classic:
    """v3-v8: int16 string lengths, int32 array and bytes lengths, no tagged fields."""

    topic_field = "name"

    @staticmethod
    def count(view: memoryview, pos: int) -> tuple[int, int]:
        (count,) = _I32.unpack_from(view, pos)
        if count < 0:
            raise MalformedProduce(f"array length {count}")
        return count, pos + 4

    @staticmethod
    def string(view: memoryview, pos: int, nullable: bool = False):
        (size,) = _I16.unpack_from(view, pos)
        pos += 2
        if size < 0:
            if size == -1 and nullable:
                return None, pos
            raise MalformedProduce(f"string length {size}")
        return _text(view, pos, size)

    def topic(self, view: memoryview, pos: int):
        return self.string(view, pos)

    @staticmethod
    def records(view: memoryview, pos: int):
        (size,) = _I32.unpack_from(view, pos)
        pos += 4
        if size < 0:
            if size == -1:
                return None, pos
            raise MalformedProduce(f"records length {size}")
        return _view(view, pos, size)

    @staticmethod
    def tags(view: memoryview, pos: int) -> int:
        return pos


class _Flexible:
    """v9-v13: compact lengths (n + 1 as an unsigned varint), tagged fields after each struct,
    and from v13 a topic id (16 bytes) where the topic's name was."""

    def __init__(self, version: int):
        self.by_id = version >= TOPIC_IDS_FROM
        self.topic_field = "topic_id" if self.by_id else "name"

    @staticmethod
    def count(view: memoryview, pos: int) -> tuple[int, int]:
        count, pos = flexible.length(view, pos)
        return count, pos

    @staticmethod
    def string(view: memoryview, pos: int, nullable: bool = False):
        size, pos = flexible.length(view, pos, nullable)
        return (None, pos) if size is None else _text(view, pos, size)

    def topic(self, view: memoryview, pos: int):
        return flexible.topic_id(view, pos) if self.by_id else self.string(view, pos)

    @staticmethod
    def records(view: memoryview, pos: int):
        size, pos = flexible.length(view, pos, nullable=True)
        return (None, pos) if size is None else _view(view, pos, size)

    @staticmethod
    def tags(view: memoryview, pos: int) -> int:
        return flexible.skip_tags(view, pos)
