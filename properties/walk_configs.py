"""The three cluster configurations the random walks run on, one definition for every walk: the
model machine's (properties/tests/model/test_model_machine.py), the model and the impl core in
lockstep (properties/tests/core/test_core_lockstep.py) and `kafkaref bench lockstep`
(properties/lockstep_bench.py). A short lag time everywhere, so that ISR shrinks and expansions
happen within a walk."""

from __future__ import annotations

from kafkaref.model.config import ClusterConfig

# Three brokers, two partitions, the default safe configuration: min ISR 2.
SAFE = ClusterConfig(brokers=3, partitions=2, replication_factor=3, min_insync_replicas=2,
                     replica_lag_time_max_ms=500)

# min.insync.replicas = 1 with unclean election allowed (ELR and unclean elections happen): loss
# is then allowed, but only after an unclean election, which the properties take into account.
LOOSE = ClusterConfig(brokers=3, partitions=1, replication_factor=3, min_insync_replicas=1,
                      unclean_leader_election=True, replica_lag_time_max_ms=500)

# Two replicas on four brokers with a flush after every record (crashes lose nothing flushed).
FLUSHING = ClusterConfig(brokers=4, partitions=2, replication_factor=2, min_insync_replicas=2,
                         flush_interval_messages=1, replica_lag_time_max_ms=500)

WALK_CONFIGS = {"safe": SAFE, "loose": LOOSE, "flushing": FLUSHING}
