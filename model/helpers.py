"""Pure helpers of the model with PEP 316 contracts (`pre:` / `post:`), checked by CrossHair
(`tox -e crosshair`). They take plain tuples and ints, so CrossHair can reason about them.

An epoch cache is a tuple of (leader epoch, start offset) pairs, ascending in both.
"""

from __future__ import annotations

from collections.abc import Sequence

UNDEFINED = -1


def end_offset_for_epoch(
    cache: Sequence[tuple[int, int]], log_end_offset: int, epoch: int
) -> tuple[int, int]:
    """Kafka's answer to "where does `epoch` end in this log?" (LeaderEpochFileCache.endOffsetFor):
    the latest epoch itself ends at the log end offset; an older epoch ends where the next larger
    epoch starts, reported with the largest known epoch <= `epoch` (or `epoch` itself when the
    cache knows none that small); (UNDEFINED, UNDEFINED) when no larger epoch is known.

    pre: log_end_offset >= 0 and epoch >= UNDEFINED
    pre: all(cache[i][0] < cache[i + 1][0] and cache[i][1] <= cache[i + 1][1] for i in range(len(cache) - 1))
    pre: all(known >= 0 and 0 <= start <= log_end_offset for known, start in cache)
    post: __return__ == (UNDEFINED, UNDEFINED) or __return__[0] <= epoch
    post: __return__[1] <= log_end_offset
    post: not cache or cache[-1][0] != epoch or __return__ == (epoch, log_end_offset)
    """
    if epoch == UNDEFINED:
        return UNDEFINED, UNDEFINED
    if cache and cache[-1][0] == epoch:
        return epoch, log_end_offset
    floor = None
    for known, start in cache:
        if known > epoch:
            return (epoch if floor is None else floor), start
        floor = known
    return UNDEFINED, UNDEFINED


def follower_truncation(
    leader_epoch: int,
    leader_end_offset: int,
    own_cache: Sequence[tuple[int, int]],
    own_end_offset: int,
    own_hw: int,
) -> int:
    """Where a follower truncates on a diverging-epoch fetch response (fetch v12+, the modern
    form of KIP-320). Kafka's getOffsetTruncationState; where the follower's own epoch for that
    offset differs from the leader's, the cut is an intermediate point and the follower's next
    fetch, naming its then latest epoch, finds the rest (Kafka's truncationCompleted=false
    needs no flag here: the next fetch's last_fetched_epoch carries it).

    pre: leader_epoch >= UNDEFINED and leader_end_offset >= UNDEFINED
    pre: 0 <= own_hw <= own_end_offset
    pre: all(known >= 0 and 0 <= start <= own_end_offset for known, start in own_cache)
    pre: all(own_cache[i][0] < own_cache[i + 1][0] and own_cache[i][1] <= own_cache[i + 1][1] for i in range(len(own_cache) - 1))
    post: 0 <= __return__ <= own_end_offset
    """
    if leader_end_offset == UNDEFINED:  # past here both ends are offsets, never negative
        return min(own_hw, own_end_offset)
    if leader_epoch == UNDEFINED:
        return min(leader_end_offset, own_end_offset)
    own_epoch, own_end = end_offset_for_epoch(own_cache, own_end_offset, leader_epoch)
    if own_end == UNDEFINED:
        return min(leader_end_offset, own_end_offset)
    if own_epoch != leader_epoch:
        return min(own_end, own_end_offset)
    return min(leader_end_offset, own_end)


def high_watermark(
    hw: int, leader_end_offset: int, follower_end_offsets: Sequence[int], gated: bool
) -> int:
    """The leader's hw: the smallest log end offset over the (maximal) ISR, the leader's own
    included, never lower than before. `gated` (the ISR is below min.insync.replicas, KIP-966)
    freezes it. A follower that has not fetched in this epoch reports -1 and holds it still.

    The model's one statement of the hw rule (model/step.py `_leader_hw` picks the members and
    the gate). spec/helpers.py `high_watermark_after_fetches` states it for the spec,
    independently and on purpose (two descriptions, compared by refinement, not one borrowed);
    properties/tests/model/test_model_plog.py `test_the_model_states_the_hw_rule_as_the_spec_does`
    holds them equal, and test_core_hw_fast_paths holds impl/core's statement
    (Partition.maybe_increment_hw) to this one.

    pre: 0 <= hw <= leader_end_offset
    post: hw <= __return__ <= leader_end_offset
    post: not gated or __return__ == hw
    post: __return__ == hw or all(__return__ <= e for e in follower_end_offsets)
    """
    if gated:
        return hw
    low = leader_end_offset
    for end in follower_end_offsets:
        if end < low:
            low = end
    return low if low > hw else hw


