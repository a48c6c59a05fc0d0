"""The actions of the replication protocol, named as in the TLA+ modules.

Each action is a function (state, bounds) -> iterator of (label, next state): one pair for each
way the action is enabled (the TLA+ existential quantifiers become loops). An action yields
nothing when it is disabled. Which actions make up a protocol generation's next-state relation
is decided in spec/variants.py.

Conventions carried over from the TLA+ faithfully, including their quirks:
- Replica-side actions quantify the leader over the replicas only, so a LeaderAndIsr request
  whose leader is "none" is never handled by any replica (the TLA+ `leader = None` branches are
  unreachable, and are left out here).
- QuorumUpdateLeaderAndIsr changes the quorum ISR without bumping the epoch or sending a request:
  it models a compare-and-set on the partition state that only the true leader can make.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from kafkaref.spec.helpers import first_non_matching_offset_from_tail, offset_for_epoch
from kafkaref.spec.state import Bounds, QuorumState, Record, ReplicaState, State, replica_name

Transitions = Iterator[tuple[str, State]]


# ---------------------------------------------------------------- small state updates


def _replace(items: tuple, index: int, value) -> tuple:
    return items[:index] + (value,) + items[index + 1 :]


# Direct constructor calls rather than attrs.evolve: these run millions of times during
# exploration, and evolve's field introspection was the largest single cost.


def with_replica(state: State, replica: int, replica_state: ReplicaState) -> State:
    s = state
    replicas = _replace(s.replicas, replica, replica_state)
    return State(s.logs, replicas, s.quorum, s.requests, s.next_record_id, s.next_leader_epoch)


def with_log(state: State, replica: int, log: tuple[Record, ...]) -> State:
    s = state
    logs = _replace(s.logs, replica, log)
    return State(logs, s.replicas, s.quorum, s.requests, s.next_record_id, s.next_leader_epoch)


def with_hw(replica_state: ReplicaState, hw: int) -> ReplicaState:
    r = replica_state
    return ReplicaState(hw, r.leader_epoch, r.leader, r.isr)


# ---------------------------------------------------------------- predicates shared by actions


def is_true_leader(state: State, leader: int) -> bool:
    """The quorum names this replica leader, it believes so, and it is on the quorum's epoch."""
    return (
        state.quorum.leader == leader
        and state.presumes_leadership(leader)
        and state.replicas[leader].leader_epoch == state.quorum.leader_epoch
    )


def has_offset(state: State, replica: int, offset: int) -> bool:
    return offset < len(state.logs[replica])


def is_follower_caught_up(state: State, leader: int, follower: int, end_offset: int) -> bool:
    """Pre-KIP-320: the follower follows the leader and holds *some* record at end_offset - 1."""
    if not state.is_following(follower, leader):
        return False
    if end_offset == 0:
        return True
    offset = end_offset - 1
    return has_offset(state, leader, offset) and has_offset(state, follower, offset)


def is_follower_caught_up_to_leader_epoch(state: State, leader: int, follower: int, end_offset: int) -> bool:
    """KIP-320 first try: like is_follower_caught_up, but the record at end_offset - 1 must also
    carry the same epoch on both sides (which the leader can verify from the fetch)."""
    if not (state.presumes_leadership(leader) and state.is_following(follower, leader)):
        return False
    if end_offset == 0:
        return True
    offset = end_offset - 1
    if not (has_offset(state, leader, offset) and has_offset(state, follower, offset)):
        return False
    return state.logs[follower][offset].epoch == state.logs[leader][offset].epoch


def is_following_leader_epoch(state: State, leader: int, follower: int) -> bool:
    """KIP-320: the follower follows the leader *in the leader's current epoch*."""
    return (
        state.presumes_leadership(leader)
        and state.replicas[follower].leader == leader
        and state.replicas[follower].leader_epoch == state.replicas[leader].leader_epoch
    )


def has_hw_reached_current_epoch(state: State, leader: int) -> bool:
    """The leader's hw is at its log end, or at a record of its own current epoch: only then does
    the leader know everything committed by earlier leaders is below its hw."""
    hw = state.replicas[leader].hw
    log = state.logs[leader]
    if hw == len(log):
        return True
    return hw < len(log) and log[hw].epoch == state.replicas[leader].leader_epoch


def has_follower_reached_hw(state: State, leader: int, follower: int) -> bool:
    hw = state.replicas[leader].hw
    return hw == 0 or has_offset(state, follower, hw - 1)


