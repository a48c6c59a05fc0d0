"""A segment whose time index file is missing is recovered, and its timestamps still answer.

offset_for_timestamp skips a segment whose largest timestamp is below the target, and a clean
open takes that timestamp from the time index: a missing time index loaded as valid and empty
hid the timestamps of its segment (the lookup answered a later segment's batch; time retention
judged the segment by the same wrong timestamp). The
offset index already treats a missing file in front of batches as damage; the time index now does
too, and the recovery scan rebuilds both (Kafka keeps the empty index and falls back to the
file's mtime as the segment's largest timestamp). Found by mutation testing (docs/mutation.md,
survivor 00062: the missing-file branch's `True` read as `False` changed no test's outcome,
since no storage test opened a segment without its time index)."""

import os
import tempfile

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

CONFIG = LogConfig(segment_bytes=300, index_interval_bytes=1, retention_ms=-1)


def test_a_missing_time_index_is_rebuilt_and_timestamps_answer():
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, CONFIG, clock_ms=lambda: 0)
        for i in range(12):
            batch = build_batch([(b"k", b"v" * 20, (), 1_000 + 10 * i)] * 2)
            assert log.append_as_leader(batch, 0).error == ErrorCode.none
        expected = {ts: log.offset_for_timestamp(ts) for ts in range(990, 1_130, 5)}
        log.roll()  # an empty active segment: missing index files there are no damage
        bases = log.segment_bases
        assert len(bases) >= 3
        log.close()
        for base in bases:
            os.unlink(os.path.join(directory, f"{base:020d}.timeindex"))
        os.unlink(os.path.join(directory, f"{bases[-1]:020d}.index"))
        reopened = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            assert reopened.recovery.clean_shutdown
            assert reopened.recovery.index_rebuilds == len(bases) - 1  # not the empty one
            assert {ts: reopened.offset_for_timestamp(ts) for ts in expected} == expected
        finally:
            reopened.close()
