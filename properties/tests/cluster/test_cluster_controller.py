"""The controller's decisions, stepped directly with an injected clock (no processes)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.metadata import metadata_from_dict, metadata_to_dict
from kafkaref.properties.clock import ManualClock


def controller_state(n=3, unclean=False):
    """unclean None: the controller's default (clean, as Kafka's unclean.leader.election.enable)."""
    clock = ManualClock()
    chosen = {} if unclean is None else {"unclean_election": unclean}
    state = ControllerState(clock, session_timeout_ms=1000, **chosen)
    for broker_id in range(n):
        state.register(broker_id, "127.0.0.1", 9000 + broker_id)
    assert state.create_topic("t", 1, n, {"min.insync.replicas": "2"}) == (ErrorCode.none, None)
    return clock, state


def partition(state):
    return state.metadata.topic("t").partitions[0]


def test_leader_failure_elects_next_isr_member_with_a_new_epoch():
    clock, state = controller_state()
    assert (partition(state).leader, partition(state).leader_epoch) == (0, 0)
    clock.now_ms = 1500
    state.heartbeat(1)
    state.heartbeat(2)
    state.tick()
    p = partition(state)
    assert (p.leader, p.leader_epoch, p.isr) == (1, 1, (1, 2))
    assert {b.broker_id for b in state.metadata.brokers} == {1, 2}


def test_no_clean_candidate_means_offline_unless_unclean():
    # None: left out, clean by default (the fresh sample's 00115 made it unclean unseen)
    for unclean, expected_leader in ((None, -1), (False, -1), (True, 2)):
        clock, state = controller_state(unclean=unclean)
        assert state.alter_isr(0, "t", 0, 0, [0, 1]) == ErrorCode.none  # 2 fell behind
        clock.now_ms = 1500
        state.heartbeat(2)
        state.tick()
        assert partition(state).leader == expected_leader
        if not unclean:
            assert partition(state).isr == (0, 1) or set(partition(state).isr) <= {0, 1}
            state.register(1, "127.0.0.1", 9001)  # an ISR member returns: clean election
            assert partition(state).leader == 1


def test_alter_isr_only_from_current_leader_and_epoch_with_live_members():
    """Kafka's answers (ReplicationControlManager.validateAlterPartitionData; the order is held
    by test_cluster_controller_epochs' machine)."""
    clock, state = controller_state()
    assert state.alter_isr(1, "t", 0, 0, [0, 1]) == ErrorCode.invalid_request  # not the leader
    assert state.alter_isr(0, "t", 0, 5, [0, 1]) == ErrorCode.not_controller  # a newer epoch
    assert state.alter_isr(0, "t", 0, 0, [0, 7]) == ErrorCode.invalid_request  # 7: no replica
    assert state.alter_isr(0, "t", 0, 0, [1, 2]) == ErrorCode.invalid_request  # without the leader
    assert state.alter_isr(0, "t", 0, 0, [0, 1]) == ErrorCode.none
    assert partition(state).isr == (0, 1) and partition(state).partition_epoch == 1
    state.fence(2)
    assert state.alter_isr(0, "t", 0, 0, [0, 1, 2]) == ErrorCode.ineligible_replica  # 2 is down


def test_reregistration_fences_the_previous_incarnation():
    clock, state = controller_state()
    state.register(0, "127.0.0.1", 9100)
    p = partition(state)
    assert p.leader_epoch == 1 and p.leader != 0  # the old leader's epoch is over
    assert state.metadata.broker(0).port == 9100


def test_create_topic_validation_and_metadata_json_round_trip():
    _, state = controller_state()
    assert state.create_topic("t", 1, 1, {})[0] == ErrorCode.topic_already_exists
    assert state.create_topic("u", 1, 4, {})[0] == ErrorCode.invalid_replication_factor
    assert state.create_topic("bad name", 1, 1, {})[0] == ErrorCode.invalid_topic_exception
    assert state.create_topic("u", 0, 1, {})[0] == ErrorCode.invalid_partitions
    assert metadata_from_dict(metadata_to_dict(state.metadata)) == state.metadata


@pytest.mark.parametrize("automatic", [True, False])
def test_every_partition_change_bumps_the_partition_epoch(automatic):
    """KIP-497: each change of a partition's leader, ISR or ELR is a new partition epoch (Kafka's
    PartitionChangeBuilder: every PartitionChangeRecord increments it), whether the controller
    elects at once or waits for an explicit election. A leader's AlterPartition carries the
    epoch it knows, so a change the epoch did not record could be undone by a stale proposal.
    Found by mutation testing (docs/mutation.md): the explicit mode's bump read as `+ 0`."""
    clock = ManualClock()
    state = ControllerState(clock, session_timeout_ms=1000, automatic_elections=automatic)
    for broker_id in range(3):
        state.register(broker_id, "127.0.0.1", 9000 + broker_id)
    assert state.create_topic("t", 1, 3, {"min.insync.replicas": "2"}) == (ErrorCode.none, None)
    epochs = [partition(state).partition_epoch]
    for dead in (2, 0):  # a follower, then the leader
        state.fence(dead)
        epochs.append(partition(state).partition_epoch)
    assert epochs[0] < epochs[1] < epochs[2], epochs
