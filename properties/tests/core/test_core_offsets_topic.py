"""__consumer_offsets and the group coordinator of the core broker, stepped without sockets:
coordinator choice, commits appended and answered once committed, loading on leadership
(COORDINATOR_LOAD_IN_PROGRESS), NOT_COORDINATOR after losing it, ListGroups, DescribeGroups."""

import uuid

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core import offsets_topic
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.properties import wire_calls
from kafkaref.properties.clock import ManualClock

PARTITIONS = 3


def call(broker, api_key, version, values):
    answer = wire_calls.call(broker, api_key, version, values, client_id="test-client")
    assert answer != "pending", "not answered"
    return answer


class Logs:
    """MemoryLogs that outlive a broker: a restart keeps what was written (as a disk would)."""

    def __init__(self):
        self.logs = {}

    def __call__(self, key):
        return self.logs.setdefault(key, MemoryLog())


class SameTopicIds(LocalController):
    """Only the broker restarts here: the cluster's topics are the same ones after it, ids
    included (a topic gets the id its name gives), so the logs the restart keeps are theirs,
    not strays of deleted topics (which a broker deletes: ReplicaManager.open_partition)."""

    def create_topic(self, name, partitions, replication_factor, configs, done, assignment=None,
                     topic_id=None):
        super().create_topic(name, partitions, replication_factor, configs, done, assignment,
                             topic_id or str(uuid.uuid5(uuid.NAMESPACE_OID, name)))


def start_broker(logs, chunk_bytes=None, **config):
    broker = Broker(BrokerConfig(broker_id=0, offsets_topic_num_partitions=PARTITIONS, **config),
                    ManualClock(), logs)
    if chunk_bytes is not None:
        broker.committed.chunk_bytes = chunk_bytes
    controller = SameTopicIds()
    controller.register(broker, "127.0.0.1", 9092)
    return broker, controller


def find(broker, group, version=2):
    return call(broker, 10, version, {"key": group, "key_type": 0})


def commit(broker, group, topic, partition, offset, generation=-1, member="", instance=None,
           metadata="m"):
    body = call(broker, 8, 7, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": instance, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "committed_offset": offset,
             "committed_leader_epoch": 4, "committed_metadata": metadata}]}]})
    return body.topics[0].partitions[0].error_code


def fetched(broker, group, topics=None, version=5):
    body = call(broker, 9, version, {"group_id": group, "topics": topics})
    return body, {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
                  for t in body.topics for p in t.partitions}


def create(broker, controller, name, partitions=2):
    controller.create_topic(name, partitions, 1, {}, lambda error, message: None)


@pytest.fixture
def cluster():
    logs = Logs()
    broker, controller = start_broker(logs)
    create(broker, controller, "t")
    return logs, broker, controller


def test_java_string_hash_and_partition_match_kafka():
    assert offsets_topic.java_string_hash("hello") == 99162322
    assert offsets_topic.java_string_hash("Aa") == offsets_topic.java_string_hash("BB") == 2112
    assert offsets_topic.java_string_hash("") == 0
    # the one string whose hash is Integer.MIN_VALUE: Utils.abs maps it to 0, not negative
    assert offsets_topic.java_string_hash("polygenelubricants") == -(2**31)
    assert offsets_topic.partition_for("polygenelubricants", 50) == 0
    assert offsets_topic.partition_for("hello", 50) == 99162322 % 50
    assert offsets_topic.java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # UTF-16 units


@given(st.text(max_size=30), st.text(max_size=30), st.integers(0, 2**31 - 1),
       st.integers(-1, 2**63 - 1), st.integers(-1, 2**31 - 1), st.text(max_size=50),
       st.integers(-1, 2**62))
def test_key_and_value_round_trip(group, topic, partition, offset, epoch, metadata, ts):
    key = offsets_topic.OffsetKey(group, topic, partition)
    value = offsets_topic.CommittedOffset(offset, epoch, metadata, ts)
    assert offsets_topic.decode_key(offsets_topic.encode_key(key)) == key
    assert offsets_topic.decode_value(offsets_topic.encode_value(value)) == value