# ---------------------------------------------------------------- controller actions


def _controller_update_isr(state: State, bounds: Bounds, leader: int | None, isr: frozenset[int]) -> State | None:
    """Bump the leader epoch, write the quorum state and send a LeaderAndIsr request with it."""
    epoch = state.next_leader_epoch
    if epoch > bounds.max_epoch:
        return None
    quorum = QuorumState(epoch, leader, isr)
    s = state
    return State(s.logs, s.replicas, quorum, s.requests | {quorum}, s.next_record_id, epoch + 1)


def controller_elect_leader(state: State, bounds: Bounds) -> Transitions:
    """Clean election: any ISR member other than the current leader, with a new epoch."""
    for new_leader in sorted(state.quorum.isr):
        if state.quorum.leader == new_leader:
            continue
        nxt = _controller_update_isr(state, bounds, new_leader, state.quorum.isr)
        if nxt is not None:
            yield f"ControllerElectLeader({replica_name(new_leader)}, epoch {state.next_leader_epoch})", nxt


def controller_shrink_isr(state: State, bounds: Bounds) -> Transitions:
    """A broker fails (or shuts down): a failed leader is replaced by "none" and leaves the ISR
    unless it is the last member; a failed follower leaves the ISR."""
    quorum = state.quorum
    for replica in bounds.replica_ids:
        if quorum.leader == replica and quorum.isr == {replica}:
            nxt = _controller_update_isr(state, bounds, None, quorum.isr)
        elif quorum.leader == replica:
            nxt = _controller_update_isr(state, bounds, None, quorum.isr - {replica})
        elif replica in quorum.isr:
            nxt = _controller_update_isr(state, bounds, quorum.leader, quorum.isr - {replica})
        else:
            continue
        if nxt is not None:
            yield f"ControllerShrinkIsr({replica_name(replica)}, epoch {state.next_leader_epoch})", nxt


# ---------------------------------------------------------------- leader actions


def become_leader(state: State, bounds: Bounds) -> Transitions:
    """A replica handles a LeaderAndIsr request naming it leader with a newer epoch. It keeps its
    own hw, which typically lags the previous leader's."""
    for request in _in_order(state.requests):
        leader = request.leader
        if leader is None or request.leader_epoch <= state.replicas[leader].leader_epoch:
            continue
        replica_state = ReplicaState(state.replicas[leader].hw, request.leader_epoch, leader, request.isr)
        yield f"BecomeLeader({replica_name(leader)}, epoch {request.leader_epoch})", with_replica(
            state, leader, replica_state
        )


def leader_write(state: State, bounds: Bounds) -> Transitions:
    """A replica that believes it leads accepts a producer write, stamped with its epoch."""
    if state.next_record_id > bounds.max_records - 1:
        return
    for replica in bounds.replica_ids:
        if not state.presumes_leadership(replica) or len(state.logs[replica]) >= bounds.log_size:
            continue
        record = Record(state.next_record_id, state.replicas[replica].leader_epoch)
        s = with_log(state, replica, state.logs[replica] + (record,))
        nxt = State(s.logs, s.replicas, s.quorum, s.requests, s.next_record_id + 1, s.next_leader_epoch)
        yield f"LeaderWrite({replica_name(replica)}, id {record.id})", nxt


def _quorum_update_isr(state: State, leader: int, isr: frozenset[int]) -> State | None:
    if not is_true_leader(state, leader):
        return None
    r = state.replicas[leader]
    s = with_replica(state, leader, ReplicaState(r.hw, r.leader_epoch, r.leader, isr))
    quorum = QuorumState(s.quorum.leader_epoch, s.quorum.leader, isr)
    return State(s.logs, s.replicas, quorum, s.requests, s.next_record_id, s.next_leader_epoch)


def _shrink(state: State, bounds: Bounds, name: str, lagging) -> Transitions:
    for leader in bounds.replica_ids:
        isr = state.replicas[leader].isr
        for follower in sorted(isr - {leader}):
            if lagging(state, leader, follower):
                nxt = _quorum_update_isr(state, leader, isr - {follower})
                if nxt is not None:
                    yield f"{name}({replica_name(leader)} drops {replica_name(follower)})", nxt


