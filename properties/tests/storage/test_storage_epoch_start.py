"""An epoch's start offset (the leader's question when it checks its own epoch has begun: Kafka's
LeaderEpochFileCache.epochEntry) is the one its assignment recorded, None for an epoch never
recorded or truncated away. Found by mutation testing (docs/mutation.md): no storage test asked
the cache this, so a negated match went unnoticed in this layer."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.storage.epoch_cache import LeaderEpochCache

assignments = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 30)), max_size=8)


@given(assignments, st.integers(-1, 9))
def test_an_epochs_start_is_the_recorded_one(steps, epoch):
    cache = LeaderEpochCache(None)
    for assigned, start in steps:
        cache.assign(assigned, start)
    recorded = dict(cache.entries)
    assert cache.start_offset_of(epoch) == recorded.get(epoch)
