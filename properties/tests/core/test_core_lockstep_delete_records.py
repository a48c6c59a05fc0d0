"""The log start in lockstep. DeleteRecords, where the random walk found the model and the core
apart: a deletion parked on a follower that never fetched in the epoch completes when that
follower crashes (it no longer counts for the low watermark), in the model as in the core,
before the controller's new epoch resets what the leader knew of its followers.

Retention (model/MODEL.md "Retention", docs/lockstep.md): a run that moved a replica's log
start, leader or follower, with no request. The model and the core must then answer alike: a
deletion parked for a leader's own log start completes, fetches below a log start are
OFFSET_OUT_OF_RANGE, a follower whose own run moved it past its leader's keeps it and answers
EARLIEST with it once it leads, and a run above the hw or at the log start does nothing."""

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
FOLLOWER, OTHER = 1, 2  # retention's tests: every follower fetches


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


# -- retention ---------------------------------------------------------------------------------


def started(records: int = 4):
    """Leader 0, every follower caught up (hw = leo = records)."""
    config = ClusterConfig()
    model, core = ReferenceModel(config), CoreLockstep(config)
    feed(model, core, ev.Elect(0, LEADER))
    for i in range(records):
        feed(model, core, ev.Produce(1 + i, LEADER, 0, (b"v%d" % i,), ev.ACKS_LEADER))
    for _ in range(3):
        for follower in (FOLLOWER, OTHER):
            feed(model, core, replica_fetch_for(model.state, follower, 0))
    return model, core


def log_starts(model):
    return [r.log_start for r in model.state.partitions[0].replicas]


def test_a_run_above_the_hw_or_at_the_log_start_deletes_nothing():
    model, core = started()
    assert feed(model, core, ev.Retention(LEADER, 0, 5)) == ()  # past the hw (4)
    assert feed(model, core, ev.Retention(LEADER, 0, 0)) == ()  # the log start already
    assert log_starts(model) == [0, 0, 0]


def test_a_leader_run_completes_a_parked_deletion_and_followers_follow():
    model, core = started()
    assert feed(model, core, ev.DeleteRecords(90, LEADER, 0, 1, 1000)) == ()  # parked
    feed(model, core, ev.Retention(FOLLOWER, 0, 3))
    feed(model, core, ev.Retention(OTHER, 0, 2))
    assert log_starts(model) == [1, 3, 2]
    # the followers' next fetches carry their log starts: the deletion's low watermark is 1
    answers = feed(model, core, replica_fetch_for(model.state, FOLLOWER, 0))
    answers += feed(model, core, replica_fetch_for(model.state, OTHER, 0))
    assert DeleteRecordsResponse(90, ErrorCode.none, 1, COMPLETED) in answers
    feed(model, core, ev.Retention(LEADER, 0, 4))
    assert feed(model, core, ev.ListOffsets(91, LEADER, 0, ev.EARLIEST))[0].offset == 4
    fetched = feed(model, core, ev.Fetch(92, LEADER, 0, 3))
    assert fetched[0].error == ErrorCode.offset_out_of_range
    assert model.check() == []


def test_a_follower_whose_own_run_passed_its_leaders_log_start_keeps_it_as_leader():
    model, core = started()
    feed(model, core, ev.Retention(FOLLOWER, 0, 3))
    feed(model, core, ev.Elect(0, FOLLOWER))
    assert feed(model, core, ev.ListOffsets(93, FOLLOWER, 0, ev.EARLIEST))[0].offset == 3
    for follower in (LEADER, OTHER):
        feed(model, core, replica_fetch_for(model.state, follower, 0))
    assert model.check() == []
