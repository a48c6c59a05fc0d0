"""Checks of the classic consumer group protocol and committed offsets (protocol guide:
"The Consumer Group Protocol"; KIP-394 member id required; KIP-62)."""

from __future__ import annotations

import struct
import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import check
from kafkaref.chaos.conform.probe import Probe


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
        answer = probe.find_coordinator({"key": group, "key_type": 0})
        probe.expect_error(answer.error_code, ErrorCode.none, "FindCoordinator", answer)
        conn = probe.connect((answer.host, answer.port))
        fetched = conn.call(9, {"group_id": group, "require_stable": False, "topics": []})
        if getattr(fetched, "error_code", ErrorCode.none) not in RETRIABLE or (  # v2+
                time.monotonic() > deadline):
            return conn
        conn.close()
        time.sleep(0.1)


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


@check("offset_commit_fetch", "groups", "protocol: OffsetCommit / OffsetFetch (simple "
       "commits: generation -1); KIP-211")
def offset_commit_fetch(probe: Probe):
    """Offsets committed for a group (with metadata) are fetched back as committed, a partition
    never committed fetches -1, and a commit for a topic that does not exist is refused with
    UNKNOWN_TOPIC_OR_PARTITION."""
    topic = probe.create_topic("commit", partitions=2)
    group = probe.name("c")
    conn = coordinator(probe, group)

    def commit(name, offset):
        return conn.call(8, {"group_id": group, "generation_id_or_member_epoch": -1,
                             "member_id": "", "group_instance_id": None,
                             "retention_time": -1, "topics": [{"name": name, "partitions": [
                                 {"partition_index": 0, "committed_offset": offset,
                                  "committed_leader_epoch": -1,
                                  "committed_metadata": "conform"}]}]})

    answer = commit(topic, 42)
    probe.expect_error(answer.topics[0].partitions[0].error_code, ErrorCode.none,
                       "OffsetCommit", answer)
    fetched = conn.call(9, {"group_id": group, "require_stable": False,
                            "topics": [{"name": topic, "partition_indexes": [0, 1]}]})
    got = {p.partition_index: (p.committed_offset, p.metadata)
           for t in fetched.topics for p in t.partitions}
    probe.soft(got.get(0) == (42, "conform") and got.get(1, (None,))[0] == -1,
                 "OffsetFetch does not return what was committed", response=fetched,
                 expected="partition 0: 42 'conform'; partition 1: -1")
    absent = probe.name("nosuchtopic")
    answer = commit(absent, 7)
    probe.expect_error(answer.topics[0].partitions[0].error_code,
                       ErrorCode.unknown_topic_or_partition,
                       "OffsetCommit for a topic that does not exist", answer, soft=True)
