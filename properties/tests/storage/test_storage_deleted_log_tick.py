"""A log whose topic was deleted after the server's ticker picked it (impl/server/server.py
ticks the logs it listed under the core lock, checkpoints some after releasing it): the tick
does nothing and says so. No flush, no checkpoint written into a directory that is gone, no
error, and False (PartitionLog.maybe_flush: True only when it flushed).

Found by mutation testing (session 79fa682's survivor 00197, `return False` to `True` on a line
no storage test ran)."""

import os

import pytest

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig


@pytest.mark.parametrize("flush_messages", [None, 3])
def test_a_deleted_logs_tick_does_nothing_and_says_it_flushed_nothing(tmp_path, flush_messages):
    now = [0]
    log = Log(str(tmp_path / "t-0"), LogConfig(flush_messages=flush_messages, flush_ms=10),
              clock_ms=lambda: now[0])
    for _ in range(2):  # below any flush policy's count: unflushed records are left
        log.append_as_leader(build_batch([(b"k", b"v", (), 1_000)]), 0)
    log.set_high_watermark(2)
    log.delete()
    now[0] = 60_000  # every interval is due
    assert log.maybe_flush() is False
    assert os.listdir(tmp_path) == []
