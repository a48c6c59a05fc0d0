"""Checks of the classic consumer group protocol and committed offsets (protocol guide:
"The Consumer Group Protocol"; KIP-394 member id required; KIP-62)."""

from __future__ import annotations

import struct
import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import HIGHEST, check
from kafkaref.chaos.conform.probe import TOPIC_ID_VERSIONS, Probe


def _subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


def _assignment(topic: str, partitions: list[int]) -> bytes:
    name = topic.encode()
    return (struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", len(partitions))
            + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1))


def coordinator(probe: Probe, group: str):
    """A connection to the group's coordinator once it serves the group: FindCoordinator and
    the coordinator itself may answer retriable errors for a while (the offsets topic being
    created, its leader learning that it leads and loading it), as on Kafka."""
    deadline = time.monotonic() + probe.timeout_s
    while True:
        answer = probe.find_coordinator({"key": group, "key_type": 0,
                                         "coordinator_keys": [group]})
        found = answer.coordinators[0] if hasattr(answer, "coordinators") else answer  # v4+
        probe.expect_error(found.error_code, ErrorCode.none, "FindCoordinator", answer)
        conn = probe.connect((found.host, found.port))
        fetched = conn.call(9, offset_fetch_values(group, []))
        if offsets_fetched(fetched)[0] not in RETRIABLE or time.monotonic() > deadline:
            return conn
        conn.close()
        time.sleep(0.1)


def offset_fetch_values(group: str, topics: list[dict]) -> dict:
    """One group's OffsetFetch at any version: v8+ asks as one of several groups (KIP-709)."""
    return {"group_id": group, "require_stable": False, "topics": topics,
            "groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                        "topics": topics}]}


def offsets_fetched(answer) -> tuple[ErrorCode, tuple]:
    """(the group's error code, its topics) from an OffsetFetch answer of any version (v1
    has no group error code: NONE)."""
    if hasattr(answer, "groups"):
        return answer.groups[0].error_code, answer.groups[0].topics
    return getattr(answer, "error_code", ErrorCode.none), answer.topics


RETRIABLE = (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress,
             ErrorCode.coordinator_not_available)


@check("consumer_group", "groups", "protocol: JoinGroup/SyncGroup/Heartbeat/LeaveGroup; "
       "KIP-394 (MEMBER_ID_REQUIRED from JoinGroup v4)")
def consumer_group(probe: Probe):
    """One member joins a group through its coordinator (retrying with the member id when
    answered MEMBER_ID_REQUIRED), becomes leader, syncs an assignment and gets it back,
    heartbeats, and leaves."""
    topic = probe.create_topic("group", partitions=2)
    group = probe.name("g")
    conn = coordinator(probe, group)
    join = {"group_id": group, "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": _subscription(topic)}]}
    answer = conn.call(11, join)
    if answer.error_code == ErrorCode.member_id_required:
        answer = conn.call(11, {**join, "member_id": answer.member_id})
    probe.expect_error(answer.error_code, ErrorCode.none, "JoinGroup", answer)
    member, generation = answer.member_id, answer.generation_id
    probe.expect(answer.leader == member and len(answer.members) == 1,
                 "the only member is not the leader with itself as member", response=answer,
                 expected="leader == member_id, one member")
    assignment = _assignment(topic, [0, 1])
    synced = conn.call(14, {"group_id": group, "generation_id": generation,
                            "member_id": member, "group_instance_id": None,
                            "protocol_type": "consumer", "protocol_name": "range",
                            "assignments": [{"member_id": member, "assignment": assignment}]})
    probe.expect_error(synced.error_code, ErrorCode.none, "SyncGroup", synced)
    probe.expect(bytes(synced.assignment) == assignment, "SyncGroup returned another "
                 "assignment", response=synced, expected="the leader's assignment")
    beat = conn.call(12, {"group_id": group, "generation_id": generation, "member_id": member,
                          "group_instance_id": None})
    probe.expect_error(beat.error_code, ErrorCode.none, "Heartbeat", beat)
    left = conn.call(13, {"group_id": group, "member_id": member,
                          "members": [{"member_id": member, "group_instance_id": None}]})
    probe.expect_error(left.error_code, ErrorCode.none, "LeaveGroup", left)


