"""The model's epoch cache after its log start moves up (Kafka's truncateFromStart), over every
start offset of a few caches: epochs wholly before it go, the one covering it starts there, an
epoch starting exactly at it stays as it was, and no two entries ever share a start."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model.helpers import trim_epoch_cache_start

CACHES = st.lists(st.integers(1, 4), min_size=1, max_size=5).map(
    lambda gaps: tuple((epoch, sum(gaps[:epoch])) for epoch in range(len(gaps))))


def naive(cache, start_offset):
    covering = [epoch for epoch, start in cache if start <= start_offset]
    later = [(epoch, start) for epoch, start in cache if start > start_offset]
    return ((covering[-1], start_offset), *later) if covering else tuple(later)


@given(cache=CACHES, start_offset=st.integers(0, 25))
def test_trimming_the_start_keeps_the_covering_epoch_from_there(cache, start_offset):
    trimmed = trim_epoch_cache_start(cache, start_offset)
    assert trimmed == naive(cache, start_offset)
    assert len({start for _, start in trimmed}) == len(trimmed)


def test_an_epoch_starting_at_the_new_log_start_stays_alone():
    assert trim_epoch_cache_start(((0, 0), (1, 5), (2, 9)), 5) == ((1, 5), (2, 9))
