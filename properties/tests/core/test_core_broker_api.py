"""Every advertised API through the wire codec and the core broker, no sockets."""

import datetime

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import build_batch, decode_batch, split_batches
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import call


@pytest.fixture
def core_broker():
    """The core Broker alone (impl/core, no sockets, no threads), on a test ManualClock; the served
    broker is the shared `broker` fixture."""
    b = Broker(BrokerConfig(broker_id=0), ManualClock(), lambda key: MemoryLog())
    LocalController().register(b, "127.0.0.1", 9092)
    return b



def create(core_broker, name, version=4, partitions=1, configs=()):
    return call(core_broker, 19, version, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": 1,
        "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": datetime.timedelta(seconds=5), "validate_only": False})


def produce(core_broker, version, value, acks=1):
    data = build_batch([(b"k", value, (("h", b"v"),), None)])
    return call(core_broker, 0, version, {"acks": acks, "timeout": 1000, "transactional_id": None,
                                     "topic_data": [{"name": "t", "partition_data": [
                                         {"index": 0, "records": data}]}]})


def fetch(core_broker, version, offset):
    return call(core_broker, 1, version, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "topics": [{"topic": "t", "partitions": [{
            "partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}]}],
        "forgotten_topics_data": []})


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_api_versions(core_broker, version):
    body = call(core_broker, 18, version, {"client_software_name": "x",
                                      "client_software_version": "1"})
    assert body.error_code == ErrorCode.none
    assert {k.api_key for k in body.api_keys} == set(wire.SUPPORTED)


@pytest.mark.parametrize("version,request_version", [(99, 3), (-1, 0)])
def test_unknown_api_versions_version_answers_unsupported_with_v0_body(core_broker, version,
                                                                       request_version):
    """Found by the differential walk against Apache Kafka 4.3.1: it answers every ApiVersions
    version it does not know, negative ones too, listing ApiVersions' own range only."""
    frame = bytearray(wire.encode_request(  # framed as the version implies (header v2 from 3)
        9, "x", build(load_request_schema(18, request_version), {
            "client_software_name": "x", "client_software_version": "1"})))
    frame[6:8] = version.to_bytes(2, "big", signed=True)
    decoded = wire.decode_request(bytes(frame[4:]))
    out = []
    core_broker.handle(decoded, out.append)
    _, body = wire.decode_response(18, 0, wire.encode_response(9, out[0])[4:])
    assert body.error_code == ErrorCode.unsupported_version
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [
        (18, *wire.SUPPORTED[18][1:])]


def test_unsupported_version_of_another_api_is_malformed():
    frame = bytearray(wire.encode_request(1, "x", build(load_request_schema(0, 8), {
        "acks": 1, "timeout": 10, "topic_data": []})))
    frame[6:8] = (99).to_bytes(2, "big")
    with pytest.raises(wire.MalformedRequest):
        wire.decode_request(bytes(frame[4:]))


@pytest.mark.parametrize("produce_version, fetch_version", [(3, 4), (5, 7), (8, 11), (8, 12)])
def test_create_produce_fetch_list_offsets(core_broker, produce_version, fetch_version):
    assert create(core_broker, "t").topics[0].error_code == ErrorCode.none
    assert create(core_broker, "t").topics[0].error_code == ErrorCode.topic_already_exists
    for value in (b"a", b"b"):
        body = produce(core_broker, produce_version, value)
        assert body.responses[0].partition_responses[0].error_code == ErrorCode.none
    body = fetch(core_broker, fetch_version, 1)
    part = body.responses[0].partitions[0]
    assert part.high_watermark == 2
    error, views = split_batches(part.records)
    records = [r for v in views for r in decode_batch(v).records]
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (1, b"k", b"b", (("h", b"v"),))]
    for timestamp, expected in ((-2, 0), (-1, 2)):
        body = call(core_broker, 2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": timestamp,
                                          "current_leader_epoch": -1}]}]})
        assert body.topics[0].partitions[0].offset == expected


def test_acks0_sends_nothing(core_broker):
    create(core_broker, "t")
    assert produce(core_broker, 8, b"a", acks=0) is None
    assert fetch(core_broker, 11, 0).responses[0].partitions[0].high_watermark == 1