@given(st.binary(max_size=40))
def test_garbage_keys_and_values_are_skipped_not_raised(data):
    offsets_topic.decode_key(data)
    offsets_topic.decode_value(data)


def test_find_coordinator_creates_the_internal_topic_then_names_its_leader(cluster):
    _, broker, _ = cluster
    assert find(broker, "g").error_code == ErrorCode.coordinator_not_available
    meta = broker.metadata.topic(offsets_topic.NAME)
    assert len(meta.partitions) == PARTITIONS and len(meta.partitions[0].replicas) == 1
    answer = find(broker, "g", version=0)
    assert (answer.error_code, answer.node_id, answer.port) == (ErrorCode.none, 0, 9092)
    body = call(broker, 3, 8, {"topics": None, "allow_auto_topic_creation": False,
                               "include_cluster_authorized_operations": False,
                               "include_topic_authorized_operations": False})
    internal = {t.name: t.is_internal for t in body.topics}
    assert internal == {"t": False, offsets_topic.NAME: True}
    transactional = call(broker, 10, 2, {"key": "tx", "key_type": 1})
    assert transactional.error_code == ErrorCode.transactional_id_authorization_failed


def test_commit_is_a_record_of_the_groups_partition_and_fetches_back(cluster):
    _, broker, _ = cluster
    find(broker, "g")
    assert commit(broker, "g", "t", 1, 42) == ErrorCode.none
    assert commit(broker, "g", "missing", 0, 1) == ErrorCode.unknown_topic_or_partition
    assert commit(broker, "g", "t", 9, 1) == ErrorCode.unknown_topic_or_partition
    assert commit(broker, "g", "t", 0, 1, metadata="x" * 5000) == (
        ErrorCode.offset_metadata_too_large)
    body, got = fetched(broker, "g", [{"name": "t", "partition_indexes": [0, 1]}])
    assert body.error_code == ErrorCode.none
    assert got == {("t", 0): (-1, "", 0), ("t", 1): (42, "m", 0)}
    assert fetched(broker, "g")[1] == {("t", 1): (42, "m", 0)}  # all topics
    index = offsets_topic.partition_for("g", PARTITIONS)
    log = broker.replica_manager.partition((offsets_topic.NAME, index)).log
    assert log.log_end_offset == 1  # one record: the refused commits wrote nothing


def test_clients_cannot_produce_to_the_internal_topic(cluster):
    from kafkaref.impl.protocol.records import build_batch

    _, broker, _ = cluster
    find(broker, "g")
    body = call(broker, 0, 8, {"acks": 1, "timeout": 1000, "transactional_id": None,
                               "topic_data": [{"name": offsets_topic.NAME, "partition_data": [
                                   {"index": 0, "records": build_batch([(b"k", b"v", (), None)])}]}]})
    assert body.responses[0].partition_responses[0].error_code == (
        ErrorCode.invalid_topic_exception)


def test_a_new_leader_loads_the_partition_before_answering(cluster):
    logs, broker, _ = cluster
    find(broker, "g")
    for partition in range(2):
        for offset in range(5):
            assert commit(broker, "g", "t", partition, offset * 10 + partition) == 0
    # the same logs under a new broker (a restart): it leads the partitions again and replays
    # them a batch at a time, answering COORDINATOR_LOAD_IN_PROGRESS until the end
    again, controller = start_broker(logs, chunk_bytes=1)
    create(again, controller, "t")
    create(again, controller, offsets_topic.NAME, PARTITIONS)
    assert find(again, "g").error_code == ErrorCode.none
    steps = 0
    while (error := fetched(again, "g")[0].error_code) != ErrorCode.none:
        assert error == ErrorCode.coordinator_load_in_progress
        assert commit(again, "g", "t", 0, 99) == ErrorCode.coordinator_load_in_progress
        again.advance_clock()
        steps += 1
    assert steps >= 8  # ten single-record batches, one read of at least one batch per step
    assert fetched(again, "g")[1] == {("t", 0): (40, "m", 0), ("t", 1): (41, "m", 0)}


