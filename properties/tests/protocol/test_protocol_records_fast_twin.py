"""The fast producer/consumer paths against their plain twins.

encode_records (flat-list encoder) against encode_records_naive; build_batch against a reference
that packs the header and stamps the CRC the plain way, for every codec; decode_batch_fields
(inline common-shape reader) against decode_batch on valid and corrupted batches; the hand-built
Produce request prefix against kio's encoding of the same request."""

import struct

import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import produce_prefix
from kafkaref.impl.protocol import records, wire
from kafkaref.impl.protocol.compression import Compression, compress
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import HEADER, NewRecord, build_batch
from kafkaref.impl.protocol.records.encode import as_tuple

values = st.none() | st.binary(max_size=20) | st.integers(0, 9000).map(lambda n: b"v" * n)
keys = st.none() | st.binary(max_size=70) | st.integers(0, 9000).map(lambda n: b"k" * n)
headers = st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=5)),
                   max_size=2).map(tuple)
timestamps = st.none() | st.integers(-(1 << 40), 1 << 40) | st.integers(0, 10_000)
new_records = st.builds(NewRecord, value=values, key=keys, headers=headers, timestamp=timestamps)
codecs = st.sampled_from(list(Compression))


def reference_batch(items, compression, base_timestamp, deltas) -> bytes:
    """build_batch as it was written before the fast path: naive body, header, CRC stamped."""
    tuples = [as_tuple(i) for i in items]
    stamps = [base_timestamp if t[3] is None else t[3] for t in tuples]
    first = stamps[0]
    body = compress(compression, records.encode_records_naive(tuples, deltas, stamps, first))
    header = HEADER.pack(0, records.HEADER_SIZE - 12 + len(body), -1, 2, 0, int(compression),
                         deltas[-1], first, max(stamps), -1, -1, -1, len(items))
    batch = bytearray(header + body)
    struct.pack_into(">I", batch, records.CRC_POS,
                     crc32c.crc32c(bytes(batch[records.ATTRIBUTES_POS:])))
    return bytes(batch)


@settings(max_examples=200)
@given(st.lists(new_records, min_size=1, max_size=40), st.integers(0, 1 << 40), st.data())
def test_fast_encoder_is_byte_identical(items, base_timestamp, data):
    deltas = sorted(data.draw(st.lists(st.integers(0, 100_000), min_size=len(items),
                                       max_size=len(items), unique=True)))
    tuples = [as_tuple(i) for i in items]
    stamps = [base_timestamp if t[3] is None else t[3] for t in tuples]
    fast = records.encode_records(tuples, deltas, stamps, stamps[0])
    assert fast == records.encode_records_naive(tuples, deltas, stamps, stamps[0])


@settings(max_examples=60)
@given(st.lists(new_records, min_size=1, max_size=30), codecs, st.integers(0, 1 << 40),
       st.booleans())
def test_build_batch_matches_reference_for_every_codec(items, codec, base_timestamp, gaps):
    deltas = [2 * i for i in range(len(items))] if gaps else list(range(len(items)))
    built = build_batch(items, compression=codec, base_timestamp=base_timestamp,
                        offset_deltas=deltas)
    assert isinstance(built, bytes)
    if codec in (Compression.none, Compression.zstd, Compression.lz4, Compression.snappy):
        assert built == reference_batch(items, codec, base_timestamp, deltas)
    decoded = records.decode_batch(built)
    assert decoded.error == ErrorCode.none
    assert [(r.key, r.value, r.headers) for r in decoded.records] == [
        (i.key, i.value, tuple((k, v) for k, v in i.headers)) for i in items]


def fields_of(decoded):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded.records]


def agree(batch) -> None:
    plain = records.decode_batch(batch)
    error, header, fields = records.decode_batch_fields(batch)
    assert error == plain.error
    assert header == plain.header
    assert fields == fields_of(plain)


@settings(max_examples=150)
@given(st.lists(new_records, min_size=1, max_size=40), codecs)
def test_decode_fields_agrees_on_valid_batches(items, codec):
    agree(build_batch(items, compression=codec, base_offset=1234, base_timestamp=5))


@settings(max_examples=300)
@given(st.lists(new_records, min_size=1, max_size=12), st.data())
def test_decode_fields_agrees_on_corrupted_bodies(items, data):
    # corrupt the records section and then fix the CRC, so the record readers see it
    batch = bytearray(build_batch(items))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(records.HEADER_SIZE, len(batch) - 1))
        kind = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if kind == "flip":
            batch[at] = data.draw(st.integers(0, 255))
        elif kind == "cut" and len(batch) > records.HEADER_SIZE + 1:
            del batch[at:at + 1]
        else:
            batch[at:at] = data.draw(st.binary(min_size=1, max_size=2))
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, records.CRC_POS, records.compute_crc(batch))
    agree(bytes(batch))


def test_decode_fields_log_append_time_and_errors():
    batch = bytearray(build_batch([NewRecord(b"x", timestamp=7)], base_offset=3))
    batch[records.ATTRIBUTES_POS + 1] |= 0x08  # timestamp type: log append time
    struct.pack_into(">I", batch, records.CRC_POS, records.compute_crc(batch))
    agree(bytes(batch))
    batch[-1] ^= 0xFF  # CRC now wrong
    agree(bytes(batch))
    assert records.decode_batch_fields(bytes(batch))[0] == ErrorCode.corrupt_message


@settings(max_examples=50)
@given(st.sampled_from([3, 7, 8]), st.integers(0, 0x7FFFFFFF), st.none() | st.text(max_size=8),
       st.sampled_from([-1, 0, 1]), st.integers(0, 1 << 30), st.text(min_size=1, max_size=8),
       st.integers(0, 1 << 20), st.binary(max_size=64))
def test_produce_prefix_matches_kio(version, correlation_id, client_id, acks, timeout, topic,
                                    partition, data):
    request = build(wire.request_class(0, version), {
        "transactional_id": None, "acks": acks, "timeout": timeout, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": data}]}]})
    expected = wire.encode_request(correlation_id, client_id, request)
    got = produce_prefix(version, correlation_id, client_id, acks, timeout, topic, partition,
                         len(data)) + data
    assert got == expected
