"""The admin APIs (impl/core/admin.py) through the wire codec and core brokers, no sockets:
DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, and what
brokers do with the images they produce (partitions stopped, logs deleted, configs applied)."""

import datetime
import os
import uuid

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.topic_rules import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    check_new_partitions,
    incremental_configs,
)
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.server import storage_log_factory
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import alter_incremental, call, core_brokers

TOPIC, BROKER = 2, 4
SECONDS = datetime.timedelta(seconds=5)


brokers = core_brokers



def answer_later(broker, api_key, version, values):
    """Handle a request that may wait (purgatory); return the list its answer lands in."""
    request = build(load_request_schema(api_key, version), values)
    decoded = wire.decode_request(wire.encode_request(42, "test", request)[4:])
    out = []
    broker.handle(decoded, out.append)
    return out


def create(broker, name, partitions=1, rf=1, configs=()):
    body = call(broker, 19, 4, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": SECONDS, "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none, body


def delete(broker, *names, version=3):
    body = call(broker, 20, version, {"topic_names": list(names), "timeout": SECONDS})
    return {r.name: r.error_code for r in body.responses}


def produce_values(name, partition, value, acks=1, timeout=1000):
    return {"acks": acks, "timeout": timeout, "transactional_id": None, "topic_data": [{
        "name": name, "partition_data": [{"index": partition,
                                          "records": build_batch([(b"k", value, (), None)])}]}]}


def produce(broker, name, partition=0, value=b"v", acks=1):
    body = call(broker, 0, 8, produce_values(name, partition, value, acks))
    return body.responses[0].partition_responses[0]


def fetch_values(name, offset, max_wait=0):
    return {"replica_id": -1, "max_wait": max_wait, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [{
                "topic": name, "partitions": [{"partition": 0, "fetch_offset": offset,
                                               "partition_max_bytes": 1 << 20,
                                               "current_leader_epoch": -1,
                                               "log_start_offset": -1}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def latest(broker, name, partition=0):
    body = call(broker, 2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [{
        "name": name, "partitions": [{"partition_index": partition, "timestamp": -1,
                                      "current_leader_epoch": -1}]}]})
    p = body.topics[0].partitions[0]
    return p.error_code, p.offset


def grow(broker, name, count, assignments=None, validate_only=False):
    body = call(broker, 37, 1, {"topics": [{
        "name": name, "count": count,
        "assignments": None if assignments is None else [{"broker_ids": a}
                                                         for a in assignments]}],
        "timeout": SECONDS, "validate_only": validate_only})
    return body.results[0].error_code


def describe(broker, kind, name, keys=None, version=3, synonyms=False):
    body = call(broker, 32, version, {"resources": [{
        "resource_type": kind, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": synonyms, "include_documentation": False})
    return body.results[0]


def alter(broker, name, configs, validate_only=False, kind=TOPIC):
    body = call(broker, 33, 1, {"resources": [{
        "resource_type": kind, "resource_name": name,
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "validate_only": validate_only})
    return body.responses[0].error_code



def overrides(broker, name):
    return dict(broker.metadata.topic(name).configs)


# -- ApiVersions and what is not advertised ---------------------------------------------------
def test_the_admin_apis_are_advertised_up_to_their_flexible_versions():
    """Up to the versions Apache Kafka 4.x advertises, flexible ones included (the ranges are
    compared with a real node's in properties/tests/peers/test_peers_api_versions.py)."""
    (b,) = brokers()
    body = call(b, 18, 2, {})
    versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    for key in (20, 32, 33, 37, 44):
        assert key in versions
        assert load_request_schema(key, versions[key][1]).__flexible__


@pytest.mark.parametrize("api_key", [17, 24, 25, 26, 28, 29, 30, 31, 36])
def test_transaction_acl_and_sasl_keys_are_not_advertised_and_close_the_connection(api_key):
    """Kafka's SocketServer closes a connection sending a key its listener does not enable;
    clients check ApiVersions first and report the feature unsupported without sending."""
    assert api_key not in wire.SUPPORTED
    frame = bytearray(wire.encode_request(1, "x", build(load_request_schema(18, 0), {})))
    frame[4:6] = api_key.to_bytes(2, "big")
    with pytest.raises(wire.MalformedRequest):
        wire.decode_request(bytes(frame[4:]))


# -- DeleteTopics ---------------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 2, 3])
def test_delete_then_recreate_starts_empty_with_a_new_topic_id(version):
    (b,) = brokers()
    create(b, "t")
    assert produce(b, "t").error_code == ErrorCode.none
    first_id = b.metadata.topic("t").topic_id
    assert delete(b, "t", version=version) == {"t": ErrorCode.none}
    assert b.metadata.topic("t") is None and ("t", 0) not in b.replica_manager.partitions
    assert produce(b, "t").error_code == ErrorCode.unknown_topic_or_partition
    create(b, "t")
    assert b.metadata.topic("t").topic_id != first_id
    assert latest(b, "t") == (ErrorCode.none, 0)


def topic_ids(broker, *names, version=12):
    body = call(broker, 3, version, {"topics": [{"name": n} for n in names],
                                     "allow_auto_topic_creation": False})
    return {t.name: (t.error_code, t.topic_id, len(t.partitions)) for t in body.topics}


@pytest.mark.parametrize("version", [10, 11, 12])
def test_metadata_names_the_topic_id_and_a_recreated_topic_has_another(version):
    """librdkafka's 0107: a producer learns that a topic was deleted and created again (with
    fewer partitions) only from a new topic id in Metadata (v10+); with no id it kept the old
    partition count and its batches for the vanished partitions never left."""
    (b,) = brokers()
    create(b, "t", partitions=10)
    [(error, first_id, count)] = topic_ids(b, "t", version=version).values()
    assert (error, count) == (ErrorCode.none, 10) and str(first_id) == b.metadata.topic(
        "t").topic_id
    delete(b, "t")
    create(b, "t", partitions=3)
    [(error, second_id, count)] = topic_ids(b, "t", version=version).values()
    assert (error, count) == (ErrorCode.none, 3) and second_id != first_id


def test_metadata_v12_finds_a_topic_by_its_id():
    (b,) = brokers()
    create(b, "t")
    topic_id = uuid.UUID(b.metadata.topic("t").topic_id)
    body = call(b, 3, 12, {"topics": [{"name": None, "topic_id": topic_id},
                                      {"name": None, "topic_id": uuid.UUID(int=10)}],
                           "allow_auto_topic_creation": False})
    assert [(t.name, t.error_code) for t in body.topics] == [
        ("t", ErrorCode.none), (None, ErrorCode.unknown_topic_id)]


def test_librdkafkas_all_topics_metadata_with_extra_bytes_is_read_as_kafka_reads_it():
    """librdkafka writes the null topic array of Metadata v9+ as four zero bytes
    (confluentinc/librdkafka#5049; these bytes are confluent_kafka 2.16's): Kafka ignores the
    3 bytes left over, and so do we."""
    payload = bytes.fromhex("0003000c00000003000772646b61666b61" "00" "00000000" "010000")
    request = wire.decode_request(payload)
    assert request.body.topics is None and request.client_id == "rdkafka"


def test_bytes_after_any_request_body_are_ignored_as_kafka_ignores_them():
    """Found by the differential walk: Apache Kafka 4.3.1 answers a request followed by extra
    bytes (its parser never looks past the body); kafkaref closed the connection."""
    heartbeat = wire.encode_request(3, "c", build(load_request_schema(12, 3), {
        "group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}))
    request = wire.decode_request(heartbeat[4:] + b"\0\0\0")
    assert request.body.group_id == "g" and request.body.generation_id == 1


def test_delete_unknown_invalid_and_duplicate_names():
    (b,) = brokers()
    create(b, "t")
    # Kafka's controller looks names up without checking them, and answers a name given
    # twice once (found by the differential walk against Apache Kafka 4.3.1)
    assert delete(b, "nope", "bad/name") == {
        "nope": ErrorCode.unknown_topic_or_partition,
        "bad/name": ErrorCode.unknown_topic_or_partition}
    body = call(b, 20, 3, {"topic_names": ["t", "t"], "timeout": SECONDS})
    assert [(r.name, r.error_code) for r in body.responses] == [("t", ErrorCode.invalid_request)]
    assert b.metadata.topic("t") is not None


def test_delete_answers_a_parked_fetch_unknown_topic():
    (b,) = brokers()
    create(b, "t")
    out = answer_later(b, 1, 11, fetch_values("t", 0, max_wait=30_000))
    assert out == []  # parked: nothing to read yet
    delete(b, "t")
    assert len(out) == 1
    frame = wire.encode_response(42, out[0])
    body = wire.decode_response(1, 11, frame[4:])[1]
    assert body.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition


def test_delete_answers_a_waiting_acks_all_produce_unknown_topic():
    """RF 2: acks=all waits for the follower; deleting the topic answers it at once."""
    leader, follower = brokers(2)
    create(leader, "t", rf=2)
    assert leader.metadata.topic("t").partitions[0].leader == 0
    out = answer_later(leader, 0, 8, produce_values("t", 0, b"v", acks=-1, timeout=60_000))
    assert out == []
    delete(leader, "t")
    frame = wire.encode_response(42, out[0])
    body = wire.decode_response(0, 8, frame[4:])[1]
    assert body.responses[0].partition_responses[0].error_code == (
        ErrorCode.unknown_topic_or_partition)
    assert ("t", 0) not in follower.replica_manager.partitions


def test_delete_removes_the_log_directories(tmp_path):
    (b,) = brokers(log_factory=storage_log_factory(str(tmp_path)))
    create(b, "t", partitions=2)
    produce(b, "t")
    assert sorted(os.listdir(tmp_path)) == ["t-0", "t-1"]
    delete(b, "t")
    assert os.listdir(tmp_path) == []
    create(b, "t")
    assert latest(b, "t") == (ErrorCode.none, 0)


def test_a_broker_that_missed_the_deletion_drops_the_old_partition():
    """An image where the topic was deleted and created again (a new id) reaches a broker
    that never saw the deletion: the old partition and its data go before the new one."""
    (b,) = brokers()
    create(b, "t")
    produce(b, "t")
    meta = b.metadata
    recreated = attrs.evolve(meta.topic("t"), topic_id="another-id")
    b.apply_metadata(attrs.evolve(meta.with_topic(recreated), epoch=meta.epoch + 5))
    assert latest(b, "t") == (ErrorCode.none, 0)


# -- CreatePartitions -----------------------------------------------------------------------
def test_create_partitions_grows_and_never_shrinks():
    (b,) = brokers()
    create(b, "t", partitions=2)
    assert grow(b, "t", 1) == ErrorCode.invalid_partitions
    assert grow(b, "t", 2) == ErrorCode.invalid_partitions
    assert grow(b, "t", 4, validate_only=True) == ErrorCode.none
    assert len(b.metadata.topic("t").partitions) == 2
    assert grow(b, "t", 4) == ErrorCode.none
    assert len(b.metadata.topic("t").partitions) == 4
    assert produce(b, "t", partition=3).error_code == ErrorCode.none
    assert grow(b, "nope", 3) == ErrorCode.unknown_topic_or_partition


def test_create_partitions_assignment_is_checked():
    b0, b1 = brokers(2)
    create(b0, "t", partitions=1, rf=2)
    assert grow(b0, "t", 2, [[0, 7]]) == ErrorCode.invalid_replica_assignment  # unknown broker
    assert grow(b0, "t", 2, [[0]]) == ErrorCode.invalid_replica_assignment  # RF 1, not 2
    assert grow(b0, "t", 2, [[0, 0]]) == ErrorCode.invalid_replica_assignment
    assert grow(b0, "t", 3, [[0, 1]]) == ErrorCode.invalid_replica_assignment  # too few
    assert grow(b0, "t", 2, [[1, 0]]) == ErrorCode.none
    new = b0.metadata.topic("t").partitions[1]
    assert (new.leader, new.replicas) == (1, (1, 0))
    assert b1.replica_manager.partition(("t", 1)).is_leader


def test_check_new_partitions_rules():
    ok = ErrorCode.none
    assert check_new_partitions(1, 3, 1, None, {0})[0] == ok
    assert check_new_partitions(3, 1, 1, None, {0})[0] == ErrorCode.invalid_partitions
    assert check_new_partitions(1, 2, 2, [[0, 1]], {0, 1})[0] == ok
    assert check_new_partitions(1, 3, 2, [[0, 1], [1]], {0, 1})[0] == (
        ErrorCode.invalid_replica_assignment)


# -- DescribeConfigs ------------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 2, 3])
def test_describe_reports_defaults_and_overrides_with_their_source(version):
    (b,) = brokers()
    create(b, "t", configs=[("retention.ms", "1000")])
    result = describe(b, TOPIC, "t", version=version, synonyms=True)
    assert result.error_code == ErrorCode.none
    configs = {c.name: c for c in result.configs}
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("1000", 1)
    assert (configs["min.insync.replicas"].value,
            configs["min.insync.replicas"].config_source) == ("1", 5)
    assert not configs["retention.ms"].read_only
    # Kafka's synonyms: the override, then the broker config with a default it falls back to
    # (retention.ms has none: log.retention.ms has no default of its own)
    assert [(s.name, s.source) for s in configs["retention.ms"].synonyms] == [
        ("retention.ms", 1)]
    assert [(s.name, s.value, s.source) for s in configs["cleanup.policy"].synonyms] == [
        ("log.cleanup.policy", "delete", 5)]
    only = describe(b, TOPIC, "t", keys=["segment.bytes"], version=version)
    assert [c.name for c in only.configs] == ["segment.bytes"]


def test_describe_errors_and_broker_resources():
    (b,) = brokers()
    assert describe(b, TOPIC, "nope").error_code == ErrorCode.unknown_topic_or_partition
    assert describe(b, 8, "0").error_code == ErrorCode.invalid_request  # BROKER_LOGGER
    assert describe(b, BROKER, "5").error_code == ErrorCode.invalid_request  # another broker
    result = describe(b, BROKER, "0")
    configs = {c.name: c for c in result.configs}
    assert configs["broker.id"].value == "0" and configs["broker.id"].read_only
    assert configs["broker.id"].config_source == 4  # STATIC_BROKER_CONFIG


# -- AlterConfigs / IncrementalAlterConfigs ---------------------------------------------------
def test_alter_configs_replaces_overrides_and_reaches_every_replica():
    leader, follower = brokers(2)
    create(leader, "t", rf=2, configs=[("retention.ms", "1000")])
    assert alter(leader, "t", {"min.insync.replicas": "2"}) == ErrorCode.none
    assert overrides(leader, "t") == {"min.insync.replicas": "2"}  # retention.ms reset
    for b in (leader, follower):
        assert b.replica_manager.partition(("t", 0)).config.min_insync_replicas == 2
    assert alter(leader, "t", {"max.message.bytes": "100"}, validate_only=True) == ErrorCode.none
    assert overrides(leader, "t") == {"min.insync.replicas": "2"}


@pytest.mark.parametrize("configs", [{"no.such.config": "1"}, {"kafkaref.mutants": "M2"},
                                     {"min.insync.replicas": "0"}, {"retention.ms": "soon"},
                                     {"cleanup.policy": "keep"}, {"preallocate": "yes"}])
def test_alter_configs_refuses_bad_configs(configs):
    (b,) = brokers()
    create(b, "t")
    assert alter(b, "t", configs) == ErrorCode.invalid_config
    assert overrides(b, "t") == {}


def test_alter_configs_errors():
    (b,) = brokers()
    assert alter(b, "nope", {"retention.ms": "1"}) == ErrorCode.unknown_topic_or_partition
    assert alter(b, "0", {"num.partitions": "3"}, kind=BROKER) == ErrorCode.invalid_request
    assert alter(b, "0", {"x": "1"}, kind=8) == ErrorCode.invalid_request


def test_incremental_alter_configs():
    (b,) = brokers()
    create(b, "t", configs=[("retention.ms", "1000")])
    assert alter_incremental(b, "t", [("segment.ms", SET, "5000")]) == ErrorCode.none
    assert overrides(b, "t") == {"retention.ms": "1000", "segment.ms": "5000"}
    assert alter_incremental(b, "t", [("retention.ms", DELETE, None),
                                      ("cleanup.policy", APPEND, "compact")]) == ErrorCode.none
    assert overrides(b, "t") == {"segment.ms": "5000", "cleanup.policy": "delete,compact"}
    assert alter_incremental(b, "t", [("retention.ms", APPEND, "1")]) == ErrorCode.invalid_config
    assert alter_incremental(b, "t", [("retention.ms", 9, "1")]) == ErrorCode.invalid_request
    assert alter_incremental(b, "t", [("nope", SET, "1")]) == ErrorCode.invalid_config


def test_incremental_configs_rules():
    ok = ErrorCode.none
    assert incremental_configs({}, [("cleanup.policy", SUBTRACT, "delete")]) == (
        ok, None, {"cleanup.policy": ""})
    error, _, kept = incremental_configs({"segment.ms": "1"}, [("segment.ms", SET, "2"),
                                                               ("segment.ms", DELETE, None)])
    assert (error, kept) == (ErrorCode.invalid_request, {"segment.ms": "1"})


# -- the cluster controller's decisions -------------------------------------------------------
def test_controller_state_delete_grow_alter():
    clock = ManualClock()
    state = ControllerState(clock)
    for broker_id in (0, 1, 2):
        state.register(broker_id, "127.0.0.1", 9000 + broker_id)
    assert state.create_topic("t", 1, 3, {}) == (ErrorCode.none, None)
    first_id = state.metadata.topic("t").topic_id
    assert state.create_partitions("t", 3)[0] == ErrorCode.none
    assert [len(p.replicas) for p in state.metadata.topic("t").partitions] == [3, 3, 3]
    assert state.create_partitions("t", 2)[0] == ErrorCode.invalid_partitions
    assert state.alter_configs("t", {"min.insync.replicas": "2"})[0] == ErrorCode.none
    assert state.metadata.topic("t").config().min_insync_replicas == 2
    assert state.alter_configs("t", {"bogus": "1"})[0] == ErrorCode.invalid_config
    epoch = state.metadata.epoch
    assert state.delete_topic("t") == (ErrorCode.none, None)
    assert state.metadata.topic("t") is None and state.metadata.epoch == epoch + 1
    assert state.delete_topic("t")[0] == ErrorCode.unknown_topic_or_partition
    state.create_topic("t", 1, 1, {})
    assert state.metadata.topic("t").topic_id not in ("", first_id)


def test_a_restarted_broker_deletes_the_stray_log_of_a_deleted_topic(tmp_path):
    """The broker was down while "t" was deleted and created again: its directory records
    the old topic id, so it is stray and the new partition starts empty. The same id (a
    plain restart) keeps the data."""
    factory = storage_log_factory(str(tmp_path))
    (b,) = brokers(log_factory=factory)
    create(b, "t")
    produce(b, "t")
    old = b.metadata
    b.replica_manager.partition(("t", 0)).log.close()  # the broker stops

    (same,) = brokers(log_factory=factory)
    same.apply_metadata(attrs.evolve(old, epoch=old.epoch + 10))
    assert latest(same, "t") == (ErrorCode.none, 1)
    same.replica_manager.partition(("t", 0)).log.close()

    (again,) = brokers(log_factory=factory)
    recreated = attrs.evolve(old.topic("t"), topic_id="the-new-topic")
    again.apply_metadata(attrs.evolve(old.with_topic(recreated), epoch=old.epoch + 20))
    assert latest(again, "t") == (ErrorCode.none, 0)


# -- both controllers, one set of rules -------------------------------------------------------
NAMES = st.sampled_from(["a", "b"])
CONFIGS = st.dictionaries(st.sampled_from(["min.insync.replicas", "retention.ms", "bogus"]),
                          st.sampled_from(["1", "2", "x"]), max_size=2)
OPS = st.lists(st.one_of(
    st.tuples(st.just("create"), NAMES, st.integers(1, 3), st.integers(1, 2)),
    st.tuples(st.just("delete"), NAMES),
    st.tuples(st.just("grow"), NAMES, st.integers(1, 5)),
    st.tuples(st.just("alter"), NAMES, CONFIGS),
), max_size=12)


def shape(metadata):
    """What both controllers must agree on: topics, partition counts, RF, overrides."""
    return {t.name: (len(t.partitions), {len(p.replicas) for p in t.partitions}, t.configs)
            for t in metadata.topics}


@given(OPS)
def test_the_wire_path_and_the_cluster_controller_decide_alike(ops):
    """The same admin requests, sent to a core broker (single-broker control plane) and to the
    cluster's ControllerState, give the same error codes and the same topics; every broker hosts
    exactly the partitions assigned to it, with its topic's configs."""
    b0, b1 = brokers(2)
    state = ControllerState(ManualClock())
    for broker_id in (0, 1):
        state.register(broker_id, "127.0.0.1", 9092 + broker_id)
    for op in ops:
        if op[0] == "create":
            _, name, partitions, rf = op
            body = call(b0, 19, 4, {"topics": [{
                "name": name, "num_partitions": partitions, "replication_factor": rf,
                "assignments": [], "configs": []}], "timeout": SECONDS, "validate_only": False})
            wire_error = body.topics[0].error_code
            state_error = state.create_topic(name, partitions, rf, {})[0]
        elif op[0] == "delete":
            wire_error = delete(b0, op[1])[op[1]]
            state_error = state.delete_topic(op[1])[0]
        elif op[0] == "grow":
            wire_error = grow(b0, op[1], op[2])
            state_error = state.create_partitions(op[1], op[2])[0]
        else:
            wire_error = alter(b0, op[1], op[2])
            state_error = state.alter_configs(op[1], op[2])[0]
        assert wire_error == state_error, op
    assert shape(b0.metadata) == shape(state.metadata)
    for b in (b0, b1):
        assigned = {(t.name, i) for t in b.metadata.topics
                    for i, p in enumerate(t.partitions) if b.broker_id in p.replicas}
        assert set(b.replica_manager.partitions) == assigned
        for (name, _), partition in b.replica_manager.partitions.items():
            assert partition.config.min_insync_replicas == (
                b.metadata.topic(name).config().min_insync_replicas)


def test_an_altered_max_message_bytes_refuses_larger_batches_at_once():
    (b,) = brokers()
    create(b, "t")
    assert produce(b, "t", value=b"x" * 1000).error_code == ErrorCode.none
    assert alter_incremental(b, "t", [("max.message.bytes", SET, "500")]) == ErrorCode.none
    assert produce(b, "t", value=b"x" * 1000).error_code == ErrorCode.message_too_large
    assert alter_incremental(b, "t", [("max.message.bytes", DELETE, None)]) == ErrorCode.none
    assert produce(b, "t", value=b"x" * 1000).error_code == ErrorCode.none
