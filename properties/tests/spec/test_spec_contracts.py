"""The contracts on the spec's pure helpers: checked against brute-force twins here on random
inputs (fast), and symbolically by CrossHair in `tox -e crosshair` (slow). A deliberately wrong
contract proves that CrossHair actually finds counterexamples."""

import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.spec import helpers

entries = st.tuples(st.integers(0, 5), st.integers(0, 3))
logs = st.lists(entries, max_size=6).map(tuple)


@given(logs, st.integers(0, 3))
def test_offset_for_epoch_against_definition(log, epoch):
    found = helpers.offset_for_epoch(log, epoch)
    larger = [offset for offset, (_, e) in enumerate(log) if e > epoch]
    if not log:
        assert found is None
    elif log[-1][1] == epoch:
        assert found == len(log)
    else:
        assert found == (min(larger) if larger else None)


@given(logs, logs)
def test_truncation_point_against_definition(leader, follower):
    matching = [o for o in range(min(len(leader), len(follower))) if leader[o] == follower[o]]
    assert helpers.first_non_matching_offset_from_tail(leader, follower) == (max(matching) + 1 if matching else 0)


@given(st.integers(0, 10), st.lists(st.integers(0, 10), max_size=4))
def test_high_watermark_never_moves_back(hw, end_offsets):
    new_hw = helpers.high_watermark_after_fetches(hw, end_offsets)
    assert new_hw >= hw
    assert new_hw == (max(hw, min(end_offsets)) if end_offsets else hw)


@given(st.frozensets(st.integers(0, 4)), st.integers(0, 4), st.integers(0, 4))
def test_isr_changes(isr, replica, leader):
    if replica != leader:
        shrunk = helpers.shrink_isr(isr | {leader}, replica, leader)
        assert replica not in shrunk and leader in shrunk
    assert replica in helpers.expand_isr(isr, replica)


def test_crosshair_finds_a_wrong_postcondition():
    target = Path(__file__).parent / "crosshair_targets" / "wrong_contract.py"
    run = subprocess.run(
        [sys.executable, "-m", "crosshair", "check", "--per_condition_timeout=20", str(target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "false when calling high_watermark_after_fetches" in run.stdout, run.stdout
