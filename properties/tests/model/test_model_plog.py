"""Naive twins: the persistent log against a plain tuple, the hw and epoch helpers against
brute-force definitions; the model's hw rule against the spec's."""

from __future__ import annotations

from hypothesis import example, given
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


def chunk_edges(length: int) -> list[int]:
    """The offsets where chunk arithmetic goes wrong if it is off by one: each chunk boundary,
    one either side, and the log's ends."""
    edges = {0, 1, length - 1, length, length + 1}
    for k in range(length // plog.CHUNK + 2):
        edges.update(k * plog.CHUNK + d for d in (-1, 0, 1))
    return sorted(e for e in edges if 0 <= e <= length + 1)


@given(st.one_of(st.integers(0, 4 * plog.CHUNK + 2),
                 st.builds(lambda k, d: max(0, k * plog.CHUNK + d), st.integers(0, 4),
                           st.integers(-1, 1))),
       st.lists(st.integers(1, plog.CHUNK + 1), max_size=4))
@example(1, [])  # one entry: a log that is not empty
@example(3 * plog.CHUNK + 1, [])  # a slice over two chunks with a full chunk after them
@example(2 * plog.CHUNK, [])  # full chunks, an empty tail: the last entry is the last chunk's
def test_plog_agrees_with_its_tuple_at_every_chunk_edge(length, pieces):
    """Every slice, index, truth value and equality of a log, taken at the chunk edges, is the
    plain tuple's (the random operations above rarely land on an edge). Found by mutation
    testing: a one-entry log read as empty, a slice reading one chunk past its end, an
    equality that matched two short logs with different entries and the last entry of a log
    without a tail taken from its first chunk all passed the model layer (00016, 00044, 00056,
    00228 of the fresh sample)."""
    entries, log, done = tuple(range(length)), PLog(), 0
    for piece in [*pieces, length]:  # appended in pieces, the rest at the end
        log, done = log.append(entries[done : min(done + piece, length)]), min(done + piece, length)
    assert tuple(log) == entries and len(log) == length and bool(log) == (length > 0)
    assert log.last == (entries[-1] if entries else None)
    edges = chunk_edges(length)
    for start in edges:
        for stop in edges:
            assert log.slice(start, stop) == entries[start:stop] == log[start:stop]
        if start < length:
            assert log[start] == entries[start] and log[-1 - start] == entries[-1 - start]
    for other in edges:
        assert (log == PLog.of(entries[:other])) == (other >= length)
        assert (log == PLog.of(tuple(-1 - e for e in entries))) == (length == 0)
