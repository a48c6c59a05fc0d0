"""The hand decoder of Produce requests (v3-v13) agrees with kio (the oracle), leaves records as
views of the payload, and rejects truncated or padded requests as malformed; it skips tagged
fields it does not know, as Kafka does."""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema

from kafkaref.impl.protocol import produce_request, wire
from kafkaref.impl.protocol.messages import build, millis

VERSIONS = st.integers(produce_request.VERSIONS.start, produce_request.VERSIONS.stop - 1)
partitions = st.lists(st.fixed_dictionaries({
    "index": st.integers(-(2**31), 2**31 - 1),
    "records": st.one_of(st.none(), st.binary(max_size=50))}), max_size=3)
topics = st.lists(st.fixed_dictionaries({
    "name": st.text(min_size=1, max_size=10),
    "topic_id": st.one_of(st.just(uuid.UUID(int=0)), st.uuids()),
    "partition_data": partitions}), max_size=3)
requests = st.fixed_dictionaries({
    "transactional_id": st.one_of(st.none(), st.text(max_size=10)),
    "acks": st.sampled_from([-1, 0, 1, 7]), "timeout": st.integers(0, 2**31 - 1),
    "topic_data": topics})


def frame_of(version, values) -> bytes:
    return wire.encode_request(9, "client", build(load_request_schema(0, version), values))


def kio_body(version, payload):
    from kio.serial import entity_reader

    cls = wire.request_class(0, version)
    _, offset = entity_reader(cls.__header_schema__)(payload, 0)
    return entity_reader(cls)(payload, offset)[0]


def topic_of(topic):
    return topic.topic_id if hasattr(topic, "topic_id") else topic.name


@given(version=VERSIONS, values=requests)
def test_fields_are_kios_and_records_are_views(version, values):
    payload = frame_of(version, values)[4:]
    got = wire.decode_request(payload).body
    want = kio_body(version, payload)
    assert (got.transactional_id, got.acks, millis(got.timeout)) == (
        want.transactional_id, want.acks, millis(want.timeout))
    assert len(got.topic_data) == len(want.topic_data)
    for g, w in zip(got.topic_data, want.topic_data, strict=True):
        assert topic_of(g) == topic_of(w)
        assert [p.index for p in g.partition_data] == [p.index for p in w.partition_data]
        for p, q in zip(g.partition_data, w.partition_data, strict=True):
            assert (None if p.records is None else bytes(p.records)) == q.records
            assert p.records is None or isinstance(p.records, memoryview)


@given(version=VERSIONS, values=requests, cut=st.integers(1, 300))
def test_truncated_requests_are_malformed_and_padded_ones_read_as_kafka_reads_them(
        version, values, cut):
    """Bytes after the body are ignored, as Kafka's parser ignores them (impl/protocol/wire.py)."""
    payload = frame_of(version, values)[4:]
    body_start = len(frame_of(version, {**values, "topic_data": []})[4:]) - 4  # before count
    if len(payload) - cut > 8:
        with pytest.raises(wire.MalformedRequest):
            wire.decode_request(payload[: max(body_start, len(payload) - cut)])
    padded = wire.decode_request(payload + b"\0" * (cut % 5 + 1))
    assert padded.body == wire.decode_request(payload).body


UNKNOWN_TAG = bytes([1, 9, 3]) + b"abc"  # one tagged field: tag 9, 3 bytes


@given(version=st.integers(produce_request.FLEXIBLE_FROM, produce_request.VERSIONS.stop - 1),
       values=requests)
def test_unknown_tagged_fields_are_skipped(version, values):
    """Kafka's generated readers keep tags they do not know aside and read on: so does the hand
    decoder (here a tag in the request's own tagged fields, its last byte)."""
    payload = frame_of(version, values)[4:]
    assert payload[-1] == 0  # no tagged fields
    tagged = wire.decode_request(payload[:-1] + UNKNOWN_TAG).body
    plain = wire.decode_request(payload).body
    assert [topic_of(t) for t in tagged.topic_data] == [topic_of(t) for t in plain.topic_data]


def test_a_tagged_field_past_the_end_is_malformed():
    payload = frame_of(9, {"transactional_id": None, "acks": 1, "timeout": 5,
                           "topic_data": []})[4:]
    with pytest.raises(wire.MalformedRequest):
        wire.decode_request(payload[:-1] + bytes([1, 9, 40, 0]))
