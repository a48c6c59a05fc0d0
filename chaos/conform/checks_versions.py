"""Checks of what the newer protocol versions carry (issue 23): fetching by topic id (KIP-516),
leader discovery in Produce and Fetch answers (KIP-951), and DeleteRecords with the log start
offset it moves. A broker that does not advertise the versions concerned is skipped, saying so.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import HIGHEST, Skip, check
from kafkaref.chaos.conform.checks_faults import new_leader
from kafkaref.chaos.conform.checks_log import values_batch
from kafkaref.chaos.conform.faults import (
    KILL,
    RESTART,
    inflict,
    replica_faults,
    target_of,
    wait_serving,
)
from kafkaref.chaos.conform.probe import TOPIC_ID_VERSIONS, Probe
from kafkaref.impl.client.connection import ConnectionClosed
from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST

FETCH_BY_ID = TOPIC_ID_VERSIONS[1]
PRODUCE_HINTS, FETCH_HINTS = 10, 16  # the first versions naming the current leader (KIP-951)
DELETE_RECORDS = 21
HIGH_WATERMARK = -1  # DeleteRecords' "up to the high watermark"


def _needs(probe: Probe, api_key: int, version: int, what: str) -> int:
    """The highest version of api_key both sides speak, Skip unless it reaches `version`."""
    if api_key not in probe.versions:
        raise Skip(f"the broker does not advertise api key {api_key}")
    high = probe.speakable(api_key)[1]
    if high < version:
        raise Skip(f"{what} needs v{version}; the broker's highest is v{high}")
    return high


@check("fetch_by_topic_id", "fetch", "KIP-516: Fetch v13+ names topics by id; an id the "
       "broker does not know is UNKNOWN_TOPIC_ID", levels=(HIGHEST,))
def fetch_by_topic_id(probe: Probe):
    """A topic fetched by its id (the id Metadata gives) returns the records it holds, at the
    offsets they were written at, in an answer naming the topic by that id; a fetch naming an
    id no topic has answers UNKNOWN_TOPIC_ID for it, and none of another topic's records."""
    version = _needs(probe, 1, FETCH_BY_ID, "fetching by topic id")
    topic = probe.create_topic("byid")
    written = [probe.produce_ok(topic, values_batch(b"i%d-" % i, 2)) for i in range(3)]
    topic_id = probe.topic_id(topic)
    probe.expect(topic_id != uuid.UUID(int=0), "Metadata gives the topic no id",
                 expected="a topic id (KIP-516)")
    request = probe.fetch_values(topic, 0, 0)
    answer = probe.leader(topic).call(1, request, version)
    probe.expect([t.topic_id for t in answer.responses] == [topic_id], "the answer does not "
                 "name the topic by the id asked", request=request, response=answer,
                 expected=str(topic_id))
    part = probe.fetch_partition(answer, request)
    probe.expect_error(part.error_code, ErrorCode.none, "Fetch by topic id", part)
    records = probe.records(part)
    probe.expect([r.offset for r in records] == list(range(6)) and written == [0, 2, 4],
                 "fetching by id did not return the records at their offsets",
                 response=part, expected="offsets 0..5")
    stranger = uuid.uuid4()
    request = {**request, "topics": [{"topic_id": stranger, "partitions": request["topics"][0][
        "partitions"]}]}
    answer = probe.leader(topic).call(1, request, version)
    found = [(t.topic_id, p.error_code, probe.records(p)) for t in answer.responses
             for p in t.partitions]
    probe.expect([(i, e) for i, e, _ in found] == [(stranger, ErrorCode.unknown_topic_id)]
                 and not found[0][2], "a fetch by an unknown topic id", request=request,
                 response=answer, expected="UNKNOWN_TOPIC_ID for that id, no records")
    return f"Fetch v{version}: 6 records by id {topic_id}; an unknown id UNKNOWN_TOPIC_ID"


@check("leader_discovery", "producer", "KIP-951: NOT_LEADER_OR_FOLLOWER answers name the "
       "current leader and its endpoint (Produce v10+)", levels=(HIGHEST,))
