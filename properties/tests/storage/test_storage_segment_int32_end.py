"""Recovery keeps no batch that ends past 2**31 - 1 bytes into its segment: positions are int32
in the offset index (and Kafka's FileRecords refuses a segment file over Integer.MAX_VALUE
bytes), so a segment file grown past that by damage or by hand is cut at the last batch that
ends within it.

A segment never grows that large by appends (segment.bytes is at most 2**31 - 1), so only a
file written by hand shows the rule: here a sparse one, a valid first batch of almost 2 GiB (its
records zeros; recovery checks the CRC, not the records) and a second batch straddling the int32
end. Found by mutation testing (session 9df4313's survivor 00003: the check read
`position - size > INT32_MAX`, never true, and the layer had no file that large)."""

import os
import tempfile

import crc32c

from kafkaref.impl.protocol.crc import ATTRIBUTES_POS, CRC_POS
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.protocol.records.layout import HEADER, HEADER_SIZE, LOG_OVERHEAD
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

INT32_MAX = 2**31 - 1
CONFIG = LogConfig(retention_ms=-1)
ZEROS = bytes(16 * 1024 * 1024)


def _huge_batch(size: int) -> bytes:
    """The header and first record of a valid batch of `size` bytes whose other bytes are zeros
    (left as a hole in the file): its Length says `size`, its CRC covers the zeros too."""
    raw = bytearray(build_batch([(b"k", b"v", (), 1_000)]))
    fields = list(HEADER.unpack_from(raw))
    fields[1] = size - LOG_OVERHEAD  # Length
    HEADER.pack_into(raw, 0, *fields)
    crc = crc32c.crc32c(raw[ATTRIBUTES_POS:])
    for start in range(len(raw), size, len(ZEROS)):
        crc = crc32c.crc32c(ZEROS[:min(len(ZEROS), size - start)], crc)
    raw[CRC_POS:CRC_POS + 4] = crc.to_bytes(4, "big")
    return bytes(raw)


def _batch_at(base_offset: int) -> bytes:
    raw = bytearray(build_batch([(b"k", b"w" * 100, (), 2_000)]))
    raw[0:8] = base_offset.to_bytes(8, "big")  # BaseOffset: outside the CRC
    return bytes(raw)


def test_recovery_cuts_a_batch_ending_past_int32():
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, CONFIG, clock_ms=lambda: 0)
        log.crash()  # no clean-shutdown mark: the next open recovers the segment
        [name] = [n for n in os.listdir(directory) if n.endswith(".log")]
        segment = os.path.join(directory, name)
        second = _batch_at(1)
        first_size = INT32_MAX - len(second) // 2  # the second batch straddles the int32 end
        assert first_size > HEADER_SIZE and first_size + len(second) > INT32_MAX
        with open(segment, "r+b") as file:
            file.write(_huge_batch(first_size))
            file.seek(first_size)
            file.write(second)
        reopened = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            assert os.path.getsize(segment) == first_size
            assert reopened.log_end_offset == 1
        finally:
            reopened.close()
