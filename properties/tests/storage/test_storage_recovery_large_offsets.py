"""Recovery judges a batch's offsets relative to its segment: a segment starting far up (a log
started again at a leader's log start, offsets past 2**31) keeps every batch it holds, and only
a batch reaching more than 2**31 - 1 past the segment's base offset (the index stores offsets
as int32 deltas) is cut.

Found by mutation testing (session 2225a175104f's survivor 00284): `last_offset - base_offset >
INT32_MAX` read `+` passed every storage test, whose recovered segments all started at 0."""

import os
import struct
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.crc import CRC_POS, compute_crc
from kafkaref.impl.protocol.records import INT32_MAX, build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

CONFIG = LogConfig(retention_ms=-1)


def _batch(i: int) -> bytes:
    return build_batch([(b"k", b"v" * (5 + i), (), 1_000)] * (1 + i % 3))


@given(start=st.integers(0, 2**62), batches=st.integers(1, 6), far=st.booleans())
def test_recovery_keeps_batches_far_up_and_cuts_one_too_far_from_its_segment(start, batches,
                                                                           far):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, CONFIG, clock_ms=lambda: 0)
        log.truncate_fully_and_start_at(start)
        for i in range(batches):
            assert log.append_as_leader(_batch(i), 0).error == ErrorCode.none
        written = [raw for _, raw in log.iter_batches()]
        leo, path = log.log_end_offset, log.active_segment.log_path
        log.crash()  # nothing flushed: the reopened log scans every batch
        too_far = bytearray(_batch(0))
        if far:  # a batch whose offset is 2**31 past the segment's base: a damaged BaseOffset
            struct.pack_into(">q", too_far, 0, start + INT32_MAX + 1)
            struct.pack_into(">I", too_far, CRC_POS, compute_crc(too_far))
            with open(path, "ab") as file:
                file.write(too_far)
        reopened = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            assert reopened.recovery.segments_scanned >= 1
            assert [raw for _, raw in reopened.iter_batches()] == written
            assert reopened.log_end_offset == leo
            assert reopened.recovery.bytes_truncated == (len(too_far) if far else 0)
            assert os.path.getsize(path) == sum(len(raw) for raw in written)
        finally:
            reopened.close()
