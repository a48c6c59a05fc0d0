"""The reference model in lockstep with the threaded broker: three in-process brokers and a
controller on 127.0.0.1 (ephemeral ports, a temporary directory), every client event a Kafka
request over a socket, compared with the model after every step (properties/threaded_machine.py
over properties/threaded_cluster.py).

A small walk in the default run; HYPOTHESIS_PROFILE=deep gives it a longer one."""

from __future__ import annotations

import os

from hypothesis import settings

from kafkaref.model.config import ClusterConfig
from kafkaref.properties.stateful import bind
from kafkaref.properties.threaded_cluster import ThreadedCluster
from kafkaref.properties.threaded_machine import ThreadedMachine

CONFIG = ClusterConfig(brokers=3, partitions=2, replication_factor=3, min_insync_replicas=2)
DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"

ThreadedLockstep = bind(ThreadedMachine, config=CONFIG, sut_factory=ThreadedCluster)
ThreadedLockstep.TestCase.settings = settings(
    settings(),  # the active profile (ci: derandomized, no database)
    max_examples=60 if DEEP else 6,
    stateful_step_count=100 if DEEP else 25,
)
TestThreadedLockstep = ThreadedLockstep.TestCase


ModelAlone = bind(ThreadedMachine, config=CONFIG)
ModelAlone.TestCase.settings = settings(settings(), max_examples=20 if DEEP else 5,
                                        stateful_step_count=40)
TestThreadedRulesOnTheModelAlone = ModelAlone.TestCase


def test_electing_the_current_leader_is_not_needed():
    """Found by the threaded lockstep: Kafka's ElectLeaders answers ELECTION_NOT_NEEDED when the
    replica asked for already leads (the model does too); the controller said INELIGIBLE_REPLICA."""
    from kio.schema.errors import ErrorCode

    from kafkaref.impl.controller.state import ControllerState

    state = ControllerState(lambda: 0)
    for broker_id in range(3):
        state.register(broker_id, "127.0.0.1", 9000 + broker_id)
    assert state.create_topic("t", 1, 3, {}) == (ErrorCode.none, None)
    assert state.elect_leader("t", 0, 0) == ErrorCode.election_not_needed
    assert state.elect_leader("t", 0, 1) == ErrorCode.none
    assert state.elect_leader("t", 0, 7) == ErrorCode.ineligible_replica


def test_the_lag_check_runs_at_the_fixed_rate_on_the_threaded_broker():
    """Found by the deep threaded walk: the adapter ran the broker's ISR check every logical ms,
    the model (as Kafka's isr-expiration task) every replica.lag.time.max.ms / 2. Followers last
    caught up at t=1, cut off from their leader, which then appends: a Tick to t=30002 made the
    broker check at 30002 (lagging 30001 > 30000 ms: shrink), the model at 15000 and 30000 only
    (29999: keep). Both now keep the ISR until the check at 45000."""
    machine = ThreadedLockstep()
    try:
        machine.tick(ms=1)
        machine.isolate(broker=0)
        machine.produce(p=0, to_leader=True, broker=0, acks=1, count=1, timeout_ms=1000)
        machine.tick(ms=CONFIG.replica_lag_time_max_ms + 1)  # compared at the settle point
        assert machine.model.state.partitions[0].control.isr == {0, 1, 2}
        machine.tick(ms=CONFIG.replica_lag_time_max_ms // 2)  # the check at 45000 shrinks
        assert machine.model.state.partitions[0].control.isr == {0}
    finally:
        machine.teardown()


def test_a_follower_left_behind_the_leaders_log_start_starts_again_there():
    """A follower cut off while DeleteRecords moves the leader's log start past its log end
    fetches out of range when it is back, asks the leader for its log start (ListOffsets
    EARLIEST, as Kafka's fetcher does) and starts there, empty; the lockstep holds it to the
    model after every step. Found by mutation testing: the threaded fetcher's out-of-range path
    ran in no test of its layer (the core lockstep drives the same rule without the request)."""
    machine = ThreadedLockstep()
    try:
        machine.tick(ms=1)
        follower = 2 if machine.model.state.partitions[0].control.leader != 2 else 1
        machine.isolate(broker=follower)
        machine.produce(p=0, to_leader=True, broker=0, acks=1, count=3, timeout_ms=1000)
        machine.tick(ms=CONFIG.replica_lag_time_max_ms + 1)
        machine.tick(ms=CONFIG.replica_lag_time_max_ms // 2)  # the ISR check drops the follower
        assert follower not in machine.model.state.partitions[0].control.isr
        machine.delete_records(p=0, to_leader=True, broker=0, back=-2, timeout_ms=1000)
        machine.heal(broker=follower)
        machine.tick(ms=1)
        replicas = machine.model.state.partitions[0].replicas
        leader = machine.model.state.partitions[0].control.leader
        assert replicas[follower].log_start == replicas[leader].log_start > 0
    finally:
        machine.teardown()
