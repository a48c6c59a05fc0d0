"""Deleting a log (its topic deleted) closes every file it holds before removing the directory:
no descriptor outlives the partition, and the log refuses use afterwards.

Found by mutation testing (session 2225a175104f's survivor 00215): Log.delete's `if not
self._closed` negated passed every storage test; an open log's deletion then kept a descriptor
per segment file open (the files unlinked, their space never freed while the broker ran)."""

import os

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
@pytest.mark.parametrize("closed_first", [False, True])
def test_delete_closes_every_file_of_the_log(tmp_path, closed_first):
    before = _open_descriptors()
    log = Log(str(tmp_path / "t-0"), LogConfig(segment_bytes=200, retention_ms=-1),
              clock_ms=lambda: 0)
    for i in range(6):  # a few segments
        assert log.append_as_leader(build_batch([(b"k", b"v" * 60, (), i)]), 0).error == (
            ErrorCode.none)
    assert len(log.segments) > 1 and _open_descriptors() > before
    if closed_first:
        log.close()
    log.delete()
    assert _open_descriptors() == before
    assert not os.path.exists(tmp_path / "t-0")
    with pytest.raises(Exception):  # noqa: B017 -- whichever error, never a write
        log.append_as_leader(build_batch([(b"k", b"late", (), 9)]), 0)