def leader_discovery(probe: Probe):
    """A Produce (v10+) sent to a broker that holds a replica of the partition but does not
    lead it is answered NOT_LEADER_OR_FOLLOWER with the current leader's id and epoch, and
    node_endpoints giving that leader's address, so a client retries there without asking for
    metadata first. (Not a Fetch: from v11 a follower serves a consumer's fetch, KIP-392.)"""
    version = _needs(probe, 0, PRODUCE_HINTS, "leader hints in Produce")
    topic, meta, follower, conn = probe.follower("hints")
    produced = conn.call(0, probe.produce_values(topic, 0, values_batch(b"h", 1), acks=1),
                         version)
    _expect_hint(probe, produced, produced.responses[0].partition_responses[0], meta,
                 f"Produce v{version} to follower {follower}")
    return (f"follower {follower} names leader {meta.leader_id} (epoch {meta.leader_epoch}) "
            f"in Produce v{version}")


def _expect_hint(probe: Probe, answer, part, meta, what: str,
                 error: ErrorCode = ErrorCode.not_leader_or_follower) -> None:
    probe.expect_error(part.error_code, error, what, answer)
    leader = (part.current_leader.leader_id, part.current_leader.leader_epoch)
    probe.soft(leader == (meta.leader_id, meta.leader_epoch), f"{what}: the answer names "
               f"leader {leader}", response=answer,
               expected=f"leader {meta.leader_id}, epoch {meta.leader_epoch}")
    host, port = probe.broker_address(meta.leader_id)
    endpoints = {(n.node_id, n.host, n.port) for n in answer.node_endpoints}
    probe.soft((meta.leader_id, host, port) in endpoints, f"{what}: node_endpoints lack the "
               f"leader's address", response=answer, expected=f"{meta.leader_id} at {host}:{port}")


@check("leader_discovery_after_failover", "faults", "KIP-951 after a leader change: the old "
       "leader, back as a follower, names the new one; so does a Fetch v16+ at the old epoch",
       deadline_s=150.0, levels=(HIGHEST,))
def leader_discovery_after_failover(probe: Probe):
    """The partition's leader is killed (--kill-cmd aimed at it) and, once another replica
    leads, restarted (--restart-cmd): a Produce (v10+) sent to it, now a follower, is answered
    NOT_LEADER_OR_FOLLOWER naming the new leader, its new epoch and its address; a Fetch
    (v16+) sent to the new leader at the old leader epoch is FENCED_LEADER_EPOCH, naming the
    same."""
    version = _needs(probe, 0, PRODUCE_HINTS, "leader hints in Produce")
    replica_faults(probe, "no other replica to take over", "to kill the leader")
    topic = probe.create_topic("hintsover")
    probe.produce_ok(topic, values_batch(b"f", 1))
    before = probe.wait_for_leaders(topic, 1).partitions[0]
    target = target_of(probe, before.leader_id)
    inflict(probe, KILL, target)
    try:
        after = new_leader(probe, topic, before.leader_id)
    finally:
        inflict(probe, RESTART, target)
        wait_serving(probe, target)
    after = probe.wait_for_leaders(topic, 1, timeout_s=60).partitions[0]
    if after.leader_id == before.leader_id:
        raise Skip(f"broker {before.leader_id} leads again after its restart (preferred "
                   f"leader election): no follower that used to lead")
    conn = probe.connect(probe.broker_address(before.leader_id))
    answer = conn.call(0, probe.produce_values(topic, 0, values_batch(b"g", 1), acks=1),
                       version)
    _expect_hint(probe, answer, answer.responses[0].partition_responses[0], after,
                 f"Produce v{version} to the old leader {before.leader_id}")
    fetch_version = probe.speakable(1)[1]
    if fetch_version < FETCH_HINTS:
        return (f"old leader {before.leader_id} names {after.leader_id} "
                f"(epoch {after.leader_epoch}) in Produce v{version}")
    request = probe.fetch_values(topic, 0, 0)  # a consumer still at the old leader epoch
    request["topics"][0]["partitions"][0]["current_leader_epoch"] = before.leader_epoch
    fetched = probe.connect(probe.broker_address(after.leader_id)).call(1, request,
                                                                        fetch_version)
    _expect_hint(probe, fetched, probe.fetch_partition(fetched, request), after,
                 f"Fetch v{fetch_version} at the old epoch {before.leader_epoch}",
                 ErrorCode.fenced_leader_epoch)
    return (f"old leader {before.leader_id} names {after.leader_id} (epoch "
            f"{after.leader_epoch}) in Produce v{version}; the new leader does in Fetch "
            f"v{fetch_version} at the old epoch (FENCED_LEADER_EPOCH)")


