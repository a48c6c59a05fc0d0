"""The named invariants of the replication protocol.

Each is a predicate on a spec State with a docstring saying why it must hold. They are the single
definition of these facts: the explorer checks them here, model/ checks them through its
refinement mapping, and the history-level checks cite them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from kafkaref.spec.helpers import epochs_non_decreasing
from kafkaref.spec.state import State


def _replicated_below(state: State, leader: int, member: int, hw: int) -> bool:
    """Both replicas hold the very same record at every offset below hw."""
    leader_log, member_log = state.logs[leader], state.logs[member]
    if len(leader_log) < hw or len(member_log) < hw:
        return False
    return leader_log[:hw] == member_log[:hw]


def weak_isr(state: State) -> bool:
    """WeakIsr: a replica that presumes it leads has its records below its hw replicated, record
    for record, on every member of the ISR *it believes in*. Weak because elections use the
    quorum's ISR, not the leader's; still, seeing it fail shows committed data missing on a
    replica everyone counts as in sync (B1)."""
    for leader, replica_state in enumerate(state.replicas):
        if replica_state.leader != leader or replica_state.hw == 0:
            continue
        if not all(_replicated_below(state, leader, member, replica_state.hw) for member in replica_state.isr):
            return False
    return True


def strong_isr(state: State) -> bool:
    """StrongIsr: a replica that presumes it leads has its records below its hw replicated on every
    member of the *quorum's* ISR. Consumers may have read everything below that hw, and any ISR
    member may be elected next; if one lacks a record, a clean election loses committed data."""
    for leader, replica_state in enumerate(state.replicas):
        if replica_state.leader != leader or replica_state.hw == 0:
            continue
        if not all(_replicated_below(state, leader, member, replica_state.hw) for member in state.quorum.isr):
            return False
    return True


def leader_in_isr(state: State) -> bool:
    """LeaderInIsr, in its intended form: there is no leader, or the leader is in the ISR. The
    leader holds every committed record by definition, and clean elections pick from the ISR, so a
    leader outside the ISR would mean committed data on nobody electable. (The TLA+ module states
    it without the "no leader" case, which fails in the initial state.)"""
    quorum = state.quorum
    return quorum.leader is None or quorum.leader in quorum.isr


def hw_le_leo(state: State) -> bool:
    """HwLeLeo: no replica's high watermark is beyond its log end offset. A hw above the log end
    would expose offsets the replica does not hold."""
    return all(replica_state.hw <= len(log) for replica_state, log in zip(state.replicas, state.logs, strict=True))


# Logs are drawn from a small finite set within the bounds, so per-log and per-pair facts are
# memoised: exploration asks them of the same few logs hundreds of thousands of times.
_epochs_in_order = lru_cache(maxsize=65_536)(epochs_non_decreasing)


def epochs_monotonic(state: State) -> bool:
    """EpochsMonotonic: record epochs never decrease along any log. Leaders stamp records with an
    epoch that only grows, and the epoch cache (epoch -> start offset), on which truncation after
    KIP-101 relies, is only meaningful if each log is sorted by epoch."""
    return all(_epochs_in_order(log) for log in state.logs)


def record_offsets_agree(state: State) -> bool:
    """RecordOffsetsAgree: a record sits at the same offset on every replica holding it. Offsets
    are assigned once by the leader that wrote the record; replicas copy, never renumber. The
    history-level twin is the inconsistent_offsets / duplicate anomaly."""
    offset_of: dict[int, int] = {}
    for log in state.logs:
        for offset, record in enumerate(log):
            if offset_of.setdefault(record.id, offset) != offset:
                return False
    return True


def log_matching(state: State) -> bool:
    """LogMatching: if two replicas hold the same record at an offset, their logs are identical up
    to and including it. Followers only ever append the leader's next record, so a common record
    implies a common history; a violation means divergent histories under one record (B2)."""
    logs = state.logs
    return all(_logs_match(logs[i], logs[j]) for i in range(len(logs)) for j in range(i + 1, len(logs)))


@lru_cache(maxsize=65_536)
def _logs_match(first, second) -> bool:
    """Below the last offset where both logs hold the same record, they are identical."""
    for offset in range(min(len(first), len(second)) - 1, -1, -1):
        if first[offset] == second[offset]:
            return first[:offset] == second[:offset]
    return True


INVARIANTS: dict[str, Callable[[State], bool]] = {
    "StrongIsr": strong_isr,
    "WeakIsr": weak_isr,
    "LeaderInIsr": leader_in_isr,
    "HwLeLeo": hw_le_leo,
    "EpochsMonotonic": epochs_monotonic,
    "RecordOffsetsAgree": record_offsets_agree,
    "LogMatching": log_matching,
}