@check("sync_group_waits_for_leader", "groups", "protocol: SyncGroup ('the leader sends the "
       "assignment; followers receive theirs in the response'); Kafka's GroupMetadataManager "
       "holds a follower's SyncGroup until the leader's arrives; nisshi-io/nisshi#679",
       levels=(HIGHEST,))
def sync_group_waits_for_leader(probe: Probe):
    """In a rebalance of two members, a follower that sends SyncGroup before the leader gets,
    once the leader has synced (4 s later, well within the rebalance timeout), exactly the
    assignment the leader gave it: its SyncGroup is held until then, not answered early with an
    empty assignment (what a client then fails to parse, or reads as owning nothing). The
    rebalance also moves the group to a new generation. (At the highest versions only: its
    two members need KIP-394's member ids, JoinGroup v4+; before, the second member's first
    JoinGroup already holds the rebalance.)"""
    topic = probe.create_topic("sync", partitions=2)
    group = probe.name("s")
    first, second = coordinator(probe, group), coordinator(probe, group)
    join = {"group_id": group, "session_timeout": 10_000, "rebalance_timeout": 10_000,
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": _subscription(topic)}]}
    one = _join(probe, first, join, "")
    generation = one.generation_id
    _sync(first, group, one, [(one.member_id, _assignment(topic, [0, 1]))])
    # The second member's JoinGroup waits for the rebalance; the first learns of it from its
    # heartbeat and joins again, which completes the rebalance for both.
    two_id = _member_id(probe, second, join)
    pending = second.send(11, {**join, "member_id": two_id})
    _wait_rebalancing(probe, first, group, one)
    one = _join(probe, first, join, one.member_id)
    two = second.receive(11, pending)
    probe.expect_error(two.error_code, ErrorCode.none, "the second member's JoinGroup", two)
    answers = {one.member_id: (first, one), two.member_id: (second, two)}
    leader_id = one.leader
    probe.expect(leader_id in answers and two.leader == leader_id, "the two members were "
                 "told of different leaders, or of neither", response=[one, two],
                 expected="one leader, the same for both")
    probe.soft(one.generation_id > generation, f"the rebalance kept generation {generation}",
               response=one, expected=f"a generation above {generation}")
    (follower_id,) = set(answers) - {leader_id}
    given = {leader_id: _assignment(topic, [0]), follower_id: _assignment(topic, [1])}
    follower_conn, follower_join = answers[follower_id]
    held = _send_sync(follower_conn, group, follower_join, [])  # before the leader's
    time.sleep(SLOW_LEADER_S)  # a leader slow to assign (a large group, a GC pause)
    leader_conn, leader_join = answers[leader_id]
    synced = _sync(leader_conn, group, leader_join, list(given.items()))
    probe.expect_error(synced.error_code, ErrorCode.none, "the leader's SyncGroup", synced)
    followed = follower_conn.receive(14, held)
    probe.expect_error(followed.error_code, ErrorCode.none, "the follower's SyncGroup, sent "
                       "before the leader's", followed)
    probe.expect(bytes(followed.assignment) == given[follower_id], "the follower's SyncGroup "
                 "did not return the assignment the leader gave it", response=followed,
                 expected=f"{len(given[follower_id])} bytes: partition 1 of {topic}")
    probe.expect(bytes(synced.assignment) == given[leader_id], "the leader's SyncGroup did "
                 "not return its own assignment", response=synced, expected="partition 0")
    for member_id, (conn, _) in answers.items():  # an Empty group, which clean-up deletes
        conn.call(13, {"group_id": group, "member_id": member_id,
                       "members": [{"member_id": member_id, "group_instance_id": None}]})
    return (f"generation {leader_join.generation_id}: the follower's SyncGroup, sent "
            f"{SLOW_LEADER_S:.0f} s before the leader's, got its assignment")


SLOW_LEADER_S = 4.0  # past the 3 s Nisshi waits before answering a follower (nisshi#680)


def _member_id(probe: Probe, conn, join: dict) -> str:
    """The member id the coordinator hands out (KIP-394: JoinGroup v4+ answers MEMBER_ID_
    REQUIRED with it first); "" for brokers or versions that do not."""
    answer = conn.call(11, {**join, "member_id": ""})
    if answer.error_code == ErrorCode.member_id_required:
        return answer.member_id
    probe.expect_error(answer.error_code, ErrorCode.none, "JoinGroup", answer)
    return answer.member_id


def _join(probe: Probe, conn, join: dict, member_id: str):
    answer = conn.call(11, {**join, "member_id": member_id})
    if answer.error_code == ErrorCode.member_id_required:
        answer = conn.call(11, {**join, "member_id": answer.member_id})
    probe.expect_error(answer.error_code, ErrorCode.none, "JoinGroup", answer)
    return answer


def _send_sync(conn, group: str, joined, assignments) -> int:
    return conn.send(14, {"group_id": group, "generation_id": joined.generation_id,
                          "member_id": joined.member_id, "group_instance_id": None,
                          "protocol_type": "consumer", "protocol_name": "range",
                          "assignments": [{"member_id": m, "assignment": a}
                                          for m, a in assignments]})


def _sync(conn, group: str, joined, assignments):
    return conn.receive(14, _send_sync(conn, group, joined, assignments))


def _wait_rebalancing(probe: Probe, conn, group: str, joined, timeout_s: float = 10.0) -> None:
    """Heartbeat until the coordinator answers REBALANCE_IN_PROGRESS (the other member joined)."""
    deadline = time.monotonic() + timeout_s
    while True:
        beat = conn.call(12, {"group_id": group, "generation_id": joined.generation_id,
                              "member_id": joined.member_id, "group_instance_id": None})
        if beat.error_code == ErrorCode.rebalance_in_progress:
            return
        probe.expect_error(beat.error_code, ErrorCode.none, "Heartbeat while a member joins",
                           beat)
        probe.expect(time.monotonic() < deadline, "no REBALANCE_IN_PROGRESS in heartbeats "
                     f"{timeout_s:.0f} s after a second member joined", response=beat,
                     expected="REBALANCE_IN_PROGRESS")
        time.sleep(0.1)


@check("offset_commit_fetch", "groups", "protocol: OffsetCommit / OffsetFetch (simple "
       "commits: generation -1); KIP-211")
def offset_commit_fetch(probe: Probe):
    """Offsets committed for a group (with metadata) are fetched back as committed, a partition
    never committed fetches -1, and a commit for a topic that does not exist is refused with
    UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID from v10, which names topics by id)."""
    topic = probe.create_topic("commit", partitions=2)
    group = probe.name("c")
    conn = coordinator(probe, group)

    def commit(name, offset):
        return conn.call(8, {"group_id": group, "generation_id_or_member_epoch": -1,
                             "member_id": "", "group_instance_id": None,
                             "retention_time": -1, "topics": [{**probe.named(name, 8),
                                                              "partitions": [
                                 {"partition_index": 0, "committed_offset": offset,
                                  "committed_leader_epoch": -1,
                                  "committed_metadata": "conform"}]}]})

    answer = commit(topic, 42)
    probe.expect_error(answer.topics[0].partitions[0].error_code, ErrorCode.none,
                       "OffsetCommit", answer)
    fetched = conn.call(9, offset_fetch_values(group, [{**probe.named(topic, 9),
                                                        "partition_indexes": [0, 1]}]))
    got = {p.partition_index: (p.committed_offset, p.metadata)
           for t in offsets_fetched(fetched)[1] for p in t.partitions}
    probe.soft(got.get(0) == (42, "conform") and got.get(1, (None,))[0] == -1,
                 "OffsetFetch does not return what was committed", response=fetched,
                 expected="partition 0: 42 'conform'; partition 1: -1")
    absent = probe.name("nosuchtopic")
    answer = commit(absent, 7)
    by_id = probe.version(8) >= TOPIC_ID_VERSIONS[8]  # v10 names it by an id nobody has
    probe.expect_error(answer.topics[0].partitions[0].error_code,
                       ErrorCode.unknown_topic_id if by_id else ErrorCode.unknown_topic_or_partition,
                       "OffsetCommit for a topic that does not exist", answer, soft=True)
