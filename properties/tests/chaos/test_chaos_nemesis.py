"""The nemesis schedule: drawn from the seed alone, within the time limit, of the kinds asked."""

from __future__ import annotations

import random

import pytest

from kafkaref.chaos.nemesis import (
    ALL_KINDS,
    SAFE_KINDS,
    TARGETS,
    corrupt_segment,
    draw_schedule,
    parse_kinds,
)


@pytest.mark.parametrize("seed", [0, 1, 42])
def test_same_seed_same_schedule(seed):
    assert draw_schedule(seed, SAFE_KINDS, 90) == draw_schedule(seed, SAFE_KINDS, 90)


def test_seeds_differ():
    assert draw_schedule(1, SAFE_KINDS, 90) != draw_schedule(2, SAFE_KINDS, 90)


@pytest.mark.parametrize("kinds", [SAFE_KINDS, ("kill",), ("partition", "corrupt")])
def test_steps_fit_the_limit_in_order_without_overlap(kinds):
    steps = draw_schedule(3, kinds, 60)
    assert steps
    assert all(s.kind in kinds and s.target in TARGETS[s.kind] for s in steps)
    assert all(s.at_s + s.duration_s <= 60 for s in steps)
    assert all(a.at_s + a.duration_s < b.at_s for a, b in zip(steps, steps[1:], strict=False))


def test_no_kinds_no_faults():
    assert draw_schedule(0, (), 60) == []


def test_parse_kinds():
    assert parse_kinds("kill, pause") == ("kill", "pause")
    assert set(SAFE_KINDS) < set(ALL_KINDS)
    with pytest.raises(ValueError, match="unknown nemesis kinds"):
        parse_kinds("kill,meteor")


@pytest.mark.parametrize("mode", ["bitflip", "truncate"])
def test_corrupt_segment_changes_the_newest_log(tmp_path, mode):
    partition = tmp_path / "chaos-0"
    partition.mkdir()
    old, new = partition / "00000000000000000000.log", partition / "00000000000000000100.log"
    old.write_bytes(b"a" * 100)
    new.write_bytes(b"b" * 100)
    path = corrupt_segment(str(tmp_path), mode, random.Random(0))
    assert path == str(new)
    assert old.read_bytes() == b"a" * 100
    assert new.read_bytes() != b"b" * 100
    assert corrupt_segment(str(tmp_path / "empty"), mode, random.Random(0)) is None
