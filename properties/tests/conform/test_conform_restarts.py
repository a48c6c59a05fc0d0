"""Conform after a restart: a broker's metadata learns of a restarted broker later than that
broker itself does, and nothing a check sizes may rest on the lagging view.

Found by the CI (leader_failover at its highest level, on kafkaref 3 nodes): the second level's
probe counted the brokers right after the first level's restart, met a bootstrap broker that did
not list the restarted one yet and created its topic with 2 replicas on 3 brokers; the leader
killed, min.insync.replicas 2 could not be met and the hw stayed below the acknowledged records.
"""

from __future__ import annotations

from types import SimpleNamespace

from kafkaref.chaos.conform.catalogue import HIGHEST, LOWEST, Check
from kafkaref.chaos.conform.faults import Target, rejoined
from kafkaref.chaos.conform.probe import Probe
from kafkaref.chaos.conform.runner import negotiate, run

FIRST, RESTARTED = ("127.0.0.1", 1), ("127.0.0.1", 2)


class LaggingView:
    """A probe over two brokers: the restarted one lists itself; the one probe.connect() reaches
    first lists it once `told` (its metadata cache was updated)."""

    def __init__(self, told: bool):
        self.told = told

    def connect(self, address=None):
        return SimpleNamespace(address=address or FIRST, close=lambda: None)

    def metadata(self, topics, conn):
        listed = [0, 1] if conn.address == RESTARTED or self.told else [0]
        return SimpleNamespace(brokers=[SimpleNamespace(node_id=n) for n in listed])


def test_a_restarted_broker_has_rejoined_only_once_the_first_bootstrap_broker_lists_it():
    target = Target(1, *RESTARTED)
    assert not rejoined(LaggingView(told=False), target)
    assert rejoined(LaggingView(told=True), target)


def test_every_level_of_every_check_gets_the_replication_factor_counted_before_any_fault(
        broker, monkeypatch):
    """The run counts the brokers once, as it starts; a later count (one broker fewer, as right
    after a restart) changes no check's replication factor."""
    counts = iter([3, 2, 2, 2, 2, 2])
    monkeypatch.setattr(Probe, "broker_count", lambda self: next(counts))
    seen = []

    def sizes(probe):
        """Records the replication factor its topics would get."""
        seen.append(probe.replication_factor())
        return "sized"

    checks = [Check(f"sizes-{i}", "test", sizes, "none", 10.0, (LOWEST, HIGHEST))
              for i in range(2)]
    result = run(broker.address, checks, options={}, timeout_s=5.0)
    assert [o.status for o in result.outcomes] == ["pass", "pass"]
    assert seen == [3, 3, 3, 3]
    assert negotiate(broker.address)  # the broker is still there: the run cleaned up only its own


def test_the_replication_factor_is_the_most_brokers_any_bootstrap_address_lists(broker, monkeypatch):
    """Found by the CI the next day (acks_all_visible passed a mutant at replication factor 1 on
    3 brokers): right after a cluster starts, the first bootstrap broker may list only itself.
    Every bootstrap address is asked and the largest count wins."""
    lagging, knowing = broker.address, f"localhost:{broker.address.rsplit(':', 1)[1]}"
    monkeypatch.setattr(Probe, "broker_count",
                        lambda self: 1 if self.bootstrap[0][0] == "127.0.0.1" else 3)
    seen = []

    def sizes(probe):
        seen.append(probe.replication_factor())
        return "sized"

    checks = [Check("sizes", "test", sizes, "none", 10.0, (LOWEST,))]
    result = run(f"{lagging},{knowing}", checks, options={}, timeout_s=5.0)
    assert [o.status for o in result.outcomes] == ["pass"]
    assert seen == [3]
