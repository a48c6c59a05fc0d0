"""A log whose partition checkpoint is missing (lost, or never written) opens with its log start
at its first segment's base, whatever the number of segments, and every record readable from
there; its high watermark starts at that log start.

Found by mutation testing (session 9df4313ef37b's survivor 00187: the first segment's base read
from the last segment, so a log of several segments opened without a checkpoint lost every
segment but the last to its log start; the tests' logs opened without one had one segment)."""

import os
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.impl.storage.recovery import CHECKPOINT_FILE
from kafkaref.properties.storage_machine import scratch_dir


@given(batches=st.integers(1, 8), per_segment=st.integers(1, 3))
def test_a_log_without_its_checkpoint_starts_at_its_first_segment(batches, per_segment):
    batch = build_batch([(None, b"v" * 20, (), 1_000)])
    config = LogConfig(segment_bytes=per_segment * len(batch), retention_ms=-1)
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, config, clock_ms=lambda: 0)
        for _ in range(batches):
            assert log.append_as_leader(batch, 0).error == ErrorCode.none
        log.close()
        os.unlink(os.path.join(directory, CHECKPOINT_FILE))
        reopened = Log(directory, config, clock_ms=lambda: 0)
        try:
            assert reopened.log_start_offset == reopened.segment_bases[0] == 0
            assert reopened.log_end_offset == batches
            assert len(list(reopened.iter_batches(0))) == batches
        finally:
            reopened.close()
