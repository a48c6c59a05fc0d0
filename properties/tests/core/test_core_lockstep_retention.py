"""Retention in lockstep (model/MODEL.md "Retention", docs/lockstep.md): a run that moved a
replica's log start, leader or follower, with no request. The model and the core must then
answer alike: a deletion parked for a leader's own log start completes, fetches below a log
start are OFFSET_OUT_OF_RANGE, a follower whose own run moved it past its leader's keeps it and
answers EARLIEST with it once it leads, and a run above the hw or at the log start does
nothing."""

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

LEADER, FOLLOWER, OTHER = 0, 1, 2


def feed(model, core, event) -> tuple:
    expected, actual = model.feed(event), core.feed(event)
    assert same_effects_any_order(expected, actual), (event, expected, actual)
    assert observable_state(core_image(core)) == observable_state(model.state)
    return expected


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
