"""KIP-392: a consumer's Fetch v11+ (it carries client metadata) is served by a follower, up to
the follower's own hw; v4-v10 are refused there (NOT_LEADER_OR_FOLLOWER). Every answer below
was read off Apache Kafka 4.3.1, 3 nodes, on 2026-11-27 (docs/semantics.md, "Fetching from a
follower"), through the wire codec and the core broker (no sockets)."""

import uuid

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.broker import fetch_only_leader
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import build_batch, decode_batch, split_batches
from kafkaref.properties.wire_calls import call, core_brokers, replicate_once

KEY = ("t", 0)


def fetch_request(broker, version, offset, max_wait_ms=0, epoch=-1) -> dict:
    topic_id = uuid.UUID(broker.metadata.topic("t").topic_id)
    named = {"topic_id": topic_id} if version >= 13 else {"topic": "t"}
    return {"replica_id": -1, "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [], "topics": [{**named, "partitions": [{
                "partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                "current_leader_epoch": epoch, "log_start_offset": -1,
                "last_fetched_epoch": -1}]}]}


def fetch(broker, version, offset, epoch=-1):
    body = call(broker, 1, version, fetch_request(broker, version, offset, epoch=epoch))
    return body.responses[0].partitions[0]


def offsets(answer) -> list[int]:
    _, views = split_batches(bytes(answer.records or b""))
    return [r.offset for v in views for r in decode_batch(v).records]


def produce(leader, values):
    call(leader, 0, 12, {"transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": [{
        "name": "t", "partition_data": [{"index": 0, "records": build_batch(
            [(None, v, (), None) for v in values])}]}]})


@pytest.fixture
def follower_above_its_hw():
    """(leader, follower): the follower holds offsets 0..2 (batches [0] and [1, 2]) and knows
    hw 1 (a follower learns the hw one fetch late)."""
    brokers = core_brokers(2)
    call(brokers[0], 19, 4, {"topics": [{
        "name": "t", "num_partitions": 1, "replication_factor": 2, "assignments": [],
        "configs": []}], "timeout": 5000, "validate_only": False})
    leader_id = brokers[0].metadata.topic("t").partitions[0].leader
    leader, follower = (brokers[0], brokers[1]) if leader_id == 0 else (brokers[1], brokers[0])
    produce(leader, [b"a"])
    replicate_once(leader, follower, KEY)
    replicate_once(leader, follower, KEY)  # the follower learns hw 1
    produce(leader, [b"b", b"c"])
    replicate_once(leader, follower, KEY)
    partition = follower.replica_manager.partition(KEY)
    assert (partition.log_end_offset, partition.high_watermark) == (3, 1)
    return leader, follower


def test_the_version_decides_who_may_answer():
    """Kafka's FetchParams.fetchOnlyLeader: a follower's fetch, or a consumer's without client
    metadata (before v11)."""
    assert [fetch_only_leader(v, -1) for v in (4, 10, 11, 18)] == [True, True, False, False]
    assert fetch_only_leader(18, 1)


@pytest.mark.parametrize("version", [4, 10])
def test_before_v11_a_follower_refuses_a_consumer(follower_above_its_hw, version):
    _, follower = follower_above_its_hw
    answer = fetch(follower, version, 0)
    assert (answer.error_code, answer.high_watermark, offsets(answer)) == (
        ErrorCode.not_leader_or_follower, -1, [])


@pytest.mark.parametrize("version", [11, 12, 18])
def test_from_v11_a_follower_serves_up_to_its_own_hw(follower_above_its_hw, version):
    """Records 1 and 2 are on the follower but above its hw: never returned; the answer says
    the follower's hw and log start, and no preferred read replica (-1: no
    replica.selector.class, Kafka's default)."""
    _, follower = follower_above_its_hw
    answer = fetch(follower, version, 0)
    assert (answer.error_code, answer.high_watermark, offsets(answer)) == (
        ErrorCode.none, 1, [0])
    assert answer.log_start_offset == 0 and answer.preferred_read_replica == -1


@pytest.mark.parametrize(("offset", "error", "hw"), [
    (1, ErrorCode.none, 1),  # at the follower's hw
    (3, ErrorCode.none, 1),  # above its hw, at its log end: empty, no error
    (4, ErrorCode.offset_out_of_range, -1),  # above its log end
    (-1, ErrorCode.offset_out_of_range, -1),  # below its log start
])
def test_a_follower_answers_offsets_around_its_hw_as_kafka_does(follower_above_its_hw, offset,
                                                                 error, hw):
    _, follower = follower_above_its_hw
    answer = fetch(follower, 18, offset)
    assert (answer.error_code, answer.high_watermark, offsets(answer)) == (error, hw, [])


@pytest.mark.parametrize("version", [10, 11, 18])
def test_the_leader_epoch_is_checked_on_a_follower_before_leadership(follower_above_its_hw,
                                                                     version):
    """UNKNOWN_LEADER_EPOCH for an epoch ahead of the follower's, at v10 too (Kafka's
    Partition.getLocalLog checks the epoch first)."""
    _, follower = follower_above_its_hw
    assert fetch(follower, version, 0, epoch=1).error_code == ErrorCode.unknown_leader_epoch
    assert fetch(follower, version, 0, epoch=0).error_code == (
        ErrorCode.not_leader_or_follower if version < 11 else ErrorCode.none)


def test_a_fetch_parked_on_a_follower_completes_when_its_hw_rises(follower_above_its_hw):
    """Kafka's fetcher completes the delayed fetches of the partitions whose hw it raised
    (completeDelayedFetchRequests); seen on 4.3.1: a parked v18 fetch on a follower answered
    once the follower learned the new hw."""
    leader, follower = follower_above_its_hw
    request = build(load_request_schema(1, 18), fetch_request(follower, 18, 1, max_wait_ms=5000))
    decoded = wire.decode_request(wire.encode_request(1, "test", request)[4:], "")
    out = []
    follower.handle(decoded, out.append)
    assert out == []  # nothing below the follower's hw at offset 1: parked
    replicate_once(leader, follower, KEY)  # the leader's hw reaches 3; the follower's stays 1
    assert out == []
    replicate_once(leader, follower, KEY)  # the follower learns hw 3
    _, body = wire.decode_response(1, 18, wire.encode_response(1, out[0])[4:])
    answer = body.responses[0].partitions[0]
    assert (answer.error_code, answer.high_watermark, offsets(answer)) == (
        ErrorCode.none, 3, [1, 2])
