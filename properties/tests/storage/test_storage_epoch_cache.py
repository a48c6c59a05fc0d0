"""The broker's leader epoch cache answers as the model's end_offset_for_epoch (Kafka's
LeaderEpochFileCache.endOffsetFor), for the in-memory cache (MemoryLog's) and the persisted one
(Log's, written through to its checkpoint file) alike.

The persisted twin is read back from its file before it is compared: EpochCache is
LeaderEpochCache without a path, so comparing two caches built in memory compared one class
with itself and could not fail; the file round trip (write-through on every assign, load) is
what differs between the two."""

import os
import tempfile

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.core.epoch_cache import EpochCache
from kafkaref.impl.storage.epoch_cache import FILE_NAME, LeaderEpochCache
from kafkaref.model.helpers import UNDEFINED, end_offset_for_epoch

assignments = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 30)), max_size=8)


def built(cache, steps):
    for epoch, start in steps:
        cache.assign(epoch, start)
    return cache


@given(assignments, st.integers(0, 40), st.integers(UNDEFINED, 10))
def test_end_offset_for_matches_the_model(steps, extra, epoch):
    memory = built(EpochCache(), steps)
    log_end = max([start for _, start in memory.entries], default=0) + extra
    expected = end_offset_for_epoch(tuple(memory.entries), log_end, epoch)
    assert memory.end_offset_for(epoch, log_end) == expected
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, FILE_NAME)
        built(LeaderEpochCache(path), steps)
        persisted = LeaderEpochCache.load(path) if os.path.exists(path) else LeaderEpochCache(path)
    assert persisted.entries == memory.entries
    assert persisted.end_offset_for(epoch, log_end) == expected


def test_truncation_drops_epochs_starting_at_or_after_the_end():
    cache = built(EpochCache(), [(1, 0), (3, 10), (4, 15)])
    cache.truncate_from_end(12)
    assert cache.entries == [(1, 0), (3, 10)]
    assert cache.end_offset_for(4, 12) == (UNDEFINED, UNDEFINED)


@given(assignments)
def test_assign_follows_the_model_rule(steps):
    """One rule for recording an epoch's start (Kafka's LeaderEpochFileCache.assign): the
    broker's caches agree with model/helpers.assign_epoch after any sequence of assignments."""
    from kafkaref.model.helpers import assign_epoch

    expected: tuple[tuple[int, int], ...] = ()
    for epoch, start in steps:
        expected = assign_epoch(expected, epoch, start)
    assert tuple(built(EpochCache(), steps).entries) == expected
    assert tuple(built(LeaderEpochCache(None), steps).entries) == expected
