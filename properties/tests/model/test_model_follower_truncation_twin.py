"""The model's follower truncation point (model/helpers.follower_truncation) and the broker's
(impl/replication/apply.divergence_target) are two statements of Kafka's
getOffsetTruncationState, one per level: they agree on every input the model allows. Found by
mutation testing (docs/mutation.md): the model's unknown-epoch branch negated passed the model's
own tests."""

from hypothesis import example, given
from hypothesis import strategies as st

from kafkaref.impl.core.epoch_cache import EpochCache
from kafkaref.impl.replication.apply import divergence_target
from kafkaref.model.helpers import UNDEFINED, follower_truncation


@st.composite
def follower(draw):
    starts = sorted(draw(st.lists(st.integers(0, 30), max_size=5)))
    epochs = sorted(draw(st.sets(st.integers(0, 9), min_size=len(starts), max_size=len(starts))))
    cache = list(zip(epochs, starts, strict=True))
    end = draw(st.integers(max(starts, default=0), 40))
    return cache, end, draw(st.integers(0, end))


@given(follower(), st.integers(UNDEFINED, 10), st.integers(UNDEFINED, 45))
@example(([], 0, 0), UNDEFINED, 0)  # every branch at offset 0: an empty follower, an empty leader
@example(([], 0, 0), 0, 0)
@example(([(0, 0)], 3, 1), 0, 0)
@example(([(1, 0)], 3, 1), 0, 0)
def test_model_and_broker_truncate_at_the_same_offset(own, leader_epoch, leader_end):
    cache, end, hw = own
    epochs = EpochCache()
    for epoch, start in cache:
        epochs.assign(epoch, start)
    model = follower_truncation(leader_epoch, leader_end, tuple(epochs.entries), end, hw)
    broker = max(0, min(divergence_target(epochs, end, hw, leader_epoch, leader_end), end))
    assert model == broker
