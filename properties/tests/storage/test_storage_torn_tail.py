"""A write torn by a power loss (chaos/nemesis.py tear_last_write, `kafkaref chaos tear`: the
active segment cut short inside its last batch) is cut away by recovery, and kept by mutant M8;
and the per-topic segment size (Log.set_segment_bytes) decides the next roll."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.chaos.nemesis import tear_last_write
from kafkaref.impl.protocol.records import build_batch, decode_batch
from kafkaref.impl.storage import Log, LogConfig

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


def _batch(tag: int) -> bytes:
    return build_batch([(None, b"v%d-%d" % (tag, i), (), 1_000) for i in range(3)])


def _written(path, batches: int, **config) -> Log:
    """A log of `batches` 3-record batches, stopped uncleanly (as by SIGKILL)."""
    log = Log(str(path), LogConfig(**config), clock_ms=lambda: 0)
    for tag in range(batches):
        assert log.append_as_leader(_batch(tag), 0).error == ErrorCode.none
    log.crash()
    return log


def _values(log: Log) -> list[bytes]:
    out = []
    for _, raw in log.iter_batches():
        decoded = decode_batch(raw)
        assert decoded.error == ErrorCode.none
        out.extend(r.value for r in decoded.records)
    return out


def test_tear_cuts_the_last_batch_in_half(tmp_path):
    log = _written(tmp_path, 4)
    last = log.active_segment.log_path
    path, before, after = tear_last_write(str(tmp_path))
    assert path == last and os.path.getsize(path) == after < before
    sizes = [len(raw) for _, raw in Log(str(tmp_path), clock_ms=lambda: 0).iter_batches()]
    assert after == sum(sizes) + (before - sum(sizes)) // 2  # three whole batches + half


def test_recovery_cuts_the_torn_write_and_the_log_goes_on(tmp_path):
    _written(tmp_path, 4)
    tear_last_write(str(tmp_path))
    log = Log(str(tmp_path), clock_ms=lambda: 0)
    assert log.recovery.bytes_truncated > 0
    assert log.log_end_offset == 9 and log.verify() == []
    assert log.append_as_leader(_batch(9), 0).first_offset == 9
    assert _values(log) == [b"v%d-%d" % (t, i) for t in (0, 1, 2, 9) for i in range(3)]
    log.close()


def test_m8_keeps_the_torn_tail(tmp_path):
    _written(tmp_path, 4, mutants={"M8"})
    tear_last_write(str(tmp_path))
    log = Log(str(tmp_path), LogConfig(mutants={"M8"}), clock_ms=lambda: 0)
    assert log.log_end_offset == 9
    assert log.verify() != []  # bytes after the last whole batch: the torn write kept
    assert log.append_as_leader(_batch(9), 0).first_offset == 9  # written after the garbage
    error, data = log.read_checked(0, 1 << 20, 12)
    assert error == ErrorCode.corrupt_message  # a reader meets the torn batch, not offset 9
    assert len(data) == 3 * len(_batch(0))
    log.close()


def test_nothing_to_tear(tmp_path):
    assert tear_last_write(str(tmp_path / "missing")) is None
    Log(str(tmp_path / "empty"), clock_ms=lambda: 0).close()
    assert tear_last_write(str(tmp_path / "empty")) is None


def test_the_tear_command(tmp_path):
    _written(tmp_path / "t-0", 2)
    done = subprocess.run([KAFKAREF, "chaos", "tear", "--data-dir", str(tmp_path), "--topic",
                           "t", "--partition", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "tore" in done.stdout, done.stderr
    done = subprocess.run([KAFKAREF, "chaos", "tear", "--data-dir", str(tmp_path), "--topic",
                           "nope"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "nothing to tear" in done.stderr


@pytest.mark.parametrize("override", [None, 3000])
def test_segment_bytes_override_decides_the_next_roll(tmp_path, override):
    """Log.set_segment_bytes: the active segment is measured against the new size from the
    next append on; None goes back to the size the log was opened with."""
    log = Log(str(tmp_path), LogConfig(segment_bytes=100_000), clock_ms=lambda: 0)
    for tag in range(40):
        log.append_as_leader(_batch(tag), 0)
    log.set_segment_bytes(override)
    log.append_as_leader(_batch(40), 0)
    assert len(log.segments) == (1 if override is None else 2)
    log.set_segment_bytes(None)
    assert log.config.segment_bytes == 100_000
    log.close()
