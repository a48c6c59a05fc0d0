"""The hand encoder of Fetch responses writes exactly the bytes kio writes (kio is the oracle)."""

import uuid

from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_response_schema

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.fetch_response import (
    LAST_VERSION,
    TOPIC_IDS_FROM,
    NodeEndpoint,
    PartitionAnswer,
    encode_fetch_response,
)
from kafkaref.impl.protocol.messages import build

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
answers = st.builds(
    PartitionAnswer,
    index=st.integers(0, 2**31 - 1),
    error_code=st.sampled_from([0, 1, 3, 6, 74, 75]),
    high_watermark=INT64,
    log_start_offset=INT64,
    records=st.one_of(st.none(), st.binary(max_size=64)),
    diverging_epoch=st.one_of(st.none(), st.tuples(INT32, INT64)),
    current_leader=st.one_of(st.none(), st.just((-1, -1)), st.tuples(INT32, INT32)),
    last_stable_offset=st.one_of(st.none(), INT64),
    aborted_empty=st.booleans())
topics = st.lists(st.tuples(st.one_of(st.text(min_size=1, max_size=12), st.uuids()),
                            st.lists(answers, max_size=4)), max_size=4)
endpoints = st.lists(st.builds(NodeEndpoint, node_id=INT32, host=st.text(max_size=12),
                               port=INT32, rack=st.one_of(st.none(), st.text(max_size=5))),
                     max_size=3)


def as_version_names(version, topics):
    """Topics named as the version names them: uuids from v13, names before."""
    def named(topic):
        if version >= TOPIC_IDS_FROM:
            return topic if isinstance(topic, uuid.UUID) else uuid.uuid5(uuid.NAMESPACE_DNS, topic)
        return topic if isinstance(topic, str) else str(topic)
    return [(named(t), ps) for t, ps in topics]


def kio_frame(version, correlation_id, topics, error_code, session_id, nodes=()) -> bytes:
    def partition(p):
        diverging = p.diverging_epoch or (-1, -1)
        leader = p.current_leader or (-1, -1)
        stable = p.high_watermark if p.last_stable_offset is None else p.last_stable_offset
        return {"partition_index": p.index, "error_code": p.error_code,
                "high_watermark": p.high_watermark, "last_stable_offset": stable,
                "log_start_offset": p.log_start_offset,
                "aborted_transactions": [] if p.aborted_empty else None,
                "preferred_read_replica": -1, "records": p.records,
                "diverging_epoch": {"epoch": diverging[0], "end_offset": diverging[1]},
                "current_leader": {"leader_id": leader[0], "leader_epoch": leader[1]}}

    response = build(load_response_schema(1, version), {
        "throttle_time": 0, "error_code": error_code, "session_id": session_id,
        "node_endpoints": [n._asdict() for n in nodes],
        "responses": [{"topic": topic, "topic_id": topic, "partitions": [partition(p) for p in ps]}
                      for topic, ps in topics]})
    return wire.encode_response(correlation_id, response)


@given(version=st.integers(4, LAST_VERSION), correlation_id=INT32, topics=topics,
       error_code=st.sampled_from([0, 70]), session_id=INT32, nodes=endpoints)
def test_same_bytes_as_kio(version, correlation_id, topics, error_code, session_id, nodes):
    if version < 7:
        error_code = session_id = 0  # not in the schema before v7
    if version < 16:
        nodes = []  # no node_endpoints before v16
    topics = as_version_names(version, topics)
    parts = encode_fetch_response(version, correlation_id, topics, error_code, session_id,
                                  tuple(nodes))
    assert b"".join(bytes(part) for part in parts) == kio_frame(
        version, correlation_id, topics, error_code, session_id, nodes)


def test_records_are_parts_of_their_own_not_copies():
    records = b"x" * 100
    parts = encode_fetch_response(12, 1, [("t", [PartitionAnswer(0, 0, 5, 0, records)])])
    assert any(part is records for part in parts)
