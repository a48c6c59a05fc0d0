"""Power-loss mode (LogConfig.lose_unflushed_on_crash): an unclean stop loses what was not
fsynced, and only that; a clean close loses nothing; the mode off keeps everything written."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig


def _batch(value_bytes: int = 50) -> bytes:
    return build_batch([(b"k", b"v" * value_bytes, (), 1_000)])


def _fill(log: Log, batches: int) -> list[bytes]:
    for _ in range(batches):
        assert log.append_as_leader(_batch(), 0).error == ErrorCode.none
    return [raw for _, raw in log.iter_batches()]


def _open(path, **config) -> Log:
    return Log(str(path), LogConfig(**config), clock_ms=lambda: 0)


def test_unclean_stop_loses_exactly_the_unflushed(tmp_path):
    log = _open(tmp_path, lose_unflushed_on_crash=True)
    durable = _fill(log, 5)
    log.flush()
    _fill(log, 4)
    log.crash()
    log = _open(tmp_path, lose_unflushed_on_crash=True)
    assert [raw for _, raw in log.iter_batches()] == durable
    assert log.log_end_offset == 5
    _fill(log, 1)  # and the log goes on from there
    assert log.log_end_offset == 6
    log.close()


def test_nothing_flushed_nothing_kept_across_rolls(tmp_path):
    log = _open(tmp_path, lose_unflushed_on_crash=True, segment_bytes=700)
    _fill(log, 20)  # rolls fsync the older segments: they survive, the active one does not
    kept = [raw for _, raw in log.iter_batches()][: log.active_segment.base_offset]
    log.crash()
    log = _open(tmp_path, lose_unflushed_on_crash=True, segment_bytes=700)
    assert [raw for _, raw in log.iter_batches()] == kept
    log.close()


def test_clean_close_keeps_everything(tmp_path):
    log = _open(tmp_path, lose_unflushed_on_crash=True)
    written = _fill(log, 6)
    log.close()
    log = _open(tmp_path, lose_unflushed_on_crash=True)
    assert [raw for _, raw in log.iter_batches()] == written
    log.close()


def test_mode_off_keeps_what_the_os_has(tmp_path):
    log = _open(tmp_path)
    written = _fill(log, 6)
    log.crash()
    log = _open(tmp_path)
    assert [raw for _, raw in log.iter_batches()] == written
    log.close()
