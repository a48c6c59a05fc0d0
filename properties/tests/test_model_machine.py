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
TestFlushingClusterWalk.settings = settings(TestFlushingClusterWalk.settings, max_examples=30)
