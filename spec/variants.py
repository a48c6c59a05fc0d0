"""Protocol generations as pluggable strategies: each variant is the set of actions of its
next-state relation, as in the TLA+ module of that generation, and the bug it is known for."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from kafkaref.spec import actions as a
from kafkaref.spec.state import Bounds, State

Action = Callable[[State, Bounds], Iterator[tuple[str, State]]]

# Actions every generation shares: the controller's, becoming leader, and producer writes.
_COMMON: tuple[Action, ...] = (a.controller_elect_leader, a.controller_shrink_isr, a.become_leader, a.leader_write)
# The pre-KIP-320 leader and fetch rules of KafkaReplication.tla.
_CLASSIC: tuple[Action, ...] = (
    a.leader_expand_isr,
    a.leader_shrink_isr,
    a.leader_inc_high_watermark,
    a.follower_replicate,
)
# Kip320.tla's fenced rules, except for becoming follower and ISR expansion.
_FENCED: tuple[Action, ...] = (a.fenced_leader_shrink_isr, a.fenced_leader_inc_high_watermark, a.fenced_follower_fetch)


@attrs.frozen
class Variant:
    name: str
    actions: tuple[Action, ...]
    summary: str
    bug: str  # the flaw it is known for ("" for the correct protocol)
    expected_violation: str | None  # the invariant its known counterexample breaks
    source: str  # the TLA+ module (or the ablation it is derived from)
    demo_replicas: int = 3  # the smallest replica count at which its bug shows


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in [
        Variant(
            "truncate_to_hw",
            _COMMON + _CLASSIC + (a.become_follower_truncate_to_high_watermark,),
            "Before KIP-101: a new follower truncates its log to its own high watermark.",
            "B1: a follower truncates a committed record it holds but whose commit it has not yet "
            "heard of, while still in the ISR.",
            "WeakIsr",
            "KafkaTruncateToHighWatermark.tla",
            2,
        ),
        Variant(
            "kip101",
            _COMMON + _CLASSIC + (a.become_follower_truncate_kip101,),
            "KIP-101: truncate to the leader's end offset for the follower's last epoch.",
            "B3: when the leader knows no such epoch the lookup falls back to the follower's hw and "
            "a committed record is truncated.",
            "StrongIsr",
            "Kip101.tla",
            2,
        ),
        Variant(
            "kip279",
            _COMMON + _CLASSIC + (a.become_follower_truncate_kip279,),
            "KIP-279: truncate after the last offset where leader and follower hold the same record.",
            "B4: no epoch check on hw advance or on the truncation source; a follower on a stale "
            "epoch counts toward the hw, then truncates against a stale leader.",
            "StrongIsr",
            "Kip279.tla",
        ),
        Variant(
            "kip320_first_try",
            _COMMON
            + (
                a.leader_expand_isr_better_fencing,
                a.leader_shrink_isr_better_fencing,
                a.improved_leader_inc_high_watermark,
                a.become_follower,
                a.follower_fetch,
                a.follower_truncate,
            ),
            "First KIP-320 attempt: fetches check the last fetched epoch, truncation on mismatch.",
            "B5: the follower's current epoch is not checked, so the hw advances on a follower that "
            "then truncates the committed record against a stale zombie.",
            "StrongIsr",
            "Kip320FirstTry.tla",
        ),
        Variant(
            "kip320",
            _COMMON + _FENCED + (a.fenced_leader_expand_isr, a.fenced_become_follower_and_truncate),
            "KIP-320: fenced fetches, fenced hw advance, fenced truncation, careful ISR expansion.",
            "",
            None,
            "Kip320.tla",
        ),
        Variant(
            "kip320_kip279_truncation",
            _COMMON + _FENCED + (a.fenced_leader_expand_isr, a.become_follower_truncate_kip279),
            "Ablation of kip320: truncation point read from a leader in any epoch (not fenced).",
            "B6: the truncation source still leads an older epoch and later truncates itself.",
            "StrongIsr",
            "Kip320.tla with BecomeFollowerTruncateKip279",
        ),
        Variant(
            "kip320_expand_before_epoch",
            _COMMON + _FENCED + (a.fenced_leader_expand_isr_before_epoch, a.fenced_become_follower_and_truncate),
            "Ablation of kip320: ISR expansion without waiting for the hw to reach the current epoch.",
            "B7: the new leader's hw lags the true hw; it admits a follower missing committed data.",
            "StrongIsr",
            "Kip320.tla without HasHighWatermarkReachedCurrentEpoch",
        ),
    ]
}
