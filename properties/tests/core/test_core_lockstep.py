"""The model and the impl core in lockstep (properties/lockstep.py): every event goes to both,
every answer and the observable state of every replica must be equal after every step."""

from __future__ import annotations

from kafkaref.model.config import ClusterConfig
from kafkaref.properties.lockstep import lockstep_machine

# Three brokers, two partitions, min ISR 2, a short lag time so ISR changes happen in a walk.
SAFE = ClusterConfig(brokers=3, partitions=2, replication_factor=3, min_insync_replicas=2,
                     replica_lag_time_max_ms=500)
TestCoreLockstepSafe = lockstep_machine(SAFE).TestCase

# min.insync.replicas = 1 with unclean election allowed (ELR and unclean elections happen).
LOOSE = ClusterConfig(brokers=3, partitions=1, replication_factor=3, min_insync_replicas=1,
                      unclean_leader_election=True, replica_lag_time_max_ms=500)
TestCoreLockstepLoose = lockstep_machine(LOOSE).TestCase

# Two replicas on four brokers with a flush after every record (crashes lose nothing flushed).
FLUSHING = ClusterConfig(brokers=4, partitions=2, replication_factor=2, min_insync_replicas=2,
                         flush_interval_messages=1, replica_lag_time_max_ms=500)
TestCoreLockstepFlushing = lockstep_machine(FLUSHING).TestCase