def test_losing_leadership_answers_not_coordinator_and_unloads_the_group(cluster):
    _, broker, controller = cluster
    find(broker, "g")
    joined = join_group(broker, join_values("g"))
    assert joined.error_code == ErrorCode.none
    index = offsets_topic.partition_for("g", PARTITIONS)
    meta = controller.metadata
    topic = meta.topic(offsets_topic.NAME)
    moved = attrs.evolve(topic.partitions[index], leader=1, leader_epoch=1)
    parts = tuple(moved if i == index else p for i, p in enumerate(topic.partitions))
    broker.apply_metadata(meta.with_topic(attrs.evolve(topic, partitions=parts)))
    assert commit(broker, "g", "t", 0, 5) == ErrorCode.not_coordinator
    assert fetched(broker, "g", [{"name": "t", "partition_indexes": [0]}])[0].error_code == (
        ErrorCode.not_coordinator)
    assert "g" not in broker.groups.groups
    beat = call(broker, 12, 3, {"group_id": "g", "generation_id": joined.generation_id,
                                "member_id": joined.member_id, "group_instance_id": None})
    assert beat.error_code == ErrorCode.not_coordinator


def join_values(group, member="", instance=None, session=10_000):
    return {"group_id": group, "session_timeout": session, "rebalance_timeout": 10_000,
            "member_id": member, "group_instance_id": instance, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}]}


def join_group(broker, values):
    """JoinGroup v5 as a client does it: a dynamic member without an id is answered
    MEMBER_ID_REQUIRED with one (KIP-394) and joins again with it."""
    answer = call(broker, 11, 5, values)
    if answer.error_code == ErrorCode.member_id_required:
        answer = call(broker, 11, 5, {**values, "member_id": answer.member_id})
    return answer


def test_join_v4_requires_a_known_member_id_v3_does_not(cluster):
    _, broker, _ = cluster
    find(broker, "g")
    first = call(broker, 11, 5, join_values("g"))
    assert first.error_code == ErrorCode.member_id_required and first.member_id
    assert first.member_id.startswith("test-client-")  # Kafka's clientId-UUID
    again = call(broker, 11, 5, join_values("g", member=first.member_id))
    assert again.error_code == ErrorCode.none and again.member_id == first.member_id
    old = call(broker, 11, 3, join_values("h"))  # before KIP-394: a member at once
    assert old.error_code == ErrorCode.none and old.generation_id == 1
    static = call(broker, 11, 5, join_values("i", instance="i-1"))  # static: no round trip
    assert static.error_code == ErrorCode.none


def test_join_refuses_a_session_timeout_outside_the_broker_bounds(cluster):
    _, broker, _ = cluster
    find(broker, "g")
    for session in (0, 5_999, 1_800_001):
        answer = call(broker, 11, 5, join_values("g", session=session))
        assert answer.error_code == ErrorCode.invalid_session_timeout
    assert join_group(broker, join_values("g", session=6_000)).error_code == ErrorCode.none


def test_member_commits_are_checked_against_the_group(cluster):
    _, broker, _ = cluster
    find(broker, "g")
    answer = join_group(broker, join_values("g"))
    member, generation = answer.member_id, answer.generation_id
    # a commit outside group management while the group has members
    assert commit(broker, "g", "t", 0, 1) == ErrorCode.unknown_member_id
    assert commit(broker, "g", "t", 0, 1, generation, member) == (
        ErrorCode.rebalance_in_progress)  # joined, not yet synced
    call(broker, 14, 3, {"group_id": "g", "generation_id": generation, "member_id": member,
                         "group_instance_id": None, "assignments": [
                             {"member_id": member, "assignment": b"a"}]})
    assert commit(broker, "g", "t", 0, 1, generation, member) == ErrorCode.none
    assert commit(broker, "g", "t", 0, 1, generation + 1, member) == ErrorCode.illegal_generation
    assert commit(broker, "g", "t", 0, 1, generation, "stranger") == ErrorCode.unknown_member_id
    assert commit(broker, "other", "t", 0, 1, 3, "m") == ErrorCode.illegal_generation


