"""Tagged fields a request's structs do not define are skipped, as Kafka's readers skip them;
a tagged field that runs past the end closes the connection, as Kafka's does (both seen on
Apache Kafka 4.3.1). kio, which refuses unknown tags, stays the reader: tagged_fields.py only
drops them first, walking kio's own classes, at every flexible version kafkaref serves."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_reader

from kafkaref.impl.protocol import tagged_fields, wire
from kafkaref.impl.protocol.messages import build
from kafkaref.properties.kio_strategies import message

FLEXIBLE = sorted(
    (api, version) for api, (_, low, high) in wire.SUPPORTED.items()
    for version in range(low, high + 1)
    if wire.is_supported(api, version) and load_request_schema(api, version).__flexible__)
UNKNOWN_TAG = bytes([1, 99, 2, 0xAB, 0xCD])  # one tagged field: tag 99, two bytes


@st.composite
def flexible_requests(draw):
    api, version = draw(st.sampled_from(FLEXIBLE))
    request = draw(message(load_request_schema(api, version)))
    return wire.encode_request(7, draw(st.one_of(st.none(), st.text(max_size=5))), request)[4:]


def walked(payload: bytes):
    cls = wire.request_class(*wire.peek_header(payload)[:2])
    walker = tagged_fields._Walker(memoryview(payload))
    walker.header()
    walker.struct(cls)
    return walker


@given(flexible_requests())
def test_the_walk_reads_a_request_as_kio_reads_it(payload):
    """Over every field of the request, ending where kio's read ends, and without unknown tags
    it leaves the request as it was."""
    cls = wire.request_class(*wire.peek_header(payload)[:2])
    _, offset = entity_reader(cls.__header_schema__)(payload, 0)
    _, size = entity_reader(cls)(payload, offset)
    assert walked(payload).pos == offset + size == len(payload)
    assert tagged_fields.without_unknown_tags(payload, cls) == payload


@given(flexible_requests(), st.data())
def test_an_unknown_tag_anywhere_reads_as_the_request_without_it(payload, data):
    sections = [at for at in walked(payload).sections if payload[at] == 0]
    at = data.draw(st.sampled_from(sections))
    tagged = payload[:at] + UNKNOWN_TAG + payload[at + 1:]
    cls = wire.request_class(*wire.peek_header(payload)[:2])
    with pytest.raises(KeyError):  # kio alone refuses it: the tag is where kio reads tags
        _, offset = entity_reader(cls.__header_schema__)(tagged, 0)
        entity_reader(cls)(tagged, offset)
    assert wire.decode_request(tagged) == wire.decode_request(payload)


def metadata_v12() -> bytes:
    return wire.encode_request(1, "c", build(load_request_schema(3, 12), {
        "topics": [{"name": "t"}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False}))[4:]


@pytest.mark.parametrize("tags", [
    bytes([2, 6, 1, 0, 5, 1, 0]),  # out of order
    bytes([2, 5, 1, 0, 5, 1, 0]),  # the same tag twice
])
def test_unordered_or_repeated_unknown_tags_are_skipped_too(tags):
    payload = metadata_v12()
    assert wire.decode_request(payload[:-1] + tags) == wire.decode_request(payload)


@pytest.mark.parametrize("tags", [
    bytes([1, 5, 40, 0xAA]),  # its size runs past the end
    bytes([3, 5, 1, 0]),  # three announced, one there
    bytes([1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),  # a varint longer than five bytes
])
def test_a_tagged_field_that_does_not_parse_is_malformed(tags):
    with pytest.raises(wire.MalformedRequest):
        wire.decode_request(metadata_v12()[:-1] + tags)