def _expand(state: State, bounds: Bounds, name: str, eligible) -> Transitions:
    for leader in bounds.replica_ids:
        isr = state.replicas[leader].isr
        for follower in bounds.replica_ids:
            if follower not in isr and eligible(state, leader, follower):
                nxt = _quorum_update_isr(state, leader, isr | {follower})
                if nxt is not None:
                    yield f"{name}({replica_name(leader)} adds {replica_name(follower)})", nxt


def leader_shrink_isr(state: State, bounds: Bounds) -> Transitions:
    """Drop a follower that is not caught up to the leader's log end offset."""
    yield from _shrink(
        state,
        bounds,
        "LeaderShrinkIsr",
        lambda s, leader, f: not is_follower_caught_up(s, leader, f, len(s.logs[leader])),
    )


def leader_expand_isr(state: State, bounds: Bounds) -> Transitions:
    """Add a follower that has caught up to the leader's hw."""
    yield from _expand(
        state,
        bounds,
        "LeaderExpandIsr",
        lambda s, leader, f: is_follower_caught_up(s, leader, f, s.replicas[leader].hw),
    )


def leader_shrink_isr_better_fencing(state: State, bounds: Bounds) -> Transitions:
    yield from _shrink(
        state,
        bounds,
        "LeaderShrinkIsrBetterFencing",
        lambda s, leader, f: not is_follower_caught_up_to_leader_epoch(s, leader, f, len(s.logs[leader])),
    )


def leader_expand_isr_better_fencing(state: State, bounds: Bounds) -> Transitions:
    yield from _expand(
        state,
        bounds,
        "LeaderExpandIsrBetterFencing",
        lambda s, leader, f: is_follower_caught_up_to_leader_epoch(s, leader, f, s.replicas[leader].hw)
        and has_hw_reached_current_epoch(s, leader),
    )


def fenced_leader_shrink_isr(state: State, bounds: Bounds) -> Transitions:
    """Drop a follower that is on another epoch or whose log ends before the leader's."""
    yield from _shrink(
        state,
        bounds,
        "FencedLeaderShrinkIsr",
        lambda s, leader, f: not is_following_leader_epoch(s, leader, f) or len(s.logs[f]) < len(s.logs[leader]),
    )


def fenced_leader_expand_isr(state: State, bounds: Bounds) -> Transitions:
    """Add a follower on the leader's epoch that reached the hw, once the hw reached the leader's
    own epoch (so the follower holds everything earlier leaders committed)."""
    yield from _expand(
        state,
        bounds,
        "FencedLeaderExpandIsr",
        lambda s, leader, f: is_following_leader_epoch(s, leader, f)
        and has_follower_reached_hw(s, leader, f)
        and has_hw_reached_current_epoch(s, leader),
    )


def fenced_leader_expand_isr_before_epoch(state: State, bounds: Bounds) -> Transitions:
    """Ablation of FencedLeaderExpandIsr without the "hw reached the current epoch" condition."""
    yield from _expand(
        state,
        bounds,
        "FencedLeaderExpandIsrBeforeEpoch",
        lambda s, leader, f: is_following_leader_epoch(s, leader, f) and has_follower_reached_hw(s, leader, f),
    )


def _inc_hw(state: State, leader: int, name: str) -> tuple[str, State]:
    replica_state = state.replicas[leader]
    label = f"{name}({replica_name(leader)}, hw {replica_state.hw + 1})"
    return label, with_replica(state, leader, with_hw(replica_state, replica_state.hw + 1))


def leader_inc_high_watermark(state: State, bounds: Bounds) -> Transitions:
    """Pre-KIP-320: every ISR member follows the leader and holds some record at the hw offset
    (no epoch check)."""
    for leader in bounds.replica_ids:
        hw = state.replicas[leader].hw
        if not state.presumes_leadership(leader) or hw > bounds.log_size - 1:
            continue
        if all(
            state.is_following(f, leader) and has_offset(state, f, hw) for f in state.replicas[leader].isr
        ):
            yield _inc_hw(state, leader, "LeaderIncHighWatermark")


def improved_leader_inc_high_watermark(state: State, bounds: Bounds) -> Transitions:
    """KIP-320 first try: ISR members must hold the record at the hw with the leader's epoch for it."""
    for leader in bounds.replica_ids:
        hw = state.replicas[leader].hw
        if not state.presumes_leadership(leader) or not has_offset(state, leader, hw):
            continue
        if all(
            is_follower_caught_up_to_leader_epoch(state, leader, f, hw + 1) for f in state.replicas[leader].isr
        ):
            yield _inc_hw(state, leader, "ImprovedLeaderIncHighWatermark")