def test_list_and_describe_groups(cluster):
    _, broker, _ = cluster
    find(broker, "g")
    joined = call(broker, 11, 5, join_values("g", instance="i-1"))
    member = joined.member_id
    call(broker, 14, 3, {"group_id": "g", "generation_id": joined.generation_id,
                         "member_id": member, "group_instance_id": "i-1", "assignments": [
                             {"member_id": member, "assignment": b"part"}]})
    find(broker, "offsets-only")
    assert commit(broker, "offsets-only", "t", 0, 3) == ErrorCode.none
    listed = call(broker, 16, 2, {})
    assert listed.error_code == ErrorCode.none
    assert {(g.group_id, g.protocol_type) for g in listed.groups} == {
        ("g", "consumer"), ("offsets-only", "")}
    described = call(broker, 15, 4, {"groups": ["g", "offsets-only", "nobody"],
                                     "include_authorized_operations": False})
    by_id = {g.group_id: g for g in described.groups}
    g = by_id["g"]
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (
        ErrorCode.none, "Stable", "consumer", "range")
    [m] = g.members
    assert (m.member_id, m.group_instance_id, m.client_id) == (member, "i-1", "test-client")
    assert (bytes(m.member_metadata), bytes(m.member_assignment)) == (b"sub", b"part")
    assert by_id["offsets-only"].group_state == "Empty"  # known by its offsets alone
    assert by_id["nobody"].group_state == "Dead" and by_id["nobody"].members == ()
    assert call(broker, 15, 0, {"groups": ["g"]}).groups[0].members[0].member_id == member


def test_membership_needs_a_group_id_and_metadata_never_autocreates_the_offsets_topic(cluster):
    _, broker, _ = cluster
    answer = call(broker, 3, 8, {"topics": [{"name": offsets_topic.NAME}],
                                 "allow_auto_topic_creation": True,
                                 "include_cluster_authorized_operations": False,
                                 "include_topic_authorized_operations": False})
    # made with its own partition count, not default_partitions (the in-process controller
    # creates at once: a cluster's answers UNKNOWN_TOPIC_OR_PARTITION until it exists)
    assert answer.topics[0].is_internal and len(answer.topics[0].partitions) == PARTITIONS
    assert call(broker, 11, 5, join_values("")).error_code == ErrorCode.invalid_group_id
    assert call(broker, 12, 3, {"group_id": "", "generation_id": 1, "member_id": "m",
                                "group_instance_id": None}).error_code == (
        ErrorCode.invalid_group_id)
    assert commit(broker, "", "t", 0, 3) == ErrorCode.none  # offsets accept the empty group


