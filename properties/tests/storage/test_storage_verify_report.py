"""Log.verify, the tool and test oracle that reads a whole log, names exactly what is wrong: a
segment ending in part of a batch is reported once, with the number of bytes after its last
whole batch, and a whole log is reported clean.

The torn tail is kept by mutant M8 (recovery leaves it in the file), the one way a log holds
bytes after its last whole batch. Found by mutation testing (session 2225a175104f's survivor
00074): the count read `size + end` for `size - end` passed every storage test, which asked
only whether verify reported something."""

import os
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir

KEEPS_TORN_TAIL = LogConfig(mutants={"M8"}, retention_ms=-1)


@given(sizes=st.lists(st.integers(1, 200), min_size=1, max_size=5), data=st.data())
def test_verify_counts_the_bytes_after_the_last_whole_batch(sizes, data):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, KEEPS_TORN_TAIL, clock_ms=lambda: 0)
        for size in sizes:
            batch = build_batch([(b"k", b"v" * size, (), 1_000)])
            assert log.append_as_leader(batch, 0).error == ErrorCode.none
        assert log.verify() == []
        path, last = log.active_segment.log_path, len(batch)
        log.crash()
        whole = os.path.getsize(path) - last
        kept = data.draw(st.integers(1, last - 1), label="bytes of the last batch kept")
        os.truncate(path, whole + kept)
        torn = Log(directory, KEEPS_TORN_TAIL, clock_ms=lambda: 0)
        try:
            assert torn.verify() == [f"{path}: {kept} bytes after the last whole batch"]
        finally:
            torn.close()
