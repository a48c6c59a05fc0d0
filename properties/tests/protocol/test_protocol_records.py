"""Record batch v2: varints, build/decode round trips, validation error codes, bad-input safety."""

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol import varint
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import (
    CRC_POS,
    HEADER_SIZE,
    NewRecord,
    build_batch,
    check_batch,
    compute_crc,
    decode_batch,
    parse_header,
    split_batches,
    stamp_batch,
    stamped,
    validate_batch,
)

nullable_bytes = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), nullable_bytes), max_size=3).map(tuple)
new_records = st.builds(
    NewRecord,
    value=nullable_bytes,
    key=nullable_bytes,
    headers=headers,
    timestamp=st.none() | st.integers(0, 2**41),
)
codecs = st.sampled_from(list(Compression))


def _fix_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, CRC_POS, compute_crc(batch))
    return bytes(batch)


# -- varints ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
     (300, b"\xd8\x04"), (-(2**31), b"\xff\xff\xff\xff\x0f")],
)
def test_varint_known_encodings(value, encoded):
    assert varint.encode_varint(value) == encoded
    assert varint.decode_varint(encoded, 0) == (value, len(encoded))
    assert varint.size_of_varint(value) == len(encoded)


@given(st.integers(-(2**63), 2**63 - 1), st.binary(max_size=3))
def test_varint_round_trip(value, suffix):
    encoded = varint.encode_varint(value)
    assert varint.decode_varint(encoded + suffix, 0) == (value, len(encoded))


@given(st.binary(max_size=12))
def test_varint_decoder_never_raises(data):
    result = varint.decode_varint(data, 0, varint.VARINT_BYTES_MAX)
    assert result is None or 0 < result[1] <= min(len(data), 5)


# -- build / decode ---------------------------------------------------------------------------


@settings(max_examples=40)
@given(st.lists(new_records, min_size=1, max_size=6), codecs, st.integers(0, 2**40))
def test_build_decode_round_trip(records, codec, base_timestamp):
    batch = build_batch(records, compression=codec, base_timestamp=base_timestamp)
    assert check_batch(batch) == ErrorCode.none
    assert validate_batch(batch) == ErrorCode.none
    decoded = decode_batch(batch)
    assert decoded.error == ErrorCode.none
    assert decoded.header.records_count == len(records)
    assert decoded.header.compression == codec
    for offset, (given_record, record) in enumerate(zip(records, decoded.records, strict=True)):
        assert record.offset == offset
        assert (record.key, record.value, record.headers) == (
            given_record.key, given_record.value, given_record.headers)
        expected_ts = base_timestamp if given_record.timestamp is None else given_record.timestamp
        assert record.timestamp == expected_ts
    assert decoded.header.max_timestamp == max(r.timestamp for r in decoded.records)


def test_header_fields_and_flags():
    batch = build_batch(
        [(b"k", b"v", (), 5)], compression=Compression.lz4, producer_id=7, producer_epoch=3,
        base_sequence=11, is_transactional=True, partition_leader_epoch=4,
    )
    header = parse_header(batch)
    assert (header.magic, header.producer_id, header.producer_epoch, header.base_sequence) == (
        2, 7, 3, 11)
    assert header.is_transactional and not header.is_control
    assert header.partition_leader_epoch == 4 and header.size_bytes == len(batch)
    assert header.crc == crc32c.crc32c(batch[21:])


@given(st.integers(0, 2**62), st.integers(-1, 2**31 - 1))
def test_stamping_keeps_the_crc_valid(base_offset, epoch):
    batch = build_batch([(None, b"value", (), 1)] * 3)
    out = stamped(batch, base_offset, epoch)
    assert check_batch(out) == ErrorCode.none
    header = parse_header(out)
    assert (header.base_offset, header.partition_leader_epoch) == (base_offset, epoch)
    assert decode_batch(out).records[2].offset == base_offset + 2
    view = memoryview(bytearray(batch))
    stamp_batch(view, base_offset, epoch)
    assert bytes(view) == bytes(out)


def test_split_batches():
    one, two = build_batch([(None, b"a", (), 1)]), build_batch([(None, b"b", (), 1)] * 2)
    error, parts = split_batches(one + two)
    assert error == ErrorCode.none and [bytes(p) for p in parts] == [one, two]
    error, parts = split_batches(one + two[:-1])
    assert error == ErrorCode.corrupt_message and len(parts) == 1
    error, parts = split_batches(one + two[:-1], allow_partial_tail=True)
    assert error == ErrorCode.none and len(parts) == 1
    assert split_batches(b"")[0] == ErrorCode.none


# -- validation error codes --------------------------------------------------------------------


def _batch(count=3, codec=Compression.none):
    return build_batch([(b"k", b"v" * 20, (("h", b"x"),), 10)] * count, compression=codec)


def test_bad_crc_is_corrupt_message():
    batch = bytearray(_batch())
    batch[-1] ^= 0x01
    assert check_batch(batch) == ErrorCode.corrupt_message
    assert validate_batch(batch) == ErrorCode.corrupt_message
    assert decode_batch(batch).error == ErrorCode.corrupt_message


