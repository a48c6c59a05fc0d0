"""A log handed a producer's unchecked bytes checks them as LogConfig.validate_records says:
on, every batch's frame, codec and records (records.validate_batch, as a broker checks a
produce); off, the frame and base offset 0 only (the one-batch fast path and the general path
alike). The batches below keep a valid frame and CRC but break the records' rules, which only
the full check sees: an unknown codec, a RecordsCount the records do not hold, offset deltas
with gaps, a control batch, a damaged record byte.

Found by mutation testing (session 2225a175104f's survivor 00078): check_producer_batch's
`if config.validate_records` negated passed every storage test; no test appended a batch whose
frame is valid and whose records are not."""

import struct
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.crc import CRC_POS, compute_crc
from kafkaref.impl.protocol.records import (
    CONTROL_FLAG,
    RECORDS_COUNT_POS,
    RECORDS_POS,
    base_offset_of,
    build_batch,
    check_batch,
    parse_header,
    validate_batch,
)
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

ATTRIBUTES_LOW_POS = 22  # the low byte of the int16 Attributes: codec (bits 0-2), control (5)


def _damaged(count: int, damage: str, where: int) -> bytes:
    gaps = damage == "deltas"
    records = [(b"k%d" % i, b"v" * (3 + i), (), 1_000 + i) for i in range(count)]
    batch = bytearray(build_batch(records, offset_deltas=[2 * i for i in range(count)]
                                  if gaps else None))
    if damage == "codec":
        batch[ATTRIBUTES_LOW_POS] = (batch[ATTRIBUTES_LOW_POS] & ~0x07) | (5 + where % 3)
    elif damage == "count":
        (held,) = struct.unpack_from(">i", batch, RECORDS_COUNT_POS)
        struct.pack_into(">i", batch, RECORDS_COUNT_POS, held + 1 + where % 3)
    elif damage == "control":
        batch[ATTRIBUTES_LOW_POS] |= CONTROL_FLAG
    elif damage == "record":
        position = RECORDS_POS + where % (len(batch) - RECORDS_POS)
        batch[position] ^= 0xFF
    struct.pack_into(">I", batch, CRC_POS, compute_crc(batch))  # the frame stays valid
    assert check_batch(batch) == ErrorCode.none
    return bytes(batch)


_batches = st.builds(_damaged, st.integers(1, 4),
                     st.sampled_from(["none", "codec", "count", "deltas", "control", "record"]),
                     st.integers(0, 1_000))


def _expected(batch: bytes, config: LogConfig) -> ErrorCode:
    if config.validate_records:
        return validate_batch(batch, decompressed_bytes_max=config.decompressed_bytes_max)
    error = check_batch(batch)
    return ErrorCode.invalid_record if error == ErrorCode.none and base_offset_of(batch) else error


@given(batches=st.lists(_batches, min_size=1, max_size=3), validate=st.booleans())
def test_a_log_checks_producer_batches_as_validate_records_says(batches, validate):
    config = LogConfig(validate_records=validate, retention_ms=-1)
    errors = [_expected(b, config) for b in batches]
    expected = next((e for e in errors if e != ErrorCode.none), ErrorCode.none)
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, config, clock_ms=lambda: 0)
        try:
            info = log.append_as_leader(b"".join(batches), 0)
            assert info.error == expected, (validate, errors)
            written = sum(parse_header(b).last_offset_delta + 1 for b in batches)
            assert log.log_end_offset == (written if expected == ErrorCode.none else 0)
        finally:
            log.close()


def test_every_damage_is_one_the_full_check_refuses():
    """The damages are real: each breaks a rule of records.validate_batch (else the property
    above would not tell the two checks apart)."""
    for damage in ("codec", "count", "deltas", "control"):
        assert validate_batch(_damaged(3, damage, 0)) != ErrorCode.none, damage
    assert validate_batch(_damaged(3, "none", 0)) == ErrorCode.none