def test_a_commit_is_answered_only_once_replicated_and_times_out_as_kafka_maps_it():
    """Two in-process brokers and no replica fetchers: the follower never catches up, so the
    acks=all append of a commit never completes; at offsets.commit.timeout.ms the commit
    answers COORDINATOR_NOT_AVAILABLE and the cache never holds it."""
    clock, logs = ManualClock(), Logs()
    config = BrokerConfig(offsets_topic_num_partitions=1, offsets_commit_timeout_ms=5000)
    brokers = [Broker(attrs.evolve(config, broker_id=i), clock,
                      lambda key, i=i: logs((i, key))) for i in range(2)]
    controller = LocalController()
    for i, broker in enumerate(brokers):
        controller.register(broker, "127.0.0.1", 9092 + i)
    create(brokers[0], controller, "t")
    find(brokers[0], "g")
    meta = brokers[0].metadata.topic(offsets_topic.NAME)
    assert dict(meta.configs)["min.insync.replicas"] == "2" and len(meta.partitions[0].isr) == 2
    coordinator = brokers[meta.partitions[0].leader]
    request = build(load_request_schema(8, 7), {
        "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 9, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})
    answers = []
    coordinator.handle(wire.decode_request(wire.encode_request(1, "c", request)[4:]),
                       answers.append)
    assert answers == []  # waiting for the follower
    clock.now_ms = 4999
    coordinator.advance_clock()
    assert answers == []
    clock.now_ms = 5000
    coordinator.advance_clock()
    [answer] = answers
    assert answer.topics[0].partitions[0].error_code == ErrorCode.coordinator_not_available
    assert coordinator.committed.group(0, "g") == {}


def test_a_deleted_topics_offsets_leave_the_groups_and_the_log(cluster):
    """Kafka's coordinator removes a deleted topic's committed offsets from its groups and
    tombstones them (GroupMetadataManager.cleanupGroupMetadata): a topic created again under
    that name starts from auto.offset.reset, not from the old topic's positions (librdkafka's
    0107). Other topics' offsets stay; a broker that loads the partition later agrees."""
    logs, broker, controller = cluster
    create(broker, controller, "other")
    find(broker, "g")
    assert commit(broker, "g", "t", 0, 7) == commit(broker, "g", "other", 1, 3) == 0
    controller.delete_topic("t", lambda error, message: None)
    assert fetched(broker, "g")[1] == {("other", 1): (3, "m", 0)}
    create(broker, controller, "t")
    _, got = fetched(broker, "g", [{"name": "t", "partition_indexes": [0]}])
    assert got == {("t", 0): (-1, "", 0)}
    # the tombstone is in the log: a restarted coordinator replays it
    again, again_controller = start_broker(logs)
    create(again, again_controller, offsets_topic.NAME, PARTITIONS)
    while fetched(again, "g")[0].error_code == ErrorCode.coordinator_load_in_progress:
        again.advance_clock()
    assert fetched(again, "g")[1] == {("other", 1): (3, "m", 0)}


def test_delete_groups_forgets_an_empty_group_and_tombstones_its_offsets(cluster):
    """Kafka's DeleteGroups: an Empty group (no members; known by its state or only by its
    offsets) goes, offsets and all, for good (a restarted coordinator replays the tombstones);
    one with members is NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND."""
    logs, broker, controller = cluster
    find(broker, "offsets-only")
    assert commit(broker, "offsets-only", "t", 0, 3) == ErrorCode.none
    joined = join_group(broker, join_values("busy"))
    left = join_group(broker, join_values("left"))
    assert call(broker, 13, 2, {"group_id": "left", "member_id": left.member_id}
                ).error_code == ErrorCode.none
    for version in (0, 1):
        answer = call(broker, 42, version, {"groups_names": ["offsets-only", "busy", "left",
                                                             "nobody"]})
        got = {r.group_id: r.error_code for r in answer.results}
        if version == 0:
            assert got == {"offsets-only": ErrorCode.none, "busy": ErrorCode.non_empty_group,
                           "left": ErrorCode.none, "nobody": ErrorCode.group_id_not_found}
        else:  # deleted already
            assert got["offsets-only"] == got["left"] == ErrorCode.group_id_not_found
    assert joined.error_code == ErrorCode.none
    assert {g.group_id for g in call(broker, 16, 2, {}).groups} == {"busy"}
    assert fetched(broker, "offsets-only")[1] == {}
    again, again_controller = start_broker(logs)
    create(again, again_controller, offsets_topic.NAME, PARTITIONS)
    while fetched(again, "offsets-only")[0].error_code == ErrorCode.coordinator_load_in_progress:
        again.advance_clock()
    assert fetched(again, "offsets-only")[1] == {}
