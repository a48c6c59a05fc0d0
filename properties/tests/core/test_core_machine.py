"""The core cluster state machine: correct configuration passes; each mutant is caught.

Random walks find M1 and M2 quickly; M4, M5, M14 and M15 need an interleaving the walk finds only
by luck, so each has a scripted scenario here that breaks an invariant only with its mutant. (M4
was a random-walk test until the walk, derandomized but drawing from Hypothesis's pool of source
constants, stopped finding it in 300 examples once more modules were imported: profiles.py.) (M3, M10 and M11 are
caught by scenario tests in test_core_replica_manager.py: crashes in this machine keep the page
cache, so a lone-ISR leader's acknowledged writes survive.)"""

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from kafkaref.properties.core_machine import CoreCluster, CoreMachine
from kafkaref.properties.profiles import fit_deep_budget
from kafkaref.properties.stateful import bind

# 0.16 CPU-seconds per 300-step walk, measured (properties/profiles.py: deep's budget).
TestCoreCluster = fit_deep_budget(bind(CoreMachine, factory=lambda: CoreCluster(brokers=3)).TestCase, 0.16)


@pytest.mark.parametrize("mutants", [
    {"partition_mutants": {"M1"}},
    {"partition_mutants": {"M2"}},
])
def test_mutant_is_caught(mutants):
    machine = bind(CoreMachine, factory=lambda: CoreCluster(brokers=3, **mutants))
    with pytest.raises((AssertionError, ExceptionGroup)) as caught:
        run_state_machine_as_test(machine, settings=settings(max_examples=300,
                                                             stateful_step_count=40))
    if isinstance(caught.value, ExceptionGroup):  # several distinct invariant failures
        assert caught.value.subgroup(AssertionError) is not None
        assert caught.value.split(AssertionError)[1] is None


def violations(cluster):
    """Names of the machine's invariants the cluster breaks now."""
    machine = CoreMachine(lambda: cluster)
    broken = []
    for check in (machine.spec_invariants_hold,
                  machine.client_properties_hold):
        try:
            check()
        except AssertionError as exc:
            broken.append(str(exc)[:80])
    return broken


def scenario_m4(mutants):
    """A consumer reads two acks=1 records above the hw; the leader dies before a follower
    copied them, and the new leader writes over their offsets: with M4 they were consumed."""
    c = CoreCluster(brokers=3, partition_mutants=mutants)
    c.produce(0, 1, 2)
    c.consumer_fetch(0, 0)
    c.crash(0)
    c.elect(1)
    c.propagate(1)
    c.produce(1, 1, 1)
    return c


def scenario_m5(mutants):
    """A follower with an uncommitted tail and a lagging hw meets a diverging epoch; with M5 it
    truncates to its hw, losing committed records; then it is the only ISR member left."""
    c = CoreCluster(brokers=3, partition_mutants=mutants)
    c.produce(0, -1, 2)  # batch A,B
    c.produce(0, 1, 1)  # batch C
    c.replicate(1)  # F gets A,B,C with hw 0
    c.replicate(1)  # F reports leo 3 (hw still 0: G has nothing)
    c.replicate(2, max_bytes=1)  # G gets A,B only
    c.replicate(2, drop=True)  # G reports leo 2: hw 2, A,B acknowledged
    assert c.acked == {0: 0, 1: 1}
    c.crash(0)
    c.elect(2)
    for b in (1, 2):
        c.propagate(b)
    assert c.replicate(1) == "truncated"
    c.crash(2)
    c.propagate(1)
    return c


def scenario_m14(controller_mutants):
    """A new leader in the same epoch hides a divergent tail from the returning old leader."""
    c = CoreCluster(brokers=3, controller_mutants=controller_mutants)
    c.crash(2)
    c.propagate(0)
    c.produce(0, 1, 1)  # A
    c.replicate(1)
    c.replicate(1)  # hw 1
    c.produce(0, 1, 1)  # B, on the leader only
    c.crash(0)
    c.propagate(1)
    c.produce(1, 1, 1)  # X at offset 1 on the new leader
    c.restart(0)
    c.propagate(1)
    for _ in range(3):
        c.replicate(0)
    while c.proposals:
        c.commit_isr_change()
    c.propagate(1)
    c.replicate(0)
    return c


def scenario_m15(mutants):
    """A follower with an empty log fetches from a leader whose hw is 2; with M15 the leader
    admits it to the ISR at once."""
    c = CoreCluster(brokers=3, partition_mutants=mutants)
    c.crash(2)
    c.propagate(0)
    c.produce(0, 1, 2)
    c.replicate(1)
    c.replicate(1)
    assert c.partition(0).high_watermark == 2
    c.restart(2)
    c.replicate(2, drop=True)
    while c.proposals:
        c.commit_isr_change()
    c.propagate(0)
    return c


@pytest.mark.parametrize("scenario, mutant", [
    (scenario_m4, {"M4"}), (scenario_m5, {"M5"}), (scenario_m14, {"M14"}), (scenario_m15, {"M15"})])
def test_scenario_breaks_only_with_its_mutant(scenario, mutant):
    assert violations(scenario(frozenset())) == []
    assert violations(scenario(mutant)) != []


def test_a_stale_image_does_not_drop_a_pending_isr_member():
    """B8 on the real code path: the leader proposes adding a follower; an image sent before
    the controller handled that proposal arrives; the leader must keep counting the follower
    in its maximal ISR, or the hw passes it just before the controller accepts it."""
    c = CoreCluster(brokers=3)
    c.crash(2)
    c.propagate(0)
    c.restart(2)
    c.replicate(2)  # caught up (empty log, hw 0): expansion {0,1,2} proposed
    assert c.partition(0).pending_isr == {0, 1, 2}
    c.propagate(0)  # the stale image: ISR {0,1}
    assert c.partition(0).maximal_isr == {0, 1, 2}
    c.produce(0, 1, 2)
    c.replicate(1)
    c.replicate(1)
    assert c.partition(0).high_watermark == 0  # follower 2 has nothing yet
    c.commit_isr_change()
    assert violations(c) == []


def storage_cluster():
    import shutil
    import tempfile

    from kafkaref.impl.storage.config import LogConfig
    from kafkaref.impl.storage.log import Log

    root = tempfile.mkdtemp(prefix="core-machine-")
    cluster = CoreCluster(brokers=3, log_factory=lambda b: Log(
        f"{root}/broker-{b}", LogConfig(segment_bytes=4096)))  # small segments: rolls happen
    cluster.cleanup = lambda: shutil.rmtree(root, ignore_errors=True)
    return cluster


class StorageCoreMachine(bind(CoreMachine, factory=storage_cluster)):
    """The core on impl/storage's segmented logs instead of MemoryLog."""

    def teardown(self):
        for log in self.cluster.logs.values():
            log.close()
        self.cluster.cleanup()


TestCoreOnStorage = StorageCoreMachine.TestCase
TestCoreOnStorage.settings = settings(max_examples=25, stateful_step_count=30)