def test_wrong_magic_and_lengths_are_corrupt_message():
    batch = bytearray(_batch())
    batch[16] = 1
    assert check_batch(batch) == ErrorCode.corrupt_message
    assert check_batch(_batch()[:-1]) == ErrorCode.corrupt_message
    assert check_batch(_batch()[:HEADER_SIZE - 1]) == ErrorCode.corrupt_message
    assert check_batch(_batch() + b"\x00") == ErrorCode.corrupt_message


@pytest.mark.parametrize("codec_bits", [5, 6, 7])
def test_unknown_codec_is_unsupported_compression_type(codec_bits):
    batch = bytearray(_batch())
    batch[22] = (batch[22] & ~0x07) | codec_bits
    batch = _fix_crc(batch)
    assert check_batch(batch) == ErrorCode.none
    assert validate_batch(batch) == ErrorCode.unsupported_compression_type
    assert decode_batch(batch).error == ErrorCode.unsupported_compression_type


def test_producer_rules_are_invalid_record():
    assert validate_batch(stamped(_batch(), 5, 0)) == ErrorCode.invalid_record
    assert validate_batch(stamped(_batch(), 5, 0), from_client=False) == ErrorCode.none
    gaps = build_batch([(None, b"a", (), 1)] * 2, offset_deltas=[0, 2])
    assert validate_batch(gaps) == ErrorCode.invalid_record
    assert validate_batch(gaps, from_client=False) == ErrorCode.none
    assert validate_batch(build_batch([])) == ErrorCode.invalid_record


def test_records_count_mismatch_is_corrupt_message():
    batch = bytearray(_batch(3))
    struct.pack_into(">i", batch, 57, 4)
    struct.pack_into(">i", batch, 23, 3)
    assert validate_batch(_fix_crc(batch), from_client=False) == ErrorCode.corrupt_message


@pytest.mark.parametrize("codec", [c for c in Compression if c != Compression.none])
def test_garbage_compressed_body_is_corrupt_message(codec):
    batch = bytearray(_batch(3, codec))
    batch[HEADER_SIZE:] = b"\x00garbage!" * 3
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    batch = _fix_crc(batch)
    assert check_batch(batch) == ErrorCode.none
    assert validate_batch(batch) == ErrorCode.corrupt_message
    assert decode_batch(batch).error == ErrorCode.corrupt_message


@pytest.mark.parametrize("codec", [c for c in Compression if c != Compression.none])
def test_decompression_bomb_is_bounded(codec):
    batch = build_batch([(None, b"\x00" * 200_000, (), 1)], compression=codec)
    assert len(batch) < 20_000
    assert validate_batch(batch, decompressed_bytes_max=100_000) == ErrorCode.corrupt_message
    assert decode_batch(batch, 100_000).error == ErrorCode.corrupt_message
    assert decode_batch(batch).error == ErrorCode.none


# -- bad input never raises ------------------------------------------------------------------


@given(codecs, st.data())
def test_mutated_batches_never_raise_and_never_pass_with_a_bad_crc(codec, data):
    batch = bytearray(_batch(3, codec))
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(batch) - 1), st.integers(0, 7)),
                               min_size=1, max_size=3))
    for position, bit in flips:
        batch[position] ^= 1 << bit
    cut = data.draw(st.integers(0, len(batch)))
    mutated = bytes(batch[:cut]) + data.draw(st.binary(max_size=8))
    for result in (check_batch(mutated), validate_batch(mutated), decode_batch(mutated).error):
        assert isinstance(result, ErrorCode)
    header = parse_header(mutated)
    if check_batch(mutated) == ErrorCode.none:
        assert compute_crc(mutated) == header.crc


@given(st.binary(max_size=200))
def test_random_bytes_never_raise(data):
    assert isinstance(check_batch(data), ErrorCode)
    assert isinstance(validate_batch(data), ErrorCode)
    assert isinstance(decode_batch(data).error, ErrorCode)
    assert isinstance(split_batches(data)[0], ErrorCode)


@settings(max_examples=40)
@given(st.binary(max_size=120), codecs)
def test_any_body_with_a_valid_crc_decodes_or_fails_cleanly(body, codec):
    """Garbage records behind a correct CRC: the record decoder must not raise either."""
    header = bytearray(_batch(1, codec)[:HEADER_SIZE])
    struct.pack_into(">i", header, 8, HEADER_SIZE - 12 + len(body))
    batch = _fix_crc(header + body)
    assert isinstance(validate_batch(batch), ErrorCode)
    assert isinstance(decode_batch(batch).error, ErrorCode)
    # the fast record walker (validate) and the full decoder agree on what is well formed
    walked = validate_batch(batch, from_client=False) == ErrorCode.none
    assert walked == (decode_batch(batch).error == ErrorCode.none)


@given(st.lists(new_records, min_size=1, max_size=4), st.data())
def test_record_walker_agrees_with_the_decoder_on_damaged_records(records, data):
    body = bytearray(_batch(1)[:0])
    batch = bytearray(build_batch(records))
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(HEADER_SIZE, len(batch) - 1))
        batch[position] = data.draw(st.integers(0, 255))
    batch = _fix_crc(batch + body)
    walked = validate_batch(batch, from_client=False) == ErrorCode.none
    assert walked == (decode_batch(batch).error == ErrorCode.none)
