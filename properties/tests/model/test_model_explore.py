"""Exhaustive exploration of the model with the spec explorer (spec/explore.py): every spec
invariant on the refinement image and every client-level property, in every reachable state."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafkaref.model.explore_target import build, describe
from kafkaref.model.properties import CLIENT_PROPERTIES
from kafkaref.spec.explore import explore
from kafkaref.spec.invariants import INVARIANTS


def run(**options):
    starts, successors, invariants, _ = build(options)
    return explore(starts, successors, invariants)


def test_build_returns_what_the_explorer_needs():
    starts, successors, invariants, render = build(dict(replicas=2, max_records=1, max_epoch=1))
    assert set(invariants) == set(INVARIANTS) | set(CLIENT_PROPERTIES)
    (start,) = starts
    labels = [label for label, _ in successors(start)]
    assert "Elect(partition=0, leader=0, unclean=False)" in labels
    assert "CrashBroker(broker=1)" in labels and "Tick(ms=200)" in labels
    assert "controller: leader none" in render(start) and render is describe


def test_two_replicas_with_a_tick_a_crash_and_a_read_hold_everywhere():
    result = run(replicas=2, max_records=1, max_epoch=2, ticks=1, crashes=1, reads=1)
    assert result.complete and result.violation is None
    assert result.distinct_states > 5_000


def test_three_replicas_two_records_without_faults_hold_everywhere_small():
    result = run(replicas=3, max_records=1, max_epoch=1, ticks=0, crashes=0, reads=1)
    assert result.complete and result.violation is None


@pytest.mark.slow
def test_three_replicas_two_records_epochs_to_2_hold_everywhere():
    # 187,504 states, about a minute on an idle core.
    result = run(replicas=3, max_records=2, max_epoch=2, ticks=0, crashes=0, reads=1)
    assert result.complete and result.violation is None


@pytest.mark.slow
def test_three_replicas_with_a_crash_and_a_tick_hold_everywhere():
    result = run(replicas=3, max_records=1, max_epoch=2, ticks=1, crashes=1, reads=0, elections=False)
    assert result.complete and result.violation is None


def test_cli_explores_the_model_target():
    from kafkaref.commands.explore import explore_command

    result = CliRunner().invoke(explore_command, ["--target", "model", "--replicas", "2",
                                                  "--max-records", "1", "--max-epoch", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "Every invariant holds in every reachable state." in result.output
    assert "AckedWritesSurvive" in result.output


def test_every_explored_step_refines_the_spec():
    # Exhaustive refinement: each explored model step maps onto kip320 steps or a stutter.
    result = run(replicas=2, max_records=1, max_epoch=2, ticks=0, crashes=0, reads=0, refinement=True)
    assert result.complete and result.violation is None


@pytest.mark.slow
def test_every_explored_step_with_a_tick_and_a_crash_refines_the_spec():
    # 6,130 states and a guided spec search per edge: minutes.
    result = run(replicas=2, max_records=1, max_epoch=2, ticks=1, crashes=1, reads=0, refinement=True)
    assert result.complete and result.violation is None