def trim_epoch_cache(cache: tuple[tuple[int, int], ...], end_offset: int) -> tuple[tuple[int, int], ...]:
    """The cache after truncating the log to `end_offset`: epochs starting at or beyond it go
    (Kafka's truncateFromEnd).

    pre: end_offset >= 0
    pre: all(cache[i][1] < cache[i + 1][1] for i in range(len(cache) - 1))
    post: all(start < end_offset for _, start in __return__)
    post: __return__ == cache[:len(__return__)]
    """
    keep = len(cache)
    while keep and cache[keep - 1][1] >= end_offset:
        keep -= 1
    return cache if keep == len(cache) else cache[:keep]


def trim_epoch_cache_start(cache: tuple[tuple[int, int], ...],
                           start_offset: int) -> tuple[tuple[int, int], ...]:
    """The cache after the log start moved up to `start_offset` (DeleteRecords): epochs wholly
    before it go, the one covering it is moved to start there (Kafka's truncateFromStart).

    pre: start_offset >= 0
    pre: all(cache[i][1] < cache[i + 1][1] for i in range(len(cache) - 1))
    post: all(start >= start_offset for _, start in __return__)
    post: len(__return__) <= len(cache)
    """
    kept = tuple(pair for pair in cache if pair[1] >= start_offset)
    covering = [pair for pair in cache if pair[1] < start_offset]
    if covering and (not kept or kept[0][1] > start_offset):
        kept = ((covering[-1][0], start_offset), *kept)
    return kept


def assign_epoch(cache: tuple[tuple[int, int], ...], epoch: int, start_offset: int) -> tuple[tuple[int, int], ...]:
    """Record that `epoch` starts at `start_offset` (a new leader, or a follower appending a
    batch), as Kafka's LeaderEpochFileCache.assign does: nothing to do when it is the latest
    epoch already; otherwise trailing entries with an epoch >= `epoch` or a start offset >=
    `start_offset` are dropped first, so the cache stays strictly increasing in both (an epoch
    without records has no range, and an old epoch appended again replaces newer empty ones).

    pre: start_offset >= 0 and epoch >= 0
    pre: all(cache[i][0] < cache[i + 1][0] and cache[i][1] < cache[i + 1][1] for i in range(len(cache) - 1))
    post: all(__return__[i][0] < __return__[i + 1][0] and __return__[i][1] < __return__[i + 1][1] for i in range(len(__return__) - 1))
    post: len(__return__) <= len(cache) + 1
    post: __return__ == cache or __return__[-1] == (epoch, start_offset)
    """
    if cache and cache[-1][0] == epoch and start_offset >= cache[-1][1]:
        return cache
    keep = len(cache)
    while keep and (cache[keep - 1][0] >= epoch or cache[keep - 1][1] >= start_offset):
        keep -= 1
    return cache[:keep] + ((epoch, start_offset),)


BATCH_HEADER_BYTES = 61  # a v2 record batch's header (docs/semantics.md)


def varint_size(value: int) -> int:
    """Bytes of a zigzag varint (the record format's lengths and deltas).

    pre: -(2**31) <= value < 2**31
    post: 1 <= __return__ <= 5
    """
    zigzag = (value << 1) ^ (value >> 31)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def record_bytes(value_length: int, offset_delta: int) -> int:
    """Bytes one record takes in a v2 batch as the model's clients write it: no key, no
    headers, the batch's timestamp (delta 0): the length prefix, then attributes, timestamp
    delta, offset delta, key length (-1), value length, value, header count.

    pre: value_length >= 0 and 0 <= offset_delta < 2**31
    post: __return__ > value_length
    """
    body = 4 + varint_size(offset_delta) + varint_size(value_length) + value_length
    return varint_size(body) + body


def batch_size(value_lengths) -> int:
    """Bytes of a v2 batch holding values of these lengths, as Kafka counts them for fetch
    min_bytes / max_bytes (whole batches: at least one, then more within max_bytes).

    post: __return__ >= BATCH_HEADER_BYTES
    """
    return BATCH_HEADER_BYTES + sum(record_bytes(n, i) for i, n in enumerate(value_lengths))