@check("delete_records", "log", "protocol: DeleteRecords; Kafka's ReplicaManager.deleteRecords "
       "(the log start offset, the low watermark)")
def delete_records(probe: Probe):
    """DeleteRecords up to offset 3 of a partition holding 0..5 answers low watermark 3 (once
    every replica has moved its log start there); then ListOffsets EARLIEST answers 3, a fetch at
    2 is OFFSET_OUT_OF_RANGE, a fetch at 3 returns the records from 3 on, a produce answer
    carries log start offset 3; deleting past the high watermark is OFFSET_OUT_OF_RANGE, and up
    to -1 deletes up to the high watermark."""
    if DELETE_RECORDS not in probe.versions:
        raise Skip("the broker does not advertise DeleteRecords (api key 21)")
    topic = probe.create_topic("deleterecords")
    for i in range(6):
        probe.produce_ok(topic, values_batch(b"d%d-" % i, 1))
    conn = probe.leader(topic)

    def delete(offset: int):
        try:
            answer = conn.call(DELETE_RECORDS, {"timeout": int(probe.timeout_s * 1000),
                                                "topics": [{"name": topic, "partitions": [
                                                    {"partition_index": 0, "offset": offset}]}]})
        except ConnectionClosed:  # a version it advertises: a wrong answer, not a lost broker
            raise probe.fail(f"DeleteRecords v{probe.version(DELETE_RECORDS)}: the broker "
                             "closed the connection", expected="an answer (it advertises "
                             f"v{'-'.join(map(str, probe.versions[DELETE_RECORDS]))})") from None
        return answer, answer.topics[0].partitions[0]

    answer, part = delete(3)
    probe.expect_error(part.error_code, ErrorCode.none, "DeleteRecords up to 3", answer)
    probe.soft(part.low_watermark == 3, f"low watermark {part.low_watermark}", response=answer,
               expected="3")
    probe.soft(probe.offset_of(topic, EARLIEST) == 3, "ListOffsets EARLIEST after the deletion",
               expected="3")
    below = probe.fetch(topic, 2)
    probe.expect_error(below.error_code, ErrorCode.offset_out_of_range,
                       "a fetch below the log start", below, soft=True)
    records = probe.records(probe.fetch(topic, 3))
    probe.soft([r.offset for r in records][:1] == [3], "a fetch at the log start",
               response=str([r.offset for r in records]), expected="records from offset 3")
    produced = probe.produce(topic, values_batch(b"after", 1))
    start = getattr(produced, "log_start_offset", 3)  # v5+
    probe.soft(start == 3, f"the produce answer's log start offset is {start}",
               response=produced, expected="3")
    end = probe.offset_of(topic, LATEST)
    answer, part = delete(end + 1)
    probe.expect_error(part.error_code, ErrorCode.offset_out_of_range,
                       "DeleteRecords past the high watermark", answer, soft=True)
    answer, part = delete(HIGH_WATERMARK)
    probe.expect_error(part.error_code, ErrorCode.none, "DeleteRecords up to -1", answer)
    probe.soft(part.low_watermark == end, f"DeleteRecords -1 moved the log start to "
               f"{part.low_watermark}", response=answer, expected=f"the high watermark, {end}")
    return f"log start 0 -> 3 -> {part.low_watermark} (the high watermark)"
