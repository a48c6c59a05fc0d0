"""Truncation on a diverging epoch: the model and the core decide the same point, as Kafka's
fetcher does (AbstractFetcherThread.getOffsetTruncationState), and never cut inside a batch.

The scripted walk is the one deep-length lockstep walks found (docs/lockstep.md, rule 20): a
follower holding one batch of two epoch-0 records, its cache also naming an epoch 2 it led
without appending, fetches from the leader of epoch 3 whose log is one epoch-1 record. The
leader answers diverging epoch (1, end 1), an epoch the follower never had: the follower cuts
only at its own end of epoch 0 (2, an intermediate point; no record goes, the empty epoch 2
leaves its cache), and its next fetch, naming epoch 0, gets (0, 0) and empties the log at the
batch boundary. The core used to cut at min(1, 2) = 1, inside the batch.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.replication.apply import divergence_target
from kafkaref.impl.storage.epoch_cache import LeaderEpochCache
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import ReplicaFetchResult
from kafkaref.model.events import Elect, Produce
from kafkaref.model.helpers import follower_truncation
from kafkaref.properties.lockstep import (
    CoreLockstep,
    core_image,
    describe_difference,
    observable_state,
    same_effects_any_order,
)

CONFIG = ClusterConfig(brokers=3, partitions=1, replication_factor=3, min_insync_replicas=1)
FOLLOWER, LEADER = 0, 1


def _step(model: ReferenceModel, core: CoreLockstep, event):
    expected, actual = model.feed(event), core.feed(event)
    assert same_effects_any_order(expected, actual), f"{event}\nmodel {expected}\ncore  {actual}"
    image = core_image(core)
    assert observable_state(model.state) == observable_state(image), (
        describe_difference(model.state, image))
    return expected


def _follower_fetch(model: ReferenceModel, core: CoreLockstep) -> ReplicaFetchResult:
    (effect,) = _step(model, core, replica_fetch_for(model.state, FOLLOWER, 0))
    return effect


def test_a_divergence_on_an_epoch_the_follower_never_had_cuts_at_a_batch_boundary():
    model, core = ReferenceModel(CONFIG), CoreLockstep(CONFIG)
    for event in (
        Elect(partition=0, leader=FOLLOWER),  # epoch 0
        Produce(request_id=1, broker=FOLLOWER, partition=0, values=(b"a", b"b"), acks=1),
        Elect(partition=0, leader=LEADER),  # epoch 1
        Produce(request_id=2, broker=LEADER, partition=0, values=(b"c",), acks=1),
        Elect(partition=0, leader=FOLLOWER),  # epoch 2, nothing written
        Elect(partition=0, leader=LEADER),  # epoch 3
    ):
        _step(model, core, event)
    follower = model.state.partitions[0].replicas[FOLLOWER]
    assert (follower.leo, follower.epoch_cache) == (2, ((0, 0), (2, 2)))

    first = _follower_fetch(model, core)
    assert (first.diverging, first.truncated_to) == ((1, 1), 2)
    follower = model.state.partitions[0].replicas[FOLLOWER]
    assert (follower.leo, follower.epoch_cache) == (2, ((0, 0),))  # intermediate: no record goes

    second = _follower_fetch(model, core)
    assert (second.diverging, second.truncated_to) == ((0, 0), 0)
    assert core.partition(FOLLOWER, 0).log_end_offset == 0  # reported point == leo

    third = _follower_fetch(model, core)
    assert third.appended == 1  # the follower fetches the leader's record
    replicas = model.state.partitions[0].replicas
    assert tuple(replicas[FOLLOWER].log) == tuple(replicas[LEADER].log)


# Epoch caches as a follower builds them: strictly increasing epochs and start offsets.
caches = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=4).map(
    lambda pairs: tuple(sorted({e: s for e, s in pairs}.items())))


@given(cache=caches, extra=st.integers(0, 3), hw=st.integers(0, 9),
       leader_epoch=st.integers(-1, 7), leader_end=st.integers(-1, 9))
def test_the_core_truncation_point_is_the_models(cache, extra, hw, leader_epoch, leader_end):
    """One rule, two implementations (impl/ does not import model/): they agree on every input
    the fetch path can pass them."""
    starts = [s for _, s in cache]
    if any(b <= a for a, b in zip(starts, starts[1:], strict=False)):
        return  # not a cache a log builds (starts strictly increase here)
    leo = (starts[-1] if starts else 0) + extra
    hw = min(hw, leo)
    if leader_epoch < 0 and leader_end < 0:
        return  # no divergence: the fetch path does not truncate
    expected = follower_truncation(leader_epoch, leader_end, cache, leo, hw)
    actual = divergence_target(LeaderEpochCache(None, cache), leo, hw, leader_epoch, leader_end)
    assert actual == expected
