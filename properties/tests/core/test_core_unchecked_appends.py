"""A log handed a producer's bytes without their checked headers validates them itself, and both
logs of the PartitionLog interface (MemoryLog, impl/storage's Log) agree: a batch whose
BaseOffset is 0 is appended at the log end, any other is refused (INVALID_RECORD, or
CORRUPT_MESSAGE for a negative one, which the frame check refuses first) and nothing is written. (BaseOffset sits outside the CRC, so only this check sees it.)

The core always hands the headers it checked, so the unchecked path is a tool's or a test's; no
test took it on a MemoryLog until mutation testing showed `base_offset != 0` read as `!= 1` went
unnoticed (docs/mutation.md, the seed-1 trial)."""

import struct
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

base_offsets = st.lists(st.sampled_from([0, 0, 1, 2, -1, 7, 1 << 40]), min_size=1, max_size=6)


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    data = bytearray(batch)
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


@given(base_offsets)
def test_unchecked_appends_take_base_offset_zero_only(bases):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        logs = [MemoryLog(), Log(directory, LogConfig(retention_ms=-1), clock_ms=lambda: 0)]
        try:
            for index, base in enumerate(bases):
                data = with_base_offset(build_batch([(None, b"v%d" % index, (), 1)] * 2), base)
                before = [log.log_end_offset for log in logs]
                answers = [log.append_as_leader(data, 0).error for log in logs]
                assert answers[0] == answers[1], (base, answers)
                assert (answers[0] == ErrorCode.none) == (base == 0), (base, answers)
                grown = 2 if base == 0 else 0
                assert [log.log_end_offset for log in logs] == [b + grown for b in before]
        finally:
            logs[1].close()
