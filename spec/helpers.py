"""Pure helpers of the replication protocol, with contracts CrossHair verifies.

Contracts are PEP 316 docstring conditions (`pre:` / `post:`), which `crosshair check` reads
without flags and which cost nothing at run time. `tox -e crosshair` checks this module.

Logs here are tuples of (record id, leader epoch) pairs, exactly spec.state.Record, so the same
functions serve the spec, the model and the tests. The offset of a record is its index.
"""

from __future__ import annotations

from collections.abc import Sequence

# (record id, leader epoch): spec.state.Record is a NamedTuple of exactly this shape.
Entry = tuple[int, int]


def offset_for_epoch(log: Sequence[Entry], epoch: int) -> int | None:
    """The leader's answer to "where does epoch `epoch` end?" (KIP-101's OffsetForLeaderEpoch).

    If the log's latest record is in `epoch`, the log end offset; otherwise the first offset of a
    record with a larger epoch; None when the log has no such record (KIP-101 then falls back to
    the follower's high watermark, which is the bug KIP-279 fixed).

    post: __return__ is None or 0 <= __return__ <= len(log)
    post: __return__ is None or all(entry[1] <= epoch for entry in log[:__return__]) or log[-1][1] == epoch
    post: (__return__ is None) == (len(log) == 0 or (log[-1][1] != epoch and all(entry[1] <= epoch for entry in log)))
    """
    if not log:
        return None
    if log[-1][1] == epoch:
        return len(log)
    for offset, entry in enumerate(log):
        if entry[1] > epoch:
            return offset
    return None


def first_non_matching_offset_from_tail(leader_log: Sequence[Entry], follower_log: Sequence[Entry]) -> int:
    """KIP-279's truncation point: one past the highest offset at which the follower holds the
    very record the leader holds there; 0 if there is none.

    post: 0 <= __return__ <= len(follower_log)
    post: __return__ <= len(leader_log)
    post: __return__ == 0 or follower_log[__return__ - 1] == leader_log[__return__ - 1]
    post: all(follower_log[i] != leader_log[i] for i in range(__return__, min(len(leader_log), len(follower_log))))
    """
    for offset in range(min(len(leader_log), len(follower_log)) - 1, -1, -1):
        if follower_log[offset] == leader_log[offset]:
            return offset + 1
    return 0


def high_watermark_after_fetches(hw: int, member_end_offsets: Sequence[int]) -> int:
    """The leader's high watermark once every member of the (maximal) ISR has reported its log end
    offset: the smallest of them, but never lower than before (the leader's hw only grows).

    The spec's statement of the hw rule in closed form; its actions (spec/actions.py
    `*_inc_high_watermark`) take the same rule one record at a time, each protocol generation
    with its own guard on which members count. model/helpers.py `high_watermark` states the rule
    again for the model, independently and on purpose (the model is a second description, not a
    user of the spec's; refinement compares the two levels): properties/tests/model/
    test_model_plog.py `test_the_model_states_the_hw_rule_as_the_spec_does` holds them equal.

    pre: hw >= 0
    pre: all(end_offset >= 0 for end_offset in member_end_offsets)
    post: __return__ >= hw
    post: not member_end_offsets or __return__ == max(hw, min(member_end_offsets))
    post: not member_end_offsets or __return__ == hw or all(__return__ <= e for e in member_end_offsets)
    """
    if not member_end_offsets:
        return hw
    return max(hw, min(member_end_offsets))


def shrink_isr(isr: frozenset[int], replica: int, leader: int) -> frozenset[int]:
    """The ISR without `replica`. A leader never removes itself (that is the controller's job).

    pre: replica != leader
    pre: leader in isr
    post: replica not in __return__
    post: leader in __return__
    post: __return__ <= isr
    post: len(__return__) >= len(isr) - 1
    """
    return isr - {replica}


def expand_isr(isr: frozenset[int], replica: int) -> frozenset[int]:
    """The ISR with `replica` added.

    post: replica in __return__
    post: isr <= __return__
    post: len(__return__) <= len(isr) + 1
    """
    return isr | {replica}


def epochs_non_decreasing(log: Sequence[Entry]) -> bool:
    """Whether record epochs never decrease along the log.

    post: __return__ == all(log[i][1] <= log[i + 1][1] for i in range(len(log) - 1))
    """
    return all(earlier[1] <= later[1] for earlier, later in zip(log, log[1:], strict=False))
