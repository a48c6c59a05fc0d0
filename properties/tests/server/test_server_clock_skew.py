"""impl/clock.py SkewFile: the clock chaos/ makes jump through a file."""

from __future__ import annotations

import json
import os

from kafkaref.impl.clock import SkewFile, monotonic_ms, wall_clock_ms


def _write(path, **skew):
    path.write_text(json.dumps(skew))
    stamp = os.stat(path).st_mtime_ns + 1_000_000  # a new mtime even within one tick
    os.utime(path, ns=(stamp, stamp))


def test_missing_or_garbage_file_is_no_skew(tmp_path):
    skew = SkewFile(str(tmp_path / "absent.json"))
    assert abs(skew.wall_ms() - wall_clock_ms()) < 1000
    (tmp_path / "bad.json").write_text("{not json")
    skew = SkewFile(str(tmp_path / "bad.json"))
    assert abs(skew.monotonic_ms() - monotonic_ms()) < 1000


def test_jumps_follow_the_file_and_monotonic_never_goes_back(tmp_path):
    path = tmp_path / "clock.json"
    skew = SkewFile(str(path))
    skew.RECHECK_S = 0
    _write(path, wall_ms=3_600_000, monotonic_ms=60_000)
    assert skew.wall_ms() - wall_clock_ms() > 3_500_000
    assert skew.monotonic_ms() - monotonic_ms() > 59_000
    _write(path, wall_ms=-3_600_000, monotonic_ms=0)
    assert wall_clock_ms() - skew.wall_ms() > 3_500_000
    assert skew.monotonic_ms() - monotonic_ms() > 59_000  # kept: monotonic
