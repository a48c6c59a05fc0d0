"""The segmented Log against its naive twin (properties/storage_machine.py), and proof that the
machine catches the storage mutants of docs/bugs.md (M6, M7, M8, M13)."""

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.profiles import fit_deep_budget
from kafkaref.properties.stateful import bind
from kafkaref.properties.storage_machine import StorageMachine

# Tiny sizes so a short walk rolls by size, age and full index, indexes sparsely, and retains.
SMALL = LogConfig(
    segment_bytes=1_200,
    segment_ms=60,
    segment_index_bytes=40,
    index_interval_bytes=150,
    retention_bytes=3_000,
    retention_ms=-1,
)
# validate_records=False takes append_as_leader's single-batch writev fast path.
FLUSHING = LogConfig(
    segment_bytes=2_000, index_interval_bytes=200, flush_messages=6, flush_ms=50, retention_ms=-1,
    validate_records=False,
)

# An index entry for every batch and room for only two: lookups and index-full rolls everywhere.
TINY_INDEX = LogConfig(segment_bytes=5_000, segment_index_bytes=16, index_interval_bytes=1,
                       retention_ms=-1, validate_records=False)

# The numbers: CPU-seconds per 300-step walk, measured (properties/profiles.py: deep's budget).
TestStorageMachine = fit_deep_budget(bind(StorageMachine, log_factory=Log, config=SMALL).TestCase, 0.125)
# The same walk through append_as_leader's one-batch fast path (rolls by size, age, full index).
TestStorageMachineFrameChecksOnly = fit_deep_budget(bind(
    StorageMachine, log_factory=Log, config=attrs.evolve(SMALL, validate_records=False)
).TestCase, 0.125)
TestStorageMachineTinyIndex = fit_deep_budget(bind(StorageMachine, log_factory=Log, config=TINY_INDEX).TestCase, 0.175)
TestStorageMachineWithFlushPolicy = bind(StorageMachine, log_factory=Log, config=FLUSHING).TestCase
TestStorageMachineWithFlushPolicy.settings = settings(max_examples=25)


@pytest.mark.slow
@pytest.mark.parametrize("config", [SMALL, TINY_INDEX, FLUSHING], ids=["small", "tiny", "flush"])
def test_storage_machine_long_walks(config):
    run_state_machine_as_test(
        bind(StorageMachine, log_factory=Log, config=config),
        settings=settings(max_examples=400, stateful_step_count=120, deadline=None,
                          suppress_health_check=list(HealthCheck)),
    )


@pytest.mark.parametrize("mutant", ["M6", "M7", "M8", "M13"])
def test_machine_catches_mutant(mutant):
    machine = bind(StorageMachine, log_factory=Log, config=LogConfig(**{
        **{name: getattr(SMALL, name) for name in (
            "segment_bytes", "segment_ms", "segment_index_bytes", "index_interval_bytes",
            "retention_bytes", "retention_ms")},
        "mutants": {mutant},
    }))
    # Hypothesis raises the AssertionError, or an ExceptionGroup when it finds several failures.
    with pytest.raises((AssertionError, ExceptionGroup)):
        run_state_machine_as_test(
            machine,
            settings=settings(max_examples=60, stateful_step_count=40, derandomize=True,
                              database=None, deadline=None, print_blob=False,
                              phases=[Phase.generate],  # found is enough: no shrinking
                              suppress_health_check=list(HealthCheck)),
        )


def test_twin_durability_after_recovery_to_an_empty_segment(monkeypatch):
    """Found by the long tiny-index walk: recovery cut the only segment (below the log start)
    to empty, so the twin restarted at that segment's base; it must not go on claiming the old
    empty leo as durable (the log never said so), or a later crash looks like lost data."""
    from kafkaref.impl.protocol.compression import Compression
    from kafkaref.properties import storage_machine

    monkeypatch.setattr(storage_machine, "note", lambda text: None)  # run outside Hypothesis
    machine = StorageMachine(Log, TINY_INDEX)
    invariants = [machine.offsets_match, machine.files_are_whole, machine.contents_match,
                  machine.epochs_match, machine.durable_within_log, machine.segment_times_match]
    steps = [
        *[lambda: machine.append_as_follower(counts=1, value_bytes=0, gap=0, bump=False)] * 3,
        lambda: machine.append_as_leader(counts=[2], value_bytes=0, codec=Compression.none,
                                         bump=False),
        lambda: machine.delete_records(where=495),
        lambda: machine.truncate(where=0),
        lambda: machine.crash_and_recover(power_loss=True, cut_fractions=[0.0] * 4, garbage=b""),
        lambda: machine.append_as_follower(counts=1, value_bytes=0, gap=0, bump=False),
        lambda: machine.crash_and_recover(power_loss=True, cut_fractions=[0.0] * 4, garbage=b""),
    ]
    try:
        for step in steps:
            step()
            for check in invariants:
                check()
    finally:
        machine.teardown()