def fenced_leader_inc_high_watermark(state: State, bounds: Bounds) -> Transitions:
    """KIP-320: ISR members must follow the leader in its current epoch and hold the hw offset."""
    for leader in bounds.replica_ids:
        hw = state.replicas[leader].hw
        if not has_offset(state, leader, hw):
            continue
        if all(
            is_following_leader_epoch(state, leader, f) and has_offset(state, f, hw)
            for f in state.replicas[leader].isr
        ):
            yield _inc_hw(state, leader, "FencedLeaderIncHighWatermark")


# ---------------------------------------------------------------- follower actions


def _replicate(state: State, leader: int, follower: int, name: str) -> tuple[str, State] | None:
    """Append the leader's record at the follower's log end offset; the follower's hw becomes
    min(leader hw, new end offset)."""
    end = len(state.logs[follower])
    if end >= len(state.logs[leader]):
        return None
    record = state.logs[leader][end]
    nxt = with_log(state, follower, state.logs[follower] + (record,))
    hw = min(state.replicas[leader].hw, end + 1)
    nxt = with_replica(nxt, follower, with_hw(state.replicas[follower], hw))
    return f"{name}({replica_name(follower)} from {replica_name(leader)}, offset {end})", nxt


def follower_replicate(state: State, bounds: Bounds) -> Transitions:
    """Pre-KIP-320 fetch: no check of the current epoch nor of the last fetched epoch."""
    for leader in bounds.replica_ids:
        if not state.presumes_leadership(leader):
            continue
        for follower in bounds.replica_ids:
            if follower != leader and state.is_following(follower, leader):
                step = _replicate(state, leader, follower, "FollowerReplicate")
                if step:
                    yield step


def follower_fetch(state: State, bounds: Bounds) -> Transitions:
    """KIP-320 first try: the follower may fetch when the epoch of its last record matches the
    leader's record at that offset."""
    for leader in bounds.replica_ids:
        for follower in bounds.replica_ids:
            if follower != leader and is_follower_caught_up_to_leader_epoch(
                state, leader, follower, len(state.logs[follower])
            ):
                step = _replicate(state, leader, follower, "FollowerFetch")
                if step:
                    yield step


def fenced_follower_fetch(state: State, bounds: Bounds) -> Transitions:
    """KIP-320: the follower may fetch only in the leader's current epoch."""
    for leader in bounds.replica_ids:
        for follower in bounds.replica_ids:
            if follower != leader and is_following_leader_epoch(state, leader, follower):
                step = _replicate(state, leader, follower, "FencedFollowerFetch")
                if step:
                    yield step


def _requests_for(state: State, leader: int, replica: int) -> list[QuorumState]:
    """LeaderAndIsr requests naming `leader` that `replica` would accept (a newer epoch)."""
    epoch = state.replicas[replica].leader_epoch
    return [r for r in _in_order(state.requests) if r.leader == leader and r.leader_epoch > epoch]


def _become_follower(state: State, replica: int, request: QuorumState, truncate_to: int | None, name: str):
    """Handle `request` as a follower, truncating the log to `truncate_to` (None: no truncation).
    The hw never ends above the truncation point."""
    log = state.logs[replica]
    hw = state.replicas[replica].hw
    nxt = state
    if truncate_to is not None:
        if truncate_to > len(log):
            return None  # TruncateTo is disabled past the log end
        nxt = with_log(nxt, replica, log[:truncate_to])
        hw = min(truncate_to, hw)
    nxt = with_replica(nxt, replica, ReplicaState(hw, request.leader_epoch, request.leader, request.isr))
    where = "" if truncate_to is None else f", truncate to {truncate_to}"
    label = f"{name}({replica_name(replica)} follows {replica_name(request.leader)}, epoch {request.leader_epoch}{where})"
    return label, nxt


def _become_follower_and_truncate(state: State, bounds: Bounds, name: str, truncation_offset) -> Transitions:
    """BecomeFollowerAndTruncateTo with the variant's truncation point."""
    for leader in bounds.replica_ids:
        for replica in bounds.replica_ids:
            if leader == replica:
                continue
            requests = _requests_for(state, leader, replica)
            if not requests:
                continue
            offset = truncation_offset(state, leader, replica)
            for request in requests:
                step = _become_follower(state, replica, request, offset, name)
                if step:
                    yield step


