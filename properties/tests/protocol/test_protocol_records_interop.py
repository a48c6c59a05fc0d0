"""Interoperability with a codec nobody here wrote: kafka-python's DefaultRecordBatchBuilder and
DefaultRecordBatch, both directions, every compression type.

kafka-python reads and writes snappy through the optional `python-snappy` module, which is not
installed; the fixture gives kafka.codec a stand-in `snappy` module backed by cramjam's raw snappy
(what python-snappy's compress/decompress are). The xerial framing on both sides is still
kafka-python's own code.
"""

import types

import cramjam
import kafka.codec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import (
    NewRecord,
    build_batch,
    decode_batch,
    stamped,
    validate_batch,
)

_SNAPPY = types.SimpleNamespace(
    compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
    decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
)


@pytest.fixture(autouse=True)
def _kafka_python_snappy(monkeypatch):
    if kafka.codec.snappy is None:
        monkeypatch.setattr(kafka.codec, "snappy", _SNAPPY)


nullable_bytes = st.none() | st.binary(max_size=300)
records_strategy = st.lists(
    st.builds(
        NewRecord,
        value=nullable_bytes,
        key=nullable_bytes,
        headers=st.lists(st.tuples(st.text(max_size=6), nullable_bytes), max_size=2).map(tuple),
        timestamp=st.integers(0, 2**41),
    ),
    min_size=1,
    max_size=8,
)
ALL_CODECS = list(Compression)


def _kafka_python_build(records, codec, producer=(-1, -1, -1)) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=int(codec), is_transactional=False,
        producer_id=producer[0], producer_epoch=producer[1], base_sequence=producer[2],
        batch_size=1 << 24,
    )
    for offset, record in enumerate(records):
        builder.append(offset, timestamp=record.timestamp, key=record.key, value=record.value,
                       headers=list(record.headers))
    return bytes(builder.build())


def _as_tuples(records):
    return [(r.key, r.value, tuple(r.headers), r.timestamp) for r in records]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=[c.name for c in ALL_CODECS])
@settings(max_examples=8)
@given(records=records_strategy)
def test_kafka_python_batches_decode_here(codec, records):
    batch = _kafka_python_build(records, codec, producer=(1234, 5, 17))
    assert validate_batch(batch) == ErrorCode.none
    decoded = decode_batch(batch)
    assert decoded.error == ErrorCode.none
    # kafka-python falls back to no compression when compressing does not make it smaller
    assert decoded.header.compression in (Compression.none, codec)
    assert (decoded.header.producer_id, decoded.header.producer_epoch) == (1234, 5)
    assert decoded.header.base_sequence == 17
    assert _as_tuples(decoded.records) == _as_tuples(records)
    assert [r.offset for r in decoded.records] == list(range(len(records)))


@pytest.mark.parametrize("codec", ALL_CODECS, ids=[c.name for c in ALL_CODECS])
@settings(max_examples=8)
@given(records=records_strategy, base_offset=st.integers(0, 2**40), epoch=st.integers(0, 99))
def test_our_batches_decode_in_kafka_python(codec, records, base_offset, epoch):
    batch = stamped(build_batch(records, compression=codec, producer_id=9, producer_epoch=1,
                                base_sequence=3), base_offset, epoch)
    theirs = DefaultRecordBatch(bytearray(batch))
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.leader_epoch, theirs.compression_type) == (
        base_offset, epoch, int(codec))
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (9, 1, 3)
    decoded = list(theirs)
    assert [r.offset for r in decoded] == [base_offset + i for i in range(len(records))]
    assert [(r.key, r.value, tuple(r.headers), r.timestamp) for r in decoded] == _as_tuples(records)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=[c.name for c in ALL_CODECS])
def test_compressible_kafka_python_batch_uses_the_codec(codec):
    records = [NewRecord(value=b"kafkaref " * 500, key=b"key-%d" % i, timestamp=1_700_000_000_000 + i)
               for i in range(20)]
    batch = _kafka_python_build(records, codec)
    decoded = decode_batch(batch)
    assert decoded.header.compression == codec
    assert _as_tuples(decoded.records) == _as_tuples(records)


def test_kafka_python_detects_our_corruption():
    batch = bytearray(build_batch([(b"k", b"v", (), 1)]))
    batch[-1] ^= 0xFF
    assert not DefaultRecordBatch(batch).validate_crc()
