"""A classic group coordinator (JoinGroup / SyncGroup / Heartbeat / LeaveGroup), single-threaded.

Enough for clients that subscribe(): members join, the first member leads and computes the
assignment on the client side (metadata and assignments are opaque bytes to the broker), every
member gets its share through SyncGroup, heartbeats report a rebalance in progress, and members
that stop heartbeating (session timeout) or leave trigger a rebalance.

A rebalance completes when every known member has rejoined, or at the rebalance deadline (the
largest rebalance timeout of the members), dropping those that did not. Simplifications: no
static membership, no MEMBER_ID_REQUIRED round trip, no initial rebalance delay, no
persistence (group state lives in the coordinator's memory; offsets are kept by the Broker).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

EMPTY, PREPARING, COMPLETING, STABLE = "Empty", "PreparingRebalance", "CompletingRebalance", \
    "Stable"


@attrs.define
class Member:
    member_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    last_heartbeat_ms: int
    group_instance_id: str | None = None
    join: Callable | None = None  # pending JoinGroup answer
    sync: Callable | None = None  # pending SyncGroup answer
    assignment: bytes = b""


@attrs.define
class Group:
    group_id: str
    state: str = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = attrs.Factory(dict)
    rebalance_deadline_ms: int = 0


@attrs.frozen
class JoinAnswer:
    error: ErrorCode
    generation_id: int = -1
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # for the leader only


class GroupCoordinator:
    def __init__(self, clock: Callable[[], int]):
        self.clock = clock
        self.groups: dict[str, Group] = {}
        self._ids = itertools.count(1)

    def group(self, group_id: str) -> Group:
        return self.groups.setdefault(group_id, Group(group_id))

    # -- JoinGroup ----------------------------------------------------------------------------
    def join(self, group_id: str, member_id: str, group_instance_id, protocol_type: str,
             protocols, session_timeout_ms: int, rebalance_timeout_ms: int,
             respond: Callable[[JoinAnswer], None]) -> None:
        group = self.group(group_id)
        protocols = tuple((name, bytes(meta or b"")) for name, meta in protocols)
        if group.protocol_type not in (None, protocol_type) and group.members:
            respond(JoinAnswer(ErrorCode.inconsistent_group_protocol))
            return
        if member_id and member_id not in group.members:
            respond(JoinAnswer(ErrorCode.unknown_member_id, member_id=member_id))
            return
        if not member_id:
            member_id = f"{group_id}-member-{next(self._ids)}"
        now = self.clock()
        member = group.members.get(member_id)
        if member is None:
            member = Member(member_id, session_timeout_ms, rebalance_timeout_ms, protocols, now,
                            group_instance_id)
            group.members[member_id] = member
        else:
            member.protocols, member.last_heartbeat_ms = protocols, now
            member.session_timeout_ms = session_timeout_ms
            member.rebalance_timeout_ms = rebalance_timeout_ms
        group.protocol_type = protocol_type
        if member.join is not None:  # a retried join replaces the older one
            member.join(JoinAnswer(ErrorCode.rebalance_in_progress, member_id=member_id))
        member.join = respond
        if group.state != PREPARING:
            self._prepare(group, now)
        self._maybe_complete_join(group)

    def _prepare(self, group: Group, now: int) -> None:
        group.state = PREPARING
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        group.rebalance_deadline_ms = now + timeout
        for member in group.members.values():  # a pending sync will never be answered now
            if member.sync is not None:
                member.sync(ErrorCode.rebalance_in_progress, b"")
                member.sync = None

    def _maybe_complete_join(self, group: Group, deadline_passed: bool = False) -> None:
        if group.state != PREPARING:
            return
        waiting = [m for m in group.members.values() if m.join is None]
        if waiting and not deadline_passed:
            return
        for member in waiting:  # did not rejoin in time: out of the group
            del group.members[member.member_id]
        if not group.members:
            group.state, group.leader, group.protocol_name = EMPTY, None, None
            group.generation_id += 1
            return
        group.generation_id += 1
        group.protocol_name = self._choose_protocol(group)
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.state = COMPLETING
        everyone = tuple((m.member_id, m.group_instance_id,
                          dict(m.protocols).get(group.protocol_name, b""))
                         for m in group.members.values())
        now = self.clock()
        for member in group.members.values():
            respond, member.join = member.join, None
            member.last_heartbeat_ms = now  # the session restarts with the new generation
            respond(JoinAnswer(ErrorCode.none, group.generation_id, group.protocol_name,
                               group.leader, member.member_id,
                               everyone if member.member_id == group.leader else ()))

    @staticmethod
    def _choose_protocol(group: Group) -> str | None:
        members = list(group.members.values())
        for name, _ in members[0].protocols:
            if all(name in dict(m.protocols) for m in members):
                return name
        return members[0].protocols[0][0] if members[0].protocols else None

    # -- SyncGroup ----------------------------------------------------------------------------
    def sync(self, group_id: str, generation_id: int, member_id: str, assignments,
             respond: Callable[[ErrorCode, bytes], None]) -> None:
        group = self.groups.get(group_id)
        error = self._check_member(group, generation_id, member_id)
        if error != ErrorCode.none:
            respond(error, b"")
            return
        if group.state == PREPARING:
            respond(ErrorCode.rebalance_in_progress, b"")
            return
        member = group.members[member_id]
        member.last_heartbeat_ms = self.clock()
        if group.state == STABLE:
            respond(ErrorCode.none, member.assignment)
            return
        member.sync = respond
        if member_id == group.leader:
            given = {m: bytes(a or b"") for m, a in assignments}
            for m in group.members.values():
                m.assignment = given.get(m.member_id, b"")
            group.state = STABLE
        if group.state == STABLE:
            for m in group.members.values():
                if m.sync is not None:
                    answer, m.sync = m.sync, None
                    answer(ErrorCode.none, m.assignment)

    def _check_member(self, group: Group | None, generation_id: int,
                      member_id: str) -> ErrorCode:
        if group is None or member_id not in group.members:
            return ErrorCode.unknown_member_id
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        return ErrorCode.none

    # -- Heartbeat, LeaveGroup, time ----------------------------------------------------------
    def heartbeat(self, group_id: str, generation_id: int, member_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            group.members[member_id].last_heartbeat_ms = self.clock()
        if group is not None and group.state == PREPARING and member_id in group.members:
            return ErrorCode.rebalance_in_progress
        return self._check_member(group, generation_id, member_id)

    def leave(self, group_id: str, member_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return ErrorCode.unknown_member_id
        self._remove(group, member_id)
        return ErrorCode.none

    def _remove(self, group: Group, member_id: str) -> None:
        member = group.members.pop(member_id)
        if member.join is not None:
            member.join(JoinAnswer(ErrorCode.unknown_member_id, member_id=member_id))
        if group.state == PREPARING:
            self._maybe_complete_join(group)
        elif group.members:
            self._prepare(group, self.clock())
        else:
            group.state, group.leader = EMPTY, None
            group.generation_id += 1

    def advance_clock(self, now_ms: int | None = None) -> None:
        now = self.clock() if now_ms is None else now_ms
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                if member.join is None and member.sync is None and (
                        now - member.last_heartbeat_ms > member.session_timeout_ms):
                    self._remove(group, member.member_id)
            if group.state == PREPARING and now >= group.rebalance_deadline_ms:
                self._maybe_complete_join(group, deadline_passed=True)
