"""The hand encoder of Fetch responses writes exactly the bytes kio writes (kio is the oracle)."""

from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_response_schema

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.fetch_response import PartitionAnswer, encode_fetch_response
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
    last_stable_offset=st.one_of(st.none(), INT64),
    aborted_empty=st.booleans())
topics = st.lists(st.tuples(st.text(min_size=1, max_size=12),
                            st.lists(answers, max_size=4)), max_size=4)


def kio_frame(version, correlation_id, topics, error_code, session_id) -> bytes:
    def partition(p):
        diverging = p.diverging_epoch or (-1, -1)
        stable = p.high_watermark if p.last_stable_offset is None else p.last_stable_offset
        return {"partition_index": p.index, "error_code": p.error_code,
                "high_watermark": p.high_watermark, "last_stable_offset": stable,
                "log_start_offset": p.log_start_offset,
                "aborted_transactions": [] if p.aborted_empty else None,
                "preferred_read_replica": -1, "records": p.records,
                "diverging_epoch": {"epoch": diverging[0], "end_offset": diverging[1]}}

    response = build(load_response_schema(1, version), {
        "throttle_time": 0, "error_code": error_code, "session_id": session_id,
        "responses": [{"topic": name, "partitions": [partition(p) for p in ps]}
                      for name, ps in topics]})
    return wire.encode_response(correlation_id, response)


@given(version=st.integers(4, 12), correlation_id=INT32, topics=topics,
       error_code=st.sampled_from([0, 70]), session_id=INT32)
def test_same_bytes_as_kio(version, correlation_id, topics, error_code, session_id):
    if version < 7:
        error_code = session_id = 0  # not in the schema before v7
    parts = encode_fetch_response(version, correlation_id, topics, error_code, session_id)
    assert b"".join(bytes(part) for part in parts) == kio_frame(
        version, correlation_id, topics, error_code, session_id)


def test_records_are_parts_of_their_own_not_copies():
    records = b"x" * 100
    parts = encode_fetch_response(12, 1, [("t", [PartitionAnswer(0, 0, 5, 0, records)])])
    assert any(part is records for part in parts)