def _hw_offset(state: State, leader: int, replica: int) -> int:
    return state.replicas[replica].hw


def _kip101_offset(state: State, leader: int, replica: int) -> int:
    log = state.logs[replica]
    if not log:
        return 0
    found = offset_for_epoch(state.logs[leader], log[-1].epoch)
    return state.replicas[replica].hw if found is None else found


def _kip279_offset(state: State, leader: int, replica: int) -> int:
    return first_non_matching_offset_from_tail(state.logs[leader], state.logs[replica])


def become_follower_truncate_to_high_watermark(state: State, bounds: Bounds) -> Transitions:
    """Before KIP-101: truncate to the replica's own hw."""
    yield from _become_follower_and_truncate(state, bounds, "BecomeFollowerTruncateToHighWatermark", _hw_offset)


def become_follower_truncate_kip101(state: State, bounds: Bounds) -> Transitions:
    """KIP-101: ask the leader where the epoch of the replica's last record ends; fall back to the
    replica's own hw when the leader knows no such epoch."""
    yield from _become_follower_and_truncate(state, bounds, "BecomeFollowerTruncateKip101", _kip101_offset)


def become_follower_truncate_kip279(state: State, bounds: Bounds) -> Transitions:
    """KIP-279: truncate after the last offset where both logs hold the same record, read from the
    named leader whatever its epoch."""
    yield from _become_follower_and_truncate(state, bounds, "BecomeFollowerTruncateKip279", _kip279_offset)


def become_follower(state: State, bounds: Bounds) -> Transitions:
    """KIP-320 first try: adopt the new leader and epoch without truncating; truncation happens
    later, on a fetch that finds a mismatch (FollowerTruncate)."""
    for leader in bounds.replica_ids:
        for replica in bounds.replica_ids:
            if leader == replica:
                continue
            for request in _requests_for(state, leader, replica):
                yield _become_follower(state, replica, request, None, "BecomeFollower")


def follower_needs_truncation(state: State, follower: int, leader: int) -> bool:
    follower_log, leader_log = state.logs[follower], state.logs[leader]
    if len(follower_log) > len(leader_log):
        return True
    if not follower_log:
        return False
    last = len(follower_log) - 1
    return last < len(leader_log) and leader_log[last].epoch != follower_log[last].epoch


def follower_truncate(state: State, bounds: Bounds) -> Transitions:
    """KIP-320 first try: a fetch finds the follower's last epoch does not match; truncate."""
    for leader in bounds.replica_ids:
        if not state.presumes_leadership(leader):
            continue
        for follower in bounds.replica_ids:
            if not state.is_following(follower, leader) or not follower_needs_truncation(state, follower, leader):
                continue
            offset = _kip279_offset(state, leader, follower)
            nxt = with_log(state, follower, state.logs[follower][:offset])
            replica_state = state.replicas[follower]
            nxt = with_replica(nxt, follower, with_hw(replica_state, min(offset, replica_state.hw)))
            yield f"FollowerTruncate({replica_name(follower)} against {replica_name(leader)}, to {offset})", nxt


def fenced_become_follower_and_truncate(state: State, bounds: Bounds) -> Transitions:
    """KIP-320: truncation is computed only against a leader that already leads in the request's
    epoch, whose log can no longer be truncated by an older epoch."""
    for leader in bounds.replica_ids:
        if not state.presumes_leadership(leader):
            continue
        leader_epoch = state.replicas[leader].leader_epoch
        for replica in bounds.replica_ids:
            if leader == replica:
                continue
            for request in _requests_for(state, leader, replica):
                if request.leader_epoch != leader_epoch:
                    continue
                step = _become_follower(
                    state, replica, request, _kip279_offset(state, leader, replica), "FencedBecomeFollowerAndTruncate"
                )
                if step:
                    yield step


@lru_cache(maxsize=65_536)
def _in_order(requests: frozenset[QuorumState]) -> tuple[QuorumState, ...]:
    """The request set in a fixed order (sets of requests repeat across many states)."""
    return tuple(sorted(requests, key=_request_order))


def _request_order(request: QuorumState) -> tuple:
    """Requests are a set; iterate them in a fixed order so exploration is reproducible."""
    return (request.leader_epoch, -1 if request.leader is None else request.leader, sorted(request.isr))

