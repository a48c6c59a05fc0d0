"""A null array where the request's version does not allow null closes the connection, as
Apache Kafka's generated readers refuse it (kio reads any array as nullable):
impl/protocol/null_arrays.py."""

import struct

import pytest

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.null_arrays import check_of


def legacy_header(api_key: int, version: int) -> bytes:
    return struct.pack(">hhih", api_key, version, 1, 1) + b"c"


def flexible_header(api_key: int, version: int) -> bytes:
    return legacy_header(api_key, version) + b"\0"  # no tagged fields


def string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


NULL_ARRAY = struct.pack(">i", -1)
NULL_COMPACT_ARRAY = b"\0"  # compact lengths are n + 1


@pytest.mark.parametrize("payload, where", [
    (legacy_header(9, 1) + string("g") + NULL_ARRAY, "topics"),  # OffsetFetch: null from v2
    (legacy_header(9, 1) + string("g") + struct.pack(">i", 1) + string("t") + NULL_ARRAY,
     "topics.partition_indexes"),
    (legacy_header(3, 0) + NULL_ARRAY, "topics"),  # Metadata: null from v1
    (flexible_header(1, 12) + struct.pack(">iiiibii", -1, 500, 1, 1 << 20, 0, 0, -1)
     + NULL_COMPACT_ARRAY + b"\1\1\0", "topics"),  # Fetch: never null
])
def test_a_null_array_the_version_forbids_is_malformed(payload, where):
    with pytest.raises(wire.MalformedRequest, match=f"{where} is null"):
        wire.decode_request(payload)


@pytest.mark.parametrize("payload", [
    legacy_header(9, 2) + string("g") + NULL_ARRAY,
    legacy_header(3, 1) + NULL_ARRAY,
])
def test_a_null_array_the_version_allows_is_read(payload):
    assert wire.decode_request(payload).body.topics is None


def test_every_request_kafkaref_serves_has_its_check():
    """Each request class's check is written from its annotations without error; the ones
    with arrays that must not be null have one."""
    checked = set()
    for api_key, (_, low, high) in wire.SUPPORTED.items():
        for version in filter(lambda v: wire.is_supported(api_key, v), range(low, high + 1)):
            if check_of(wire.request_class(api_key, version)) is not None:
                checked.add(api_key)
    assert {1, 3, 9, 11, 19} <= checked  # Fetch, Metadata, OffsetFetch, JoinGroup, CreateTopics
