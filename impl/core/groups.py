"""A classic group coordinator (JoinGroup / SyncGroup / Heartbeat / LeaveGroup), single-threaded.

Enough for clients that subscribe(): members join, the first member leads and computes the
assignment on the client side (metadata and assignments are opaque bytes to the broker), every
member gets its share through SyncGroup, heartbeats report a rebalance in progress, and members
that stop heartbeating (session timeout) or leave trigger a rebalance.

A rebalance completes when every known member has rejoined, or at the rebalance deadline (the
largest rebalance timeout of the members), dropping those that did not.

Static members (KIP-345, group.instance.id): a static member that joins again without its
member id (a restarted consumer) takes its old place under a new member id -- same assignment,
no rebalance when the group is stable -- and the old instance is fenced: any request still
carrying the old member id with that instance id answers FENCED_INSTANCE_ID.

A known member joining again does not always rebalance (Kafka's GroupCoordinator.doJoinGroup):
a follower of a stable group with unchanged protocols, or any member while the group awaits its
assignment with unchanged protocols, gets the current generation back. Static members that did
not rejoin stay in the group when a rebalance completes (only dynamic ones are dropped; the
session timeout removes static ones), so the leader keeps assigning them their partitions.

group.initial.rebalance.delay.ms (Kafka's InitialDelayedJoin): the first rebalance of an empty
group waits that long for more members instead of completing with the first, and waits again
(up to the rebalance timeout in all) while new members keep arriving in the first generation.
Clients written against Kafka's default (3 s) expect the consumers started together to land in
one generation (librdkafka's 0102 and 0113 count their rebalance callbacks).

KIP-394: a dynamic member joining without a member id through JoinGroup v4+ is answered at once
with MEMBER_ID_REQUIRED and an id, and is only pending until it joins again with that id; a
pending member holds up the rebalance (Kafka's hasAllMembersJoined) until its session timeout.
Without this round trip the first join waited for the whole rebalance, and a client that gave up
on it meanwhile (librdkafka discards the answer of a join its subscription change made outdated;
0113 changes subscriptions every second) left a member nobody heartbeats: assigned partitions
nobody read until its session expired (45 s with librdkafka's default).

Simplification: membership lives in the coordinator's memory only: when the coordinator moves,
members rejoin (committed offsets are durable: impl/core/committed_offsets.py).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import SESSION_TIMEOUT_MAX_MS, SESSION_TIMEOUT_MIN_MS
from kafkaref.impl.core.offsets_topic import java_string_hash

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
    client_id: str = ""
    client_host: str = ""  # the connection's peer, as the server names it ("/127.0.0.1")
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
    static_members: dict[str, str] = attrs.Factory(dict)  # group.instance.id -> member id
    # the initial delay (InitialDelayedJoin): no completion before join_not_before_ms (0: none),
    # extended by up to delay_left_ms while new members arrive in the first generation
    join_not_before_ms: int = 0
    delay_left_ms: int = 0
    new_member_added: bool = False
    pending: dict[str, int] = attrs.Factory(dict)  # KIP-394: member id -> when it expires

    def fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """Is this instance id now held by another member id (KIP-345)?"""
        holder = self.static_members.get(group_instance_id) if group_instance_id else None
        return holder is not None and holder != member_id


@attrs.frozen
class JoinAnswer:
    error: ErrorCode
    generation_id: int = -1
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # for the leader only


class GroupCoordinator:
    def __init__(self, clock: Callable[[], int], min_session_timeout_ms: int = SESSION_TIMEOUT_MIN_MS,
                 max_session_timeout_ms: int = SESSION_TIMEOUT_MAX_MS,
                 initial_rebalance_delay_ms: int = 0):
        self.clock = clock
        self.session_bounds = (min_session_timeout_ms, max_session_timeout_ms)
        self.initial_delay_ms = initial_rebalance_delay_ms
        self.groups: dict[str, Group] = {}

    def group(self, group_id: str) -> Group:
        return self.groups.setdefault(group_id, Group(group_id))

    # -- JoinGroup ----------------------------------------------------------------------------
    def join(self, group_id: str, member_id: str, group_instance_id, protocol_type: str,
             protocols, session_timeout_ms: int, rebalance_timeout_ms: int,
             respond: Callable[[JoinAnswer], None], client_id: str = "",
             require_known_member_id: bool = False, client_host: str = "") -> None:
        """require_known_member_id: JoinGroup v4+ (KIP-394's MEMBER_ID_REQUIRED round trip
        for dynamic members)."""
        low, high = self.session_bounds
        if not low <= session_timeout_ms <= high:
            respond(JoinAnswer(ErrorCode.invalid_session_timeout, member_id=member_id))
            return
        group = self.group(group_id)
        protocols = tuple((name, bytes(meta or b"")) for name, meta in protocols)
        if not _supports_protocols(group, protocol_type, protocols):
            respond(JoinAnswer(ErrorCode.inconsistent_group_protocol, member_id=member_id))
            return
        if group.fenced(member_id, group_instance_id) and member_id:
            respond(JoinAnswer(ErrorCode.fenced_instance_id, member_id=member_id))
            return
        if not member_id and group_instance_id in group.static_members:
            self._static_rejoin(group, group_instance_id, protocols, session_timeout_ms,
                                rebalance_timeout_ms, respond)
            return
        now = self.clock()
        if not member_id and group_instance_id is None and require_known_member_id:
            member_id = f"{client_id or group_id}-{uuid.uuid4()}"
            group.pending[member_id] = now + session_timeout_ms
            respond(JoinAnswer(ErrorCode.member_id_required, member_id=member_id))
            return
        pending = group.pending.pop(member_id, None) is not None
        if member_id and member_id not in group.members and not pending:
            respond(JoinAnswer(ErrorCode.unknown_member_id, member_id=member_id))
            return
        member = group.members.get(member_id)
        if member is None:
            if not pending:
                member_id = f"{group_instance_id or client_id or group_id}-{uuid.uuid4()}"
            member = Member(member_id, session_timeout_ms, rebalance_timeout_ms, protocols, now,
                            group_instance_id, client_id, client_host)
            group.members[member_id] = member
            if group_instance_id:
                group.static_members[group_instance_id] = member_id
            if group.state == PREPARING and group.generation_id == 0:
                group.new_member_added = True  # the initial delay may be extended
        else:
            member.last_heartbeat_ms = now
            if self._current_generation_answers(group, member, protocols, respond):
                return
            member.protocols = protocols
            member.session_timeout_ms = session_timeout_ms
            member.rebalance_timeout_ms = rebalance_timeout_ms
        group.protocol_type = protocol_type
        if member.join is not None:  # a retried join replaces the older one
            member.join(JoinAnswer(ErrorCode.rebalance_in_progress, member_id=member_id))
        member.join = respond
        if group.state != PREPARING:
            self._prepare(group, now)
        self._maybe_complete_join(group)

    def _current_generation_answers(self, group: Group, member: Member, protocols,
                                    respond: Callable[[JoinAnswer], None]) -> bool:
        """A known member joining again with the protocols it had: no rebalance for a follower
        of a stable group (it only lost its answer, or checks in), nor for anyone while the
        group awaits its assignment; both get the current generation (Kafka's doJoinGroup).
        The leader of a stable group, or changed protocols, rebalance."""
        if member.join is not None or member.protocols != protocols:
            return False
        stable_follower = group.state == STABLE and member.member_id != group.leader
        if not stable_follower and group.state != COMPLETING:
            return False
        leads = member.member_id == group.leader and group.state == COMPLETING
        respond(JoinAnswer(ErrorCode.none, group.generation_id, group.protocol_name,
                           group.leader or "", member.member_id,
                           _member_list(group) if leads else ()))
        return True

    def _static_rejoin(self, group: Group, instance_id: str, protocols, session_timeout_ms: int,
                       rebalance_timeout_ms: int, respond: Callable[[JoinAnswer], None]) -> None:
        """KIP-345: a known static member joins without a member id (it restarted). It takes
        its old member's place under a new id; the old id is fenced. A stable group whose
        protocol still fits answers at once with the current generation (no rebalance)."""
        old_id = group.static_members[instance_id]
        old = group.members.pop(old_id)
        new_id = f"{instance_id}-{uuid.uuid4()}"
        member = attrs.evolve(old, member_id=new_id, protocols=protocols, join=None, sync=None,
                              session_timeout_ms=session_timeout_ms,
                              rebalance_timeout_ms=rebalance_timeout_ms,
                              last_heartbeat_ms=self.clock())
        group.members[new_id] = member
        group.static_members[instance_id] = new_id
        was_leader = group.leader == old_id
        if was_leader:
            group.leader = new_id
        if old.join is not None:
            old.join(JoinAnswer(ErrorCode.fenced_instance_id, member_id=old_id))
        if old.sync is not None:
            old.sync(ErrorCode.fenced_instance_id, b"")
        if group.state == STABLE and group.protocol_name == self._choose_protocol(group):
            # the rejoining leader is told the old id leads: it must not reassign with no
            # member list (what Kafka does before KIP-814's skip_assignment)
            respond(JoinAnswer(ErrorCode.none, group.generation_id, group.protocol_name,
                               old_id if was_leader else group.leader, new_id))
            return
        member.join = respond
        if group.state != PREPARING:
            self._prepare(group, self.clock())
        self._maybe_complete_join(group)

    def _prepare(self, group: Group, now: int) -> None:
        initial = group.state == EMPTY and self.initial_delay_ms > 0
        group.state = PREPARING
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        group.rebalance_deadline_ms = now + timeout
        group.join_not_before_ms, group.new_member_added = 0, False
        if initial:  # InitialDelayedJoin(delay, remaining = rebalance timeout - delay)
            group.join_not_before_ms = now + self.initial_delay_ms
            group.delay_left_ms = max(timeout - self.initial_delay_ms, 0)
        for member in group.members.values():  # a pending sync will never be answered now
            if member.sync is not None:
                member.sync(ErrorCode.rebalance_in_progress, b"")
                member.sync = None

    def _maybe_complete_join(self, group: Group, deadline_passed: bool = False) -> None:
        if group.state != PREPARING or (group.join_not_before_ms and not deadline_passed):
            return
        waiting = [m for m in group.members.values() if m.join is None]
        if (waiting or group.pending) and not deadline_passed:
            return
        for member in waiting:  # did not rejoin in time: out of the group, unless static
            if member.group_instance_id is None:
                _drop(group, member.member_id)
        group.join_not_before_ms = 0
        if group.members and not any(m.join is not None for m in group.members.values()):
            # only static members that did not rejoin: wait another rebalance timeout, their
            # session timeouts remove them meanwhile (Kafka's onCompleteJoin)
            timeout = max(m.rebalance_timeout_ms for m in group.members.values())
            group.rebalance_deadline_ms = self.clock() + timeout
            return
        if not group.members:
            group.state, group.leader, group.protocol_name = EMPTY, None, None
            group.generation_id += 1
            return
        group.generation_id += 1
        group.protocol_name = self._choose_protocol(group)
        if group.leader not in group.members or group.members[group.leader].join is None:
            # the leader must be a member that gets this answer
            group.leader = next(m.member_id for m in group.members.values() if m.join)
        group.state = COMPLETING
        everyone = _member_list(group)
        now = self.clock()
        for member in group.members.values():
            respond, member.join = member.join, None
            if respond is None:  # a static member that did not rejoin: it keeps its place
                continue
            member.last_heartbeat_ms = now  # the session restarts with the new generation
            respond(JoinAnswer(ErrorCode.none, group.generation_id, group.protocol_name,
                               group.leader, member.member_id,
                               everyone if member.member_id == group.leader else ()))

    @staticmethod
    def _choose_protocol(group: Group) -> str:
        """Kafka's ClassicGroup.selectProtocol: each member, in the order Kafka's member map
        holds them, votes for the first of its protocols that every member supports (one
        exists: _supports_protocols let each member in); the most votes win, a tie going to
        the protocol Kafka's vote map lists first."""
        members = [group.members[m] for m in java_hash_map_order(group.members)]
        supported_by_all = {name for name, _ in members[0].protocols
                            if all(name in dict(m.protocols) for m in members)}
        votes = Counter(next(name for name, _ in m.protocols if name in supported_by_all)
                        for m in members)  # keys in first-vote order, as they are put
        return max(java_hash_map_order(votes), key=votes.__getitem__)  # the first of the most

    # -- SyncGroup ----------------------------------------------------------------------------
    def sync(self, group_id: str, generation_id: int, member_id: str, assignments,
             respond: Callable[[ErrorCode, bytes], None],
             group_instance_id: str | None = None,
             protocol: tuple[str | None, str | None] = (None, None)) -> None:
        """protocol: the (type, name) the member believes the group has (SyncGroup v5+); one
        given and not the group's is INCONSISTENT_GROUP_PROTOCOL, after the member's checks."""
        group = self.groups.get(group_id)
        error = self._check_member(group, generation_id, member_id, group_instance_id)
        if error == ErrorCode.none and any(
                given is not None and held is not None and given != held
                for given, held in zip(protocol, (group.protocol_type, group.protocol_name),
                                       strict=True)):
            error = ErrorCode.inconsistent_group_protocol
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

    def _check_member(self, group: Group | None, generation_id: int, member_id: str,
                      group_instance_id: str | None = None) -> ErrorCode:
        if group is not None and group.fenced(member_id, group_instance_id):
            return ErrorCode.fenced_instance_id
        if group is None or member_id not in group.members:
            return ErrorCode.unknown_member_id
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        return ErrorCode.none

    # -- Heartbeat, LeaveGroup, time ----------------------------------------------------------
    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is not None and group.fenced(member_id, group_instance_id):
            return ErrorCode.fenced_instance_id
        if group is not None and member_id in group.members:
            group.members[member_id].last_heartbeat_ms = self.clock()
        if group is not None and group.state == PREPARING and member_id in group.members:
            return ErrorCode.rebalance_in_progress
        return self._check_member(group, generation_id, member_id)

    def leave(self, group_id: str, member_id: str,
              group_instance_id: str | None = None) -> ErrorCode:
        """member_id "" with an instance id: the static member holding it (an admin's removal,
        LeaveGroup v3+); none holding it is UNKNOWN_MEMBER_ID."""
        group = self.groups.get(group_id)
        if group is not None and not member_id and group_instance_id is not None:
            member_id = group.static_members.get(group_instance_id, "")
        if group is not None and group.fenced(member_id, group_instance_id):
            return ErrorCode.fenced_instance_id
        if group is not None and group.pending.pop(member_id, None) is not None:
            self._maybe_complete_join(group)  # a pending member leaving holds nothing up
            return ErrorCode.none
        if group is None or member_id not in group.members:
            return ErrorCode.unknown_member_id
        self._remove(group, member_id)
        return ErrorCode.none

    def _remove(self, group: Group, member_id: str) -> None:
        member = _drop(group, member_id)
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
            for member_id, expires in list(group.pending.items()):
                if now >= expires:  # never joined with its id: it no longer holds anything up
                    del group.pending[member_id]
                    self._maybe_complete_join(group)
            for member in list(group.members.values()):
                if member.join is None and member.sync is None and (
                        now - member.last_heartbeat_ms > member.session_timeout_ms):
                    self._remove(group, member.member_id)
            if group.state == PREPARING and group.join_not_before_ms:
                self._initial_delay_step(group, now)
            elif group.state == PREPARING and now >= group.rebalance_deadline_ms:
                self._maybe_complete_join(group, deadline_passed=True)

    def _initial_delay_step(self, group: Group, now: int) -> None:
        """InitialDelayedJoin's expiry: wait once more if members arrived meanwhile and time
        is left, else complete the join with whoever is there."""
        if now < group.join_not_before_ms:
            return
        if group.new_member_added and group.delay_left_ms > 0:
            group.new_member_added = False
            group.join_not_before_ms = now + min(self.initial_delay_ms, group.delay_left_ms)
            group.delay_left_ms = max(group.delay_left_ms - self.initial_delay_ms, 0)
            return
        self._maybe_complete_join(group, deadline_passed=True)

    # -- offset commits, unloading, describing ------------------------------------------------
    def check_commit(self, group_id: str, generation_id: int, member_id: str,
                     group_instance_id: str | None, has_offsets: bool = False) -> ErrorCode:
        """May this OffsetCommit go ahead (Kafka's validateOffsetCommit)? A commit outside
        group management (generation -1, no member) only to a group without members; a
        member's commit only from a current member in the current generation, and not while
        the group waits for its assignment. A commit without a generation to an empty group
        goes ahead whatever member id it names. A group known only by its committed offsets is
        Kafka's "simple" group: it exists, without members (UNKNOWN_MEMBER_ID)."""
        group = self.groups.get(group_id)
        if generation_id < 0 and (group is None or group.state == EMPTY):
            return ErrorCode.none  # ClassicGroup.validateOffsetCommit: any id, an empty group
        managed = generation_id >= 0 or bool(member_id) or group_instance_id is not None
        if not managed:
            return ErrorCode.unknown_member_id if group and group.members else ErrorCode.none
        if group is None and has_offsets:
            return ErrorCode.unknown_member_id
        if group is None:
            return ErrorCode.illegal_generation  # a generation we never knew (or forgot)
        error = self._check_member(group, generation_id, member_id, group_instance_id)
        if error == ErrorCode.none and group.state == COMPLETING:
            return ErrorCode.rebalance_in_progress
        return error

    def unload(self, group_ids) -> None:
        """This broker no longer coordinates these groups: waiting members learn it."""
        for group_id in group_ids:
            group = self.groups.pop(group_id, None)
            for member in group.members.values() if group else ():
                if member.join is not None:
                    member.join(JoinAnswer(ErrorCode.not_coordinator, member_id=member.member_id))
                if member.sync is not None:
                    member.sync(ErrorCode.not_coordinator, b"")

    def delete(self, group_id: str, has_offsets: bool) -> ErrorCode:
        """DeleteGroups for one group this broker coordinates (Kafka's
        GroupCoordinator.handleDeleteGroups): an Empty group, known by its state or only by its
        committed offsets, is forgotten (NONE; the caller removes its offsets); a group with
        members is NON_EMPTY_GROUP; one known by neither is GROUP_ID_NOT_FOUND."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.none if has_offsets else ErrorCode.group_id_not_found
        if group.members or group.state != EMPTY:
            return ErrorCode.non_empty_group
        del self.groups[group_id]
        return ErrorCode.none

    def describe(self, group_id: str, has_offsets: bool = False) -> dict:
        """DescribeGroups' answer for one group (Kafka's GroupMetadata.summary): members with
        their metadata and assignment only when the group is stable; a group known only by its
        committed offsets is Empty, an unknown one Dead."""
        group = self.groups.get(group_id)
        if group is None:
            return {"group_id": group_id, "error_code": 0,
                    "group_state": EMPTY if has_offsets else "Dead",
                    "protocol_type": "", "protocol_data": "", "members": []}
        stable = group.state == STABLE
        members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "member_metadata": dict(m.protocols).get(group.protocol_name, b"")
                    if stable else b"",
                    "member_assignment": m.assignment if stable else b""}
                   for m in group.members.values()]
        return {"group_id": group_id, "error_code": 0, "group_state": group.state,
                "protocol_type": group.protocol_type or "",
                "protocol_data": (group.protocol_name or "") if stable else "",
                "members": members}


def java_hash_map_order(keys) -> list[str]:
    """The order a java.util.HashMap with String keys, put in this order, iterates them: by
    bucket (the key's String.hashCode, its high half folded into the low, modulo the table
    size), then in put order within a bucket. The table is Java's default 16 buckets, doubled
    while the keys exceed three quarters of it: the table a map of these keys alone has
    (Kafka's maps never shrink, so one that once held many more keys may differ; bins of 8 or
    more, which Java turns into trees, are not modelled)."""
    keys = list(keys)
    buckets = 16
    while len(keys) > buckets * 3 // 4:
        buckets *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (buckets - 1)
    return sorted(keys, key=bucket)  # a stable sort: put order within a bucket


def _supports_protocols(group: Group, protocol_type: str, protocols) -> bool:
    """Kafka's ClassicGroup.supportsProtocols, asked of every join before anything else about
    the member: an empty group takes any type and protocols, as long as there are some; else
    the type must be the group's and one of the protocols named must be supported by every
    member -- a member joining again counted with the protocols of its last join, not these."""
    if group.state == EMPTY:
        return bool(protocol_type) and bool(protocols)
    members = group.members.values()
    return group.protocol_type == protocol_type and any(
        all(name in dict(m.protocols) for m in members) for name, _ in protocols)


def _member_list(group: Group) -> tuple[tuple[str, str | None, bytes], ...]:
    """What the leader is given to assign: every member with its metadata for the protocol."""
    return tuple((m.member_id, m.group_instance_id,
                  dict(m.protocols).get(group.protocol_name, b""))
                 for m in group.members.values())


def _drop(group: Group, member_id: str) -> Member:
    member = group.members.pop(member_id)
    if member.group_instance_id and group.static_members.get(member.group_instance_id) == (
            member_id):
        del group.static_members[member.group_instance_id]
    return member
