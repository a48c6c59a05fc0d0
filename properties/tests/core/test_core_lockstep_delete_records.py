"""DeleteRecords in lockstep, where the random walk found the model and the core apart: a
deletion parked on a follower that never fetched in the epoch completes when that follower
crashes (it no longer counts for the low watermark), in the model as in the core, before the
controller's new epoch resets what the leader knew of its followers."""

from kio.schema.errors import ErrorCode

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import COMPLETED, DeleteRecordsResponse
from kafkaref.properties.lockstep import (
    CoreLockstep,
    core_image,
    observable_state,
    same_effects_any_order,
)

LEADER, SILENT, FETCHING = 0, 1, 2


def feed(model, core, event) -> tuple:
    expected, actual = model.feed(event), core.feed(event)
    assert same_effects_any_order(expected, actual), (event, expected, actual)
    assert observable_state(core_image(core)) == observable_state(model.state)
    return expected


def test_a_parked_deletion_completes_when_the_follower_it_waits_for_crashes():
    config = ClusterConfig()
    model, core = ReferenceModel(config), CoreLockstep(config)
    feed(model, core, ev.Elect(0, LEADER))
    feed(model, core, ev.Produce(1, LEADER, 0, (b"a",), ev.ACKS_LEADER))
    for _ in range(3):
        feed(model, core, replica_fetch_for(model.state, FETCHING, 0))
    assert feed(model, core, ev.DeleteRecords(2, LEADER, 0, 0, 1000)) == ()  # SILENT: unknown
    assert feed(model, core, ev.CrashBroker(SILENT)) == (
        DeleteRecordsResponse(2, ErrorCode.none, 0, COMPLETED),)


def test_a_follower_keeps_its_hw_at_or_above_its_log_start():
    """An old leader that moved its log start (DeleteRecords) and then follows a new leader
    whose hw is still below that start keeps its hw at its log start, as Kafka's
    updateHighWatermark keeps it; it took the new leader's hw below its own log start."""
    config = ClusterConfig()
    model, core = ReferenceModel(config), CoreLockstep(config)
    feed(model, core, ev.Elect(0, 0))
    feed(model, core, ev.CrashBroker(2))
    feed(model, core, ev.Produce(1, 0, 0, (b"v0",), ev.ACKS_ALL, 0))
    for _ in range(2):
        feed(model, core, replica_fetch_for(model.state, 1, 0))
    feed(model, core, ev.DeleteRecords(2, 0, 0, 1, 0))  # leader 0's log start: 1
    feed(model, core, ev.Elect(0, 1))
    feed(model, core, replica_fetch_for(model.state, 0, 0))
    old_leader = model.state.partitions[0].replicas[0]
    assert (old_leader.log_start, old_leader.hw) == (1, 1)
    assert model.check() == []
