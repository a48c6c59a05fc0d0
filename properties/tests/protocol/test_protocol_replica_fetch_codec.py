"""The replica fetcher's hand codec for Fetch v12 agrees with kio (the oracle) both ways, and
rejects truncated or padded responses with MalformedFetchResponse."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.replica_fetch import (
    FetchPosition,
    MalformedFetchResponse,
    decode_fetch_response,
    encode_fetch_request,
)

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
NAMES = st.text(min_size=1, max_size=12)
positions = st.builds(FetchPosition, partition=st.integers(0, 2**31 - 1),
                      current_leader_epoch=INT32, fetch_offset=INT64,
                      last_fetched_epoch=INT32, partition_max_bytes=INT32,
                      log_start_offset=INT64)


@given(correlation_id=INT32, client_id=st.one_of(st.none(), st.text(max_size=20)),
       replica_id=INT32, max_wait=st.integers(0, 2**31 - 1), min_bytes=INT32,
       max_bytes=INT32, topics=st.lists(st.tuples(NAMES, st.lists(positions, max_size=3)),
                                        max_size=3))
def test_request_bytes_are_kios(correlation_id, client_id, replica_id, max_wait, min_bytes,
                                max_bytes, topics):
    request = build(load_request_schema(1, 12), {
        "replica_id": replica_id, "max_wait": max_wait, "min_bytes": min_bytes,
        "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": name, "partitions": [{
            "partition": p.partition, "current_leader_epoch": p.current_leader_epoch,
            "fetch_offset": p.fetch_offset, "last_fetched_epoch": p.last_fetched_epoch,
            "log_start_offset": p.log_start_offset,
            "partition_max_bytes": p.partition_max_bytes}
            for p in ps]} for name, ps in topics]})
    assert encode_fetch_request(correlation_id, client_id, replica_id, max_wait, min_bytes,
                                max_bytes, topics) == wire.encode_request(
        correlation_id, client_id, request)


partitions = st.fixed_dictionaries({
    "partition_index": st.integers(0, 2**31 - 1), "error_code": st.sampled_from([0, 1, 6, 74]),
    "high_watermark": INT64, "last_stable_offset": INT64, "log_start_offset": INT64,
    "aborted_transactions": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
        {"producer_id": INT64, "first_offset": INT64}), max_size=2)),
    "preferred_read_replica": INT32,
    "records": st.one_of(st.none(), st.binary(max_size=40)),
    "diverging_epoch": st.one_of(st.just({"epoch": -1, "end_offset": -1}),
                                 st.fixed_dictionaries({"epoch": INT32, "end_offset": INT64})),
    "current_leader": st.fixed_dictionaries({"leader_id": INT32, "leader_epoch": INT32}),
    "snapshot_id": st.fixed_dictionaries({"end_offset": INT64, "epoch": INT32})})
responses = st.fixed_dictionaries({
    "throttle_time": st.integers(0, 2**31 - 1), "error_code": st.sampled_from([0, 70]),
    "session_id": INT32, "responses": st.lists(st.fixed_dictionaries(
        {"topic": NAMES, "partitions": st.lists(partitions, max_size=3)}), max_size=3)})


def frame_of(values, correlation_id=7) -> bytes:
    return wire.encode_response(correlation_id, build(load_response_schema(1, 12), values))


@given(values=responses, correlation_id=INT32)
def test_response_fields_are_kios(values, correlation_id):
    payload = frame_of(values, correlation_id)[4:]
    got_id, error, topics = decode_fetch_response(payload)
    want_id, want = wire.decode_response(1, 12, payload)
    assert (got_id, error) == (want_id, want.error_code)
    assert [name for name, _ in topics] == [t.topic for t in want.responses]
    for (_, got), topic in zip(topics, want.responses, strict=True):
        for p, w in zip(got, topic.partitions, strict=True):
            diverging = (w.diverging_epoch.epoch, w.diverging_epoch.end_offset)
            assert (p.partition_index, p.error_code, p.high_watermark, p.log_start_offset) == (
                w.partition_index, w.error_code, w.high_watermark, w.log_start_offset)
            assert (None if p.records is None else bytes(p.records)) == w.records
            assert (p.diverging_epoch or (-1, -1)) == diverging


@given(values=responses, cut=st.integers(1, 400))
def test_truncated_or_padded_responses_are_malformed(values, cut):
    payload = frame_of(values)[4:]
    with pytest.raises(MalformedFetchResponse):
        decode_fetch_response(payload[: max(0, len(payload) - cut)])
    with pytest.raises(MalformedFetchResponse):
        decode_fetch_response(payload + b"\0" * (cut % 7 + 1))
