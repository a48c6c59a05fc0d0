"""The broker's leader epoch caches truncate as the model's rules do: from the start (the log
start moved up: Kafka's truncateFromStart, model/helpers.trim_epoch_cache_start) and from the
end (the log cut back: truncateFromEnd, trim_epoch_cache), after any sequence of assignments,
for the in-memory cache (MemoryLog's) and the persisted one (Log's, read back from its file).

Found by mutation testing (docs/mutation.md): session 67f0d62's mutant 00279 (the epoch moved to
the new log start inserted before the last entry instead of first) was killed only by the storage
machine's long walk, whose shrinking outlasted the layer's timeout on the loaded machine and
counted as a timeout; a cache of three entries shows it at once."""

import os
import tempfile

from hypothesis import example, given
from hypothesis import strategies as st

from kafkaref.impl.core.epoch_cache import EpochCache
from kafkaref.impl.storage.epoch_cache import FILE_NAME, LeaderEpochCache
from kafkaref.model.helpers import assign_epoch, trim_epoch_cache, trim_epoch_cache_start

# Any sequence of assignments (older epochs again, starts going back), and caches built from
# increasing entries directly: several epochs on each side of a truncation point, the shape
# where moving the covering epoch to the wrong place shows.
assignments = st.one_of(
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 30)), max_size=8),
    st.lists(st.tuples(st.integers(1, 3), st.integers(1, 6)), max_size=6).map(
        lambda steps: [(sum(e for e, _ in steps[:i + 1]), sum(o for _, o in steps[:i + 1]))
                       for i in range(len(steps))]),
)


def caches(steps, directory):
    """The cache built by steps, in memory and persisted (in directory)."""
    memory = EpochCache()
    for epoch, start in steps:
        memory.assign(epoch, start)
    path = os.path.join(directory, FILE_NAME)
    persisted = LeaderEpochCache(path)
    for epoch, start in steps:
        persisted.assign(epoch, start)
    return memory, persisted, path


def model_cache(steps):
    cache: tuple[tuple[int, int], ...] = ()
    for epoch, start in steps:
        cache = assign_epoch(cache, epoch, start)
    return cache


def read_back(cache, path):
    return LeaderEpochCache.load(path).entries if os.path.exists(path) else cache.entries


def check_truncation(steps, offset, truncate: str, model_rule) -> None:
    """Both caches built by steps, truncated by their method `truncate` at offset, hold what
    model_rule gives (the persisted one also once read back from its file)."""
    expected = list(model_rule(model_cache(steps), offset))
    with tempfile.TemporaryDirectory() as directory:
        memory, persisted, path = caches(steps, directory)
        for cache in (memory, persisted):
            getattr(cache, truncate)(offset)
            assert cache.entries == expected
        assert read_back(persisted, path) == expected


@given(assignments, st.integers(0, 35))
@example([(3, 10), (5, 15), (6, 20)], 12)  # the covering epoch goes first, before two others
def test_truncating_from_the_start_follows_the_model(steps, start_offset):
    check_truncation(steps, start_offset, "truncate_from_start", trim_epoch_cache_start)


@given(assignments, st.integers(0, 35))
def test_truncating_from_the_end_follows_the_model(steps, end_offset):
    check_truncation(steps, end_offset, "truncate_from_end", trim_epoch_cache)
