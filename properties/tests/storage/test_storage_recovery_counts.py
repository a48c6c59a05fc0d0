"""Recovery cuts a batch whose CRC holds but whose LastOffsetDelta or record count is negative.

The CRC covers both fields, so random damage never gets here: a batch like this was written so
(a hostile or broken producer's bytes that reached the file). Each field is checked on its own:
found by mutation testing (docs/mutation.md), the recovery scan's `or` between the two read as
`and` let either through alone."""

import os
import struct

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.crc import ATTRIBUTES_POS, CRC_POS, compute_crc_of_parts
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.protocol.records.layout import HEADER_SIZE, RECORDS_COUNT_POS
from kafkaref.impl.storage import Log, LogConfig

LAST_OFFSET_DELTA_POS = ATTRIBUTES_POS + 2


def with_valid_crc(batch: bytearray) -> bytes:
    crc = compute_crc_of_parts(batch[:HEADER_SIZE], batch[HEADER_SIZE:])
    struct.pack_into(">I", batch, CRC_POS, crc)
    return bytes(batch)


@pytest.mark.parametrize("value", [-1, -2, -(2**31)])
@pytest.mark.parametrize("field", [LAST_OFFSET_DELTA_POS, RECORDS_COUNT_POS])
def test_recovery_cuts_a_batch_with_a_negative_count_or_delta(tmp_path, field, value):
    """Every negative value, -1 too: a LastOffsetDelta of -1 holds no offset, so keeping the
    batch leaves the log end where cutting it does, and only the bytes tell (session
    2225a175104f's survivor 00270: the delta's `< 0` read `< -1`)."""
    log = Log(str(tmp_path), LogConfig(retention_ms=-1), clock_ms=lambda: 0)
    assert log.append_as_leader(build_batch([(None, b"good", (), 1)]), 0).error == ErrorCode.none
    log.flush()
    log.crash()
    bad = bytearray(build_batch([(None, b"bad", (), 2)]))
    struct.pack_into(">q", bad, 0, 1)  # BaseOffset: right after the good batch
    struct.pack_into(">i", bad, field, value)
    [segment] = [name for name in os.listdir(tmp_path) if name.endswith(".log")]
    with open(tmp_path / segment, "ab") as file:
        file.write(with_valid_crc(bad))
    reopened = Log(str(tmp_path), LogConfig(retention_ms=-1), clock_ms=lambda: 0)
    assert reopened.log_end_offset == 1
    assert reopened.recovery.bytes_truncated == len(bad)  # cut, not kept
    reopened.close()


def test_recovery_keeps_a_batch_without_records(tmp_path):
    """A batch of header only (61 bytes, no records), as Kafka's log cleaner leaves to keep a
    producer's last sequence, is a whole batch: recovery keeps it and what follows. Found by
    mutation testing: `size < HEADER_SIZE` read as `<=` cut the log there."""
    log = Log(str(tmp_path), LogConfig(retention_ms=-1), clock_ms=lambda: 0)
    assert log.append_as_leader(build_batch([(None, b"good", (), 1)]), 0).error == ErrorCode.none
    log.flush()
    log.crash()
    empty = bytearray(build_batch([(None, b"gone", (), 2)])[:HEADER_SIZE])
    struct.pack_into(">q", empty, 0, 1)  # BaseOffset: right after the good batch
    struct.pack_into(">i", empty, 8, HEADER_SIZE - 12)  # BatchLength: the header alone
    struct.pack_into(">i", empty, RECORDS_COUNT_POS, 0)
    after = bytearray(build_batch([(None, b"after", (), 3)]))
    struct.pack_into(">q", after, 0, 2)
    [segment] = [name for name in os.listdir(tmp_path) if name.endswith(".log")]
    with open(tmp_path / segment, "ab") as file:
        file.write(with_valid_crc(empty) + bytes(after))
    reopened = Log(str(tmp_path), LogConfig(retention_ms=-1), clock_ms=lambda: 0)
    assert reopened.log_end_offset == 3
    reopened.close()
