"""A time index file that is not whole entries (torn, or grown by garbage) fails its load, and
the segment is recovered: its largest timestamp is read off the batches again. Taken as a valid,
empty index, the segment would count only the batches after its last offset index entry, and
a larger timestamp before it (a producer's clock ahead) would be lost to time retention.

So does one whose timestamps do not strictly grow (the index only ever appends a greater
timestamp): session 9df4313ef37b's survivor 00347, the load's `timestamp <= last` read `<`,
took an entry repeating the one before as valid, and the segment's largest timestamp was the
damaged entry's."""

import os
import struct
import tempfile

import pytest

from kafkaref.impl.protocol.records import build_batch, stamped
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

CONFIG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=100, retention_ms=-1)
STAMPS = [9_000, 1_000, 1_100, 1_200, 1_300, 1_400]  # the first batch is stamped latest


@pytest.mark.parametrize("damage", ["torn", "grown"])
def test_a_damaged_time_index_is_rebuilt_with_the_segments_largest_timestamp(damage):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, CONFIG, clock_ms=lambda: 0)
        for offset, stamp in enumerate(STAMPS):
            log.append(bytes(stamped(build_batch([(None, b"v" * 60, (), stamp)]), offset, 0)))
        assert len(log.segments[0].index) > 0  # batches lie after an offset index entry
        log.close()
        path = os.path.join(directory, "00000000000000000000.timeindex")
        if damage == "torn":
            os.truncate(path, os.path.getsize(path) - 5)
        else:
            with open(path, "ab") as index:
                index.write(b"\x00" * 5)
        reopened = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            assert reopened.segments[0].max_timestamp == max(STAMPS)
        finally:
            reopened.close()


def test_a_time_index_repeating_a_timestamp_is_rebuilt():
    stamps = [1_000, 2_000, 3_000, 4_000]
    config = LogConfig(index_interval_bytes=1, retention_ms=-1)  # an entry per batch but the first
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, config, clock_ms=lambda: 0)
        for offset, stamp in enumerate(stamps):
            log.append(bytes(stamped(build_batch([(None, b"v", (), stamp)]), offset, 0)))
        log.close()
        path = os.path.join(directory, "00000000000000000000.timeindex")
        entry = struct.Struct(">qi")  # timestamp, relative offset
        with open(path, "r+b") as index:
            data = index.read()
            entries = list(entry.iter_unpack(data))
            assert len(entries) >= 2 and entries[-1][0] == max(stamps)
            index.seek(len(data) - entry.size)  # the last entry repeats the timestamp before it
            index.write(entry.pack(entries[-2][0], entries[-1][1]))
        reopened = Log(directory, config, clock_ms=lambda: 0)
        try:
            assert reopened.segments[0].max_timestamp == max(stamps)
        finally:
            reopened.close()
