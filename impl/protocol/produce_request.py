"""Produce request bodies (v3-v8, non-flexible) decoded by hand, records left in the frame.

kio copies every records field into a new bytes object; for a 1 MiB batch that copy, into
freshly allocated (and, on these VMs, freshly faulted) memory, took ~130 us of the network
thread per request, on the path of every produce. Here the records are views of the request
payload; the network thread keeps that buffer untouched until the response is written (see
impl/server/network_thread.py, Connection.lent_buffer). The objects are kio's own classes, and the
decoded fields are kio's (property-tested against kio), so kio stays the reference.
"""

from __future__ import annotations

import datetime
import importlib
import struct

PRODUCE_API = 0
VERSIONS = range(3, 9)
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
    try:
        return _decode(memoryview(payload), pos, *_CLASSES[version])
    except (struct.error, UnicodeDecodeError) as exc:
        raise MalformedProduce(f"produce v{version}: {exc}") from exc


def _decode(view: memoryview, pos: int, request_cls, topic_cls, partition_cls):
    transactional_id, pos = _string(view, pos, nullable=True)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(view, pos)
    pos += _ACKS_TIMEOUT.size
    topics = []
    count, pos = _count(view, pos)
    for _ in range(count):
        name, pos = _string(view, pos)
        partitions = []
        partition_count, pos = _count(view, pos)
        for _ in range(partition_count):
            (index,) = _I32.unpack_from(view, pos)
            records, pos = _bytes(view, pos + 4)
            partitions.append(partition_cls(index=index, records=records))
        topics.append(topic_cls(name=name, partition_data=tuple(partitions)))
    request = request_cls(transactional_id=transactional_id, acks=acks,
                          timeout=datetime.timedelta(milliseconds=timeout_ms),
                          topic_data=tuple(topics))
    return request, pos


def _count(view: memoryview, pos: int) -> tuple[int, int]:
    (count,) = _I32.unpack_from(view, pos)
    if count < 0:
        raise MalformedProduce(f"array length {count}")
    return count, pos + 4


def _string(view: memoryview, pos: int, nullable: bool = False):
    (size,) = _I16.unpack_from(view, pos)
    pos += 2
    if size < 0:
        if size == -1 and nullable:
            return None, pos
        raise MalformedProduce(f"string length {size}")
    if pos + size > len(view):
        raise MalformedProduce("string past the end of the request")
    return str(view[pos : pos + size], "utf-8"), pos + size


def _bytes(view: memoryview, pos: int):
    (size,) = _I32.unpack_from(view, pos)
    pos += 4
    if size < 0:
        if size == -1:
            return None, pos
        raise MalformedProduce(f"records length {size}")
    if pos + size > len(view):
        raise MalformedProduce("records past the end of the request")
    return view[pos : pos + size], pos + size