@pytest.mark.parametrize("version", [1, 4, 8])
def test_metadata_lists_brokers_topics_and_auto_creates(core_broker, version):
    create(core_broker, "t", partitions=3)
    body = call(core_broker, 3, version, {"topics": None, "allow_auto_topic_creation": True})
    assert [b.port for b in body.brokers] == [9092]
    assert [len(t.partitions) for t in body.topics] == [3]
    if version >= 4:  # created in the background, as Kafka's AutoTopicCreationManager does
        body = call(core_broker, 3, version, {"topics": [{"name": "auto"}],
                                         "allow_auto_topic_creation": True})
        assert body.topics[0].error_code == ErrorCode.unknown_topic_or_partition
        body = call(core_broker, 3, version, {"topics": [{"name": "auto"}],
                                         "allow_auto_topic_creation": False})
        assert body.topics[0].error_code == ErrorCode.none


def test_min_insync_config_and_offsets_apis(core_broker):
    create(core_broker, "t", configs=[("min.insync.replicas", "2")])
    assert core_broker.replica_manager.partition(("t", 0)).config.min_insync_replicas == 2
    body = call(core_broker, 22, 1, {"transactional_id": None, "transaction_timeout": 1000})
    assert body.error_code == ErrorCode.none and body.producer_id >= 0
    body = call(core_broker, 10, 2, {"key": "g", "key_type": 0})  # creates __consumer_offsets
    assert body.error_code == ErrorCode.coordinator_not_available
    body = call(core_broker, 10, 2, {"key": "g", "key_type": 0})
    assert (body.error_code, body.port) == (ErrorCode.none, 9092)
    call(core_broker, 8, 7, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                        "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                            {"partition_index": 0, "committed_offset": 5,
                             "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    body = call(core_broker, 9, 5, {"group_id": "g", "topics": [{"name": "t",
                                                            "partition_indexes": [0]}]})
    assert body.topics[0].partitions[0].committed_offset == 5
    body = call(core_broker, 23, 3, {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}]}]})
    assert body.topics[0].partitions[0].end_offset == 0


def test_garbage_is_malformed_not_a_crash():
    for payload in (b"", b"\x00\x12", b"\x00\x03\x00\x08\x00\x00\x00\x01\xff\xff\xff",
                    b"\x00\x00\x00\x08\x00\x00\x00\x01\x00\x01x\xff"):
        with pytest.raises(wire.MalformedRequest):
            wire.decode_request(payload)


@pytest.mark.parametrize("fetch_version", [4, 11, 12])
def test_zero_copy_fetch_frames_decode_like_the_in_memory_ones(tmp_path, fetch_version):
    from kafkaref.impl.protocol.fetch_response import FetchAnswer
    from kafkaref.impl.storage.log import Log

    zero = Broker(BrokerConfig(broker_id=0), ManualClock(), lambda key: Log(str(tmp_path / "z")))
    zero.zero_copy_fetch = True
    LocalController().register(zero, "127.0.0.1", 9092)
    create(zero, "t")
    for value in (b"a", b"b" * 300, b"c"):
        produce(zero, 8, value)
    request = build(load_request_schema(1, fetch_version), {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 1,
                                                  "partition_max_bytes": 1 << 20}]}]})
    decoded = wire.decode_request(wire.encode_request(5, "z", request)[4:])
    out = []
    zero.handle(decoded, out.append)
    [response] = out
    assert isinstance(response, FetchAnswer)
    parts = wire.encode_response_parts(decoded.correlation_id, response)
    frame = b"".join(bytes(p) if isinstance(p, bytes | bytearray) else p.read_bytes()
                     for p in parts)
    for part in parts:
        if not isinstance(part, bytes | bytearray):
            part.close()  # a file range
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    _, body = wire.decode_response(1, fetch_version, frame[4:])
    error, views = split_batches(body.responses[0].partitions[0].records)
    assert [r.value for v in views for r in decode_batch(v).records] == [b"b" * 300, b"c"]


def test_leader_hints_for_a_partition_the_metadata_no_longer_holds_are_unknown(core_broker):
    """KIP-951's hints are read after the answer: a topic deleted (or a partition index gone)
    in between, by the controller channel's thread, is hinted leader -1, epoch -1, never a
    crash of the request."""
    create(core_broker, "t")
    failed = {("gone", 0): ErrorCode.not_leader_or_follower,
              ("t", 5): ErrorCode.not_leader_or_follower}
    leaders, endpoints = core_broker._leader_hints(failed, (ErrorCode.not_leader_or_follower,))
    assert leaders == {("gone", 0): (-1, -1), ("t", 5): (-1, -1)}
    assert endpoints == []
