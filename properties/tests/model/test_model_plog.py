"""Naive twins: the persistent log against a plain tuple, the hw and epoch helpers against
brute-force definitions; the model's hw rule against the spec's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model import plog
from kafkaref.model.helpers import assign_epoch, end_offset_for_epoch, high_watermark
from kafkaref.model.plog import PLog
from kafkaref.spec.helpers import high_watermark_after_fetches

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 2 * plog.CHUNK + 3)),
        st.tuples(st.just("truncate"), st.integers(-1, 4 * plog.CHUNK)),
    ),
    max_size=12,
)


@given(ops, st.integers(0, 5 * plog.CHUNK), st.integers(0, 5 * plog.CHUNK))
def test_plog_behaves_like_a_tuple(operations, start, stop):
    log, twin, counter = PLog(), (), 0
    for op, n in operations:
        if op == "append":
            entries = tuple(range(counter, counter + n))
            counter += n
            log, twin = log.append(entries), twin + entries
        else:
            log, twin = log.truncate(n), twin[: max(n, 0)]
        assert len(log) == len(twin) and tuple(log) == twin and bool(log) == bool(twin)
        assert log == PLog.of(twin) and hash(log) == hash(PLog.of(twin))
    assert log.slice(start, stop) == twin[start:stop] == log[start:stop]
    assert log.last == (twin[-1] if twin else None)
    if twin:
        assert log[start % len(twin)] == twin[start % len(twin)] and log[-1] == twin[-1]


@given(st.integers(0, 20), st.lists(st.integers(-1, 30), max_size=4), st.booleans(), st.integers(0, 10))
def test_high_watermark_is_the_brute_force_minimum(leo, ends, gated, lag):
    hw = max(0, leo - lag)
    expected = hw if gated else max(hw, min([leo, *ends]))
    assert high_watermark(hw, leo, ends, gated) == expected


@given(st.integers(0, 20), st.lists(st.integers(0, 30), max_size=4), st.integers(0, 10))
def test_the_model_states_the_hw_rule_as_the_spec_does(leo, ends, lag):
    """spec/helpers and model/helpers each state the hw rule, independently by design: wherever
    both apply (every member's log end known, the hw not gated) they must agree."""
    hw = max(0, leo - lag)
    assert high_watermark(hw, leo, ends, gated=False) == high_watermark_after_fetches(
        hw, [leo, *ends])


epochs = st.lists(st.integers(0, 6), max_size=8).map(lambda xs: sorted(set(xs)))


def end_offset_by_scan(log: list[int], requested: int) -> tuple[int, int]:
    """Where epoch `requested` ends, read off the records' epochs directly."""
    if requested == -1:
        return -1, -1
    if log and log[-1] == requested:
        return requested, len(log)
    later = [offset for offset, epoch in enumerate(log) if epoch > requested]
    if not later:
        return -1, -1
    earlier = [epoch for epoch in log if epoch <= requested]
    return (earlier[-1] if earlier else requested), later[0]


@given(epochs, st.integers(1, 3), st.integers(-1, 8))
def test_end_offset_for_epoch_matches_a_scan_of_the_log(epoch_list, per_epoch, requested):
    log = [e for e in epoch_list for _ in range(per_epoch)]
    cache = ()
    for offset, epoch in enumerate(log):
        cache = assign_epoch(cache, epoch, offset)
    assert cache == tuple((e, log.index(e)) for e in epoch_list)
    assert end_offset_for_epoch(cache, len(log), requested) == end_offset_by_scan(log, requested)
