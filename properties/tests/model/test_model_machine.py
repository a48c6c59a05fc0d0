"""Hypothesis random walks over the model with many faults: the client-level properties and the
spec invariants (through the refinement image) hold after every step."""

from __future__ import annotations

from hypothesis import settings

from kafkaref.model.config import ClusterConfig
from kafkaref.properties.model_machine import make_model_machine

# Three brokers, two partitions, the default safe configuration; short lag time so ISR shrink
# and expansion happen within a walk.
SAFE = ClusterConfig(brokers=3, partitions=2, replication_factor=3, min_insync_replicas=2,
                     replica_lag_time_max_ms=500)
TestSafeClusterWalk = make_model_machine(SAFE).TestCase

# min.insync.replicas = 1 with unclean election allowed: loss is then allowed, but only after
# an unclean election, which the properties take into account.
LOOSE = ClusterConfig(brokers=3, partitions=1, replication_factor=3, min_insync_replicas=1,
                      unclean_leader_election=True, replica_lag_time_max_ms=500)
TestLooseClusterWalk = make_model_machine(LOOSE).TestCase

# Two replicas on four brokers with a flush after every record.
FLUSHING = ClusterConfig(brokers=4, partitions=2, replication_factor=2, min_insync_replicas=2,
                         flush_interval_messages=1, replica_lag_time_max_ms=500)
TestFlushingClusterWalk = make_model_machine(FLUSHING).TestCase


def _cap(test_case, max_examples: int) -> None:
    """Lower (never raise) the example count, so the deep profile's walks (300 steps each) stay
    within pytest's 10-minute timeout on a 2-core box."""
    current = test_case.settings
    test_case.settings = settings(current, max_examples=min(current.max_examples, max_examples))


_cap(TestSafeClusterWalk, 400)
_cap(TestLooseClusterWalk, 300)
_cap(TestFlushingClusterWalk, 30)
