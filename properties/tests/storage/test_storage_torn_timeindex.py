"""A time index file that is not whole entries (torn, or grown by garbage) fails its load, and
the segment is recovered: its largest timestamp is read off the batches again. Taken as a valid,
empty index, the segment would count only the batches after its last offset index entry, and
a larger timestamp before it (a producer's clock ahead) would be lost to time retention."""

import os
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
