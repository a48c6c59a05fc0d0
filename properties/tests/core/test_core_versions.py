"""What the newer versions of each API carry, through the wire codec and the core broker (no
sockets): topic ids (KIP-516), leader discovery (KIP-951), the removed versions (KIP-896).
Each answer was read off Apache Kafka 4.3.1 first (docs/semantics.md, "Protocol versions")."""

import datetime
import functools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.wire_calls import call, core_brokers

brokers = core_brokers


def create(broker, name, partitions=1, replication_factor=1):
    body = call(broker, 19, 4, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": replication_factor,
        "assignments": [], "configs": []}],
        "timeout": datetime.timedelta(seconds=5), "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none


def topic_id(broker, name) -> uuid.UUID:
    return uuid.UUID(broker.metadata.topic(name).topic_id)


BATCH = build_batch([(b"k", b"v", (), None)])


def produce(broker, version, topic, partition=0, acks=1):
    """topic: a name, or (v13) a topic id."""
    named = {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"name": topic}
    return call(broker, 0, version, {
        "transactional_id": None, "acks": acks, "timeout": 1000,
        "topic_data": [{**named, "partition_data": [{"index": partition, "records": BATCH}]}]})


# -- Produce ----------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [9, 11, 12, 13])
def test_produce_at_every_flexible_version_appends(version):
    (b,) = brokers(1)
    create(b, "t")
    topic = topic_id(b, "t") if version >= 13 else "t"
    first = produce(b, version, topic).responses[0]
    second = produce(b, version, topic).responses[0]
    assert [first.partition_responses[0].base_offset,
            second.partition_responses[0].base_offset] == [0, 1]
    if version >= 13:
        assert first.topic_id == topic_id(b, "t")


def test_produce_v13_with_an_unknown_topic_id_is_unknown_topic_id_for_each_partition():
    """As Apache Kafka 4.3.1 answers: UNKNOWN_TOPIC_ID (100), the id echoed, nothing written."""
    (b,) = brokers(1)
    create(b, "t")
    stranger = uuid.uuid4()
    answer = produce(b, 13, stranger).responses[0]
    assert answer.topic_id == stranger
    assert [(p.error_code, p.base_offset, p.log_start_offset)
            for p in answer.partition_responses] == [(ErrorCode.unknown_topic_id, -1, -1)]
    assert b.replica_manager.partition(("t", 0)).log.log_end_offset == 0


def test_produce_v13_to_a_missing_partition_of_a_known_topic_is_unknown_topic_or_partition():
    (b,) = brokers(1)
    create(b, "t")
    answer = produce(b, 13, topic_id(b, "t"), partition=5).responses[0]
    assert answer.partition_responses[0].error_code == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("version", [9, 10, 13])
def test_produce_to_a_follower_names_the_leader_from_v10(version):
    """KIP-951: NOT_LEADER_OR_FOLLOWER carries the partition's current leader and epoch, and
    node_endpoints that leader's address, from Produce v10 (KafkaApis.handleProduceRequest)."""
    b0, b1 = brokers(2)
    create(b0, "t", replication_factor=2)
    leader = b0.metadata.topic("t").partitions[0].leader
    follower = b1 if leader == 0 else b0
    body = produce(follower, version, topic_id(b0, "t") if version >= 13 else "t")
    answer = body.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.not_leader_or_follower
    if version < 10:
        assert not hasattr(answer, "current_leader")
        return
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (leader, 0)
    assert [(n.node_id, n.port) for n in body.node_endpoints] == [(leader, 9092 + leader)]


def test_produce_to_a_broker_not_hosting_the_partition_is_not_leader_with_the_leader_named():
    """Kafka answers UNKNOWN_TOPIC_OR_PARTITION only for partitions its metadata lacks; one it
    knows but does not host is NOT_LEADER_OR_FOLLOWER (and, v10+, where the leader is)."""
    b0, b1 = brokers(2)
    create(b0, "t", partitions=2)  # replication factor 1: each broker hosts one partition
    hosted_by_1 = next(i for i, p in enumerate(b0.metadata.topic("t").partitions) if p.leader == 1)
    body = produce(b0, 10, "t", partition=hosted_by_1)
    answer = body.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.not_leader_or_follower
    assert answer.current_leader.leader_id == 1
    assert [n.node_id for n in body.node_endpoints] == [1]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_are_advertised_but_refused_by_closing(version):
    """KIP-896 removed them; Kafka 4 still advertises v0 (KAFKA-18659, for librdkafka) and closes
    the connection of a request at one of them (seen on 4.3.1)."""
    assert wire.SUPPORTED[0][1] == 0
    frame = bytearray(wire.encode_request(1, "x", build(load_request_schema(0, 3), {
        "transactional_id": None, "acks": 1, "timeout": 10, "topic_data": []})))
    frame[6:8] = version.to_bytes(2, "big")
    with pytest.raises(wire.MalformedRequest):
        wire.decode_request(bytes(frame[4:]))


# -- Fetch ------------------------------------------------------------------------------------
def fetch(broker, version, topic, partitions=(0,), offset=0, current_leader_epoch=-1):
    """topic: a name, or (v13+) a topic id."""
    named = {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"topic": topic}
    return call(broker, 1, version, {
        "replica_id": -1, "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{**named, "partitions": [{
            "partition": p, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": current_leader_epoch, "log_start_offset": -1,
            "last_fetched_epoch": -1} for p in partitions]}]})


@pytest.mark.parametrize("version", range(4, 19))
def test_fetch_at_every_version_reads_what_was_produced(version):
    (b,) = brokers(1)
    create(b, "t")
    produce(b, 12, "t")
    topic = topic_id(b, "t") if version >= 13 else "t"
    body = fetch(b, version, topic)
    (answer,) = body.responses
    assert (answer.topic_id if version >= 13 else answer.topic) == topic
    part = answer.partitions[0]
    assert (part.error_code, part.high_watermark) == (ErrorCode.none, 1)
    assert part.records == BATCH[:8] + part.records[8:16] + BATCH[16:]  # stamped offset, epoch


def test_fetch_by_an_unknown_topic_id_is_unknown_topic_id_after_the_others():
    """As Apache Kafka 4.3.1: the unknown id's partitions (and unknown partitions of a known
    topic) are refused before the read, answered with -1 offsets, after the partitions read."""
    (b,) = brokers(1)
    create(b, "t")
    stranger = uuid.uuid4()
    body = call(b, 1, 13, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [
            {"topic_id": stranger, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                   "partition_max_bytes": 100}]},
            {"topic_id": topic_id(b, "t"), "partitions": [
                {"partition": 7, "fetch_offset": 0, "partition_max_bytes": 100},
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100}]}]})
    assert [(t.topic_id, [(p.partition_index, p.error_code, p.high_watermark)
                          for p in t.partitions]) for t in body.responses] == [
        (topic_id(b, "t"), [(0, ErrorCode.none, 0)]),
        (stranger, [(0, ErrorCode.unknown_topic_id, -1)]),
        (topic_id(b, "t"), [(7, ErrorCode.unknown_topic_or_partition, -1)])]


def test_fetch_naming_a_topic_by_an_id_its_log_does_not_have_is_inconsistent_topic_id():
    """The metadata names the topic by one id, the hosted log was written under another (the
    topic was recreated and this log not yet replaced): Kafka's readFromLocalLog refuses the
    read with INCONSISTENT_TOPIC_ID."""
    (b,) = brokers(1)
    create(b, "t")
    b.replica_manager.partition(("t", 0)).log.topic_id = str(uuid.uuid4())
    answer = fetch(b, 13, topic_id(b, "t")).responses[0].partitions[0]
    assert answer.error_code == ErrorCode.inconsistent_topic_id


@pytest.mark.parametrize("version", [15, 16, 18])
def test_fetch_from_a_broker_without_the_partition_names_the_leader_from_v16(version):
    """KIP-951: NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH carry the current leader and
    node_endpoints its address, from Fetch v16 (KafkaApis.handleFetchRequest). Asked of a
    broker that holds no replica: from v11 a follower serves a consumer's fetch (KIP-392,
    test_core_follower_fetch.py)."""
    b0, b1, b2 = brokers(3)
    create(b0, "t", replication_factor=2)
    meta = b0.metadata.topic("t").partitions[0]
    leader = meta.leader
    stranger = next(b for b in (b0, b1, b2) if b.broker_id not in meta.replicas)
    body = fetch(stranger, version, topic_id(b0, "t"))
    answer = body.responses[0].partitions[0]
    assert answer.error_code == ErrorCode.not_leader_or_follower
    if version < 16:
        assert answer.current_leader.leader_id == -1 and not hasattr(body, "node_endpoints")
        return
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (leader, 0)
    assert [(n.node_id, n.port) for n in body.node_endpoints] == [(leader, 9092 + leader)]


def test_fetch_v15_reads_the_replica_id_from_replica_state():
    """From v15 a follower says who it is in replica_state (KIP-903): its fetch moves the
    leader's view of it, as a v12 follower fetch does."""
    b0, b1 = brokers(2)
    create(b0, "t", replication_factor=2)
    leader_id = b0.metadata.topic("t").partitions[0].leader
    leader, follower_id = (b0, 1) if leader_id == 0 else (b1, 0)
    produce(leader, 12, "t", acks=1)
    call(leader, 1, 15, {
        "replica_state": {"replica_id": follower_id, "replica_epoch": -1}, "max_wait": 0,
        "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
        "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic_id": topic_id(leader, "t"), "partitions": [{
            "partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": 0, "log_start_offset": 0, "last_fetched_epoch": 0}]}]})
    assert leader.replica_manager.partition(("t", 0)).high_watermark == 1


# -- ListOffsets ------------------------------------------------------------------------------
def list_offset(broker, version, timestamp, partition=0):
    body = call(broker, 2, version, {
        "replica_id": -1, "isolation_level": 0, "timeout": 1000, "topics": [{
            "name": "t", "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                         "current_leader_epoch": -1}]}]})
    p = body.topics[0].partitions[0]
    return p.error_code, p.offset, getattr(p, "timestamp", None), getattr(p, "leader_epoch", -1)


def produce_at(broker, *timestamps):
    call(broker, 0, 12, {"transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": [{
        "name": "t", "partition_data": [{"index": 0, "records": build_batch(
            [(b"k", b"v", (), t) for t in timestamps], base_timestamp=timestamps[0])}]}]})


def test_list_offsets_max_timestamp_is_the_first_record_with_the_greatest_timestamp():
    """KIP-734 (v7+): what Apache Kafka 4.3.1 answered for the same five records in three
    batches: the record's own offset and timestamp, the first of two equal maxima."""
    (b,) = brokers(1)
    create(b, "t")
    assert list_offset(b, 7, -3) == (ErrorCode.none, -1, -1, -1)  # an empty log
    produce_at(b, 5_000, 9_000)
    produce_at(b, 7_000)
    produce_at(b, 9_000, 6_000)
    for version in (7, 9, 11):
        assert list_offset(b, version, -3) == (ErrorCode.none, 1, 9_000, 0)


@pytest.mark.parametrize("version, timestamp, error", [
    (6, -3, ErrorCode.unsupported_version), (7, -4, ErrorCode.unsupported_version),
    (8, -5, ErrorCode.unsupported_version), (10, -6, ErrorCode.unsupported_version),
    (11, -7, ErrorCode.unsupported_version), (11, -6, ErrorCode.none)])
def test_a_special_timestamp_older_than_its_version_is_unsupported_version(
        version, timestamp, error):
    (b,) = brokers(1)
    create(b, "t")
    assert list_offset(b, version, timestamp)[0] == error


def test_list_offsets_tiered_storage_timestamps_without_tiered_storage():
    """Nothing is tiered: EARLIEST_LOCAL (-4) is the log start, LATEST_TIERED (-5) and
    EARLIEST_PENDING_UPLOAD (-6) find nothing (-1), as 4.3.1 answers without remote storage."""
    (b,) = brokers(1)
    create(b, "t")
    produce_at(b, 1_000)
    assert list_offset(b, 8, -4)[:2] == (ErrorCode.none, 0)
    assert list_offset(b, 9, -5) == (ErrorCode.none, -1, -1, -1)
    assert list_offset(b, 11, -6) == (ErrorCode.none, -1, -1, -1)


def test_list_offsets_max_timestamp_looks_below_the_high_watermark_only():
    """Kafka filters a timestamp lookup's answer by the last fetchable offset (the hw for a
    consumer): a record not yet replicated is not the maximum yet."""
    b0, b1 = brokers(2)
    create(b0, "t", replication_factor=2)
    leader = b0 if b0.metadata.topic("t").partitions[0].leader == 0 else b1
    produce_at(leader, 4_000)  # acks=1: the follower has not fetched it, the hw stays at 0
    assert leader.replica_manager.partition(("t", 0)).high_watermark == 0
    assert list_offset(leader, 7, -3) == (ErrorCode.none, -1, -1, -1)


# Kafka's rule for the special (negative) timestamps, stated apart from the broker's table
# (ReplicaManager.isListOffsetsTimestampUnsupported): LATEST (-1) and EARLIEST (-2) at every
# version, MAX_TIMESTAMP (-3) from v7 (KIP-734), EARLIEST_LOCAL (-4) from v8 (KIP-405),
# LATEST_TIERED (-5) from v9 (KIP-1005), EARLIEST_PENDING_UPLOAD (-6) from v11 (KIP-1023), any
# other negative one never; 0 or more is a lookup by time (KIP-79) at every version.
FIRST_VERSION = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}
STAMPS = (5_000, 9_000, 7_000, 9_000, 6_000)  # offsets 0-4, in three batches
_, LIST_OFFSETS_LOWEST, LIST_OFFSETS_HIGHEST = wire.SUPPORTED[2]


@functools.cache
def stamped_broker():
    (b,) = brokers(1)
    create(b, "t")
    produce_at(b, *STAMPS[:2])
    produce_at(b, STAMPS[2])
    produce_at(b, *STAMPS[3:])
    return b


def kafkas_list_offset(version: int, timestamp: int) -> tuple[ErrorCode, int, int]:
    """(error, offset, timestamp) of a one-replica log holding STAMPS, its hw at its end.
    EARLIEST and LATEST name a position, not a record: timestamp -1 (NO_TIMESTAMP)."""
    if timestamp < 0 and version < FIRST_VERSION.get(timestamp, LIST_OFFSETS_HIGHEST + 1):
        return ErrorCode.unsupported_version, -1, -1
    if timestamp in (-2, -4):  # EARLIEST, EARLIEST_LOCAL (nothing is tiered)
        return ErrorCode.none, 0, -1
    if timestamp == -1:
        return ErrorCode.none, len(STAMPS), -1
    if timestamp == -3:  # the first record with the greatest timestamp
        return ErrorCode.none, STAMPS.index(max(STAMPS)), max(STAMPS)
    if timestamp < 0:  # LATEST_TIERED, EARLIEST_PENDING_UPLOAD: nothing is tiered
        return ErrorCode.none, -1, -1
    found = [(offset, t) for offset, t in enumerate(STAMPS) if t >= timestamp]
    return (ErrorCode.none, *found[0]) if found else (ErrorCode.none, -1, -1)


@given(version=st.integers(LIST_OFFSETS_LOWEST, LIST_OFFSETS_HIGHEST), timestamp=st.one_of(
    st.integers(-7, 1), st.sampled_from([4_999, 5_000, 6_500, 9_000, 9_001]),
    st.integers(0, 2 ** 62)))
def test_list_offsets_answers_every_timestamp_at_every_version_as_kafka(version, timestamp):
    """Through the handler, as the server carries it (the core lockstep asks the replica
    manager directly). Found by mutation testing: survivor 00165 of session 79fa682 read
    `timestamp < 0` as `<= 0`, refusing a lookup by time 0 at every version."""
    error, offset, answered, _ = list_offset(stamped_broker(), version, timestamp)
    assert (error, offset, answered) == kafkas_list_offset(version, timestamp)


# -- Metadata ---------------------------------------------------------------------------------
@pytest.mark.parametrize("version, listed", [(0, ["t"]), (1, [])])
def test_metadata_v0_with_no_topics_lists_them_all(version, listed):
    """v0 had no null array: an empty one meant every topic (Kafka's isAllTopics); from v1 it
    means none (4.3.1 answers so)."""
    (b,) = brokers(1)
    create(b, "t")
    assert [t.name for t in call(b, 3, version, {"topics": []}).topics] == listed


def test_metadata_v13_answers_a_top_level_error_code():
    (b,) = brokers(1)
    create(b, "t")
    body = call(b, 3, 13, {"topics": None, "allow_auto_topic_creation": False,
                           "include_topic_authorized_operations": False})
    assert body.error_code == ErrorCode.none and [t.name for t in body.topics] == ["t"]
    assert body.topics[0].topic_id == topic_id(b, "t")


# -- OffsetCommit, OffsetFetch ----------------------------------------------------------------
def coordinator(broker):
    """Ask for a coordinator until __consumer_offsets exists (a single broker leads it all)."""
    for _ in range(3):
        body = call(broker, 10, 2, {"key": "g", "key_type": 0})
        if body.error_code == ErrorCode.none:
            return
    raise AssertionError(body)


def commit(broker, version, topic, partitions=(0,), group="g", generation=-1):
    named = {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"name": topic}
    return call(broker, 8, version, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": "",
        "group_instance_id": None, "retention_time": -1, "topics": [{**named, "partitions": [
            {"partition_index": p, "committed_offset": 3, "committed_leader_epoch": -1,
             "committed_metadata": "m"} for p in partitions]}]}).topics[0]


@pytest.mark.parametrize("version", [8, 9, 10])
def test_offset_commit_and_fetch_at_the_flexible_versions(version):
    (b,) = brokers(1)
    create(b, "t")
    coordinator(b)
    topic = topic_id(b, "t") if version >= 10 else "t"
    answer = commit(b, version, topic)
    assert answer.partitions[0].error_code == ErrorCode.none
    body = call(b, 9, version, {"groups": [{"group_id": "g", "member_id": None,
                                            "member_epoch": -1, "topics": [
        {**({"topic_id": topic} if version >= 10 else {"name": topic}),
         "partition_indexes": [0]}]}], "require_stable": False})
    (group,) = body.groups
    assert (group.group_id, group.error_code) == ("g", ErrorCode.none)
    assert group.topics[0].partitions[0].committed_offset == 3
    if version >= 10:
        assert answer.topic_id == topic == group.topics[0].topic_id


def test_offset_commit_v10_to_an_unknown_topic_id_is_unknown_topic_id():
    (b,) = brokers(1)
    create(b, "t")
    coordinator(b)
    stranger = uuid.uuid4()
    answer = commit(b, 10, stranger, partitions=(0, 9))
    assert answer.topic_id == stranger
    assert [p.error_code for p in answer.partitions] == [ErrorCode.unknown_topic_id] * 2


def test_offset_fetch_v8_answers_several_groups_and_v10_an_unknown_id_per_partition():
    """KIP-709 batches groups; a group with topics None gets every offset it committed; an
    unknown topic id is UNKNOWN_TOPIC_ID on each of its partitions (4.3.1 answers so)."""
    (b,) = brokers(1)
    create(b, "t")
    coordinator(b)
    commit(b, 9, "t", group="g1")
    stranger = uuid.uuid4()
    body = call(b, 9, 10, {"require_stable": False, "groups": [
        {"group_id": "g1", "member_id": None, "member_epoch": -1, "topics": None},
        {"group_id": "g2", "member_id": None, "member_epoch": -1, "topics": [
            {"topic_id": stranger, "partition_indexes": [0]}]}]})
    g1, g2 = body.groups
    assert [(t.topic_id, [p.committed_offset for p in t.partitions]) for t in g1.topics] == [
        (topic_id(b, "t"), [3])]
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in g2.topics] == [
        (stranger, [ErrorCode.unknown_topic_id])]


def test_offset_commit_v9_with_a_generation_to_an_unknown_group_is_group_id_not_found():
    """From v9 (KIP-848) a commit naming a generation of a group the coordinator does not have
    is GROUP_ID_NOT_FOUND; before, ILLEGAL_GENERATION (OffsetMetadataManager)."""
    (b,) = brokers(1)
    create(b, "t")
    coordinator(b)
    assert commit(b, 8, "t", group="nobody", generation=3).partitions[0].error_code == (
        ErrorCode.illegal_generation)
    assert commit(b, 9, "t", group="nobody", generation=3).partitions[0].error_code == (
        ErrorCode.group_id_not_found)


# -- FindCoordinator --------------------------------------------------------------------------
def test_find_coordinator_v4_answers_each_key_and_refuses_the_features_kafkaref_lacks():
    """KIP-699 batches keys. Share groups are off: a share key (type 2) is INVALID_REQUEST, as
    Kafka without a share coordinator answers, and so is a type Kafka does not know; a
    transactional id is refused as an authorizer denying every one would."""
    (b,) = brokers(1)
    coordinator(b)
    body = call(b, 10, 6, {"key_type": 0, "coordinator_keys": ["g1", "g2"]})
    assert [(c.key, c.error_code, c.node_id, c.port) for c in body.coordinators] == [
        ("g1", ErrorCode.none, 0, 9092), ("g2", ErrorCode.none, 0, 9092)]
    for key_type, error in ((1, ErrorCode.transactional_id_authorization_failed),
                            (2, ErrorCode.invalid_request), (3, ErrorCode.invalid_request)):
        body = call(b, 10, 6, {"key_type": key_type, "coordinator_keys": ["k"]})
        assert [(c.error_code, c.node_id, c.host, c.port) for c in body.coordinators] == [
            (error, -1, "", -1)]
    assert call(b, 10, 4, {"key_type": 0, "coordinator_keys": []}).coordinators == ()


# -- consumer groups --------------------------------------------------------------------------
def join(broker, version=9, member_id="", instance=None, group="jg"):
    return call(broker, 11, version, {
        "group_id": group, "session_timeout": 10_000, "rebalance_timeout": 10_000,
        "member_id": member_id, "group_instance_id": instance, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"x"}], "reason": None})


def sync(broker, version, generation, member_id, protocol=("consumer", "range"), group="jg"):
    return call(broker, 14, version, {
        "group_id": group, "generation_id": generation, "member_id": member_id,
        "group_instance_id": None, "protocol_type": protocol[0], "protocol_name": protocol[1],
        "assignments": [{"member_id": member_id, "assignment": b"a"}]})


def test_a_member_joins_syncs_beats_and_leaves_at_the_newest_versions():
    """What 4.3.1 answered to the same sequence: MEMBER_ID_REQUIRED with null protocol fields,
    then the group's protocol type and name in the join and the sync."""
    (b,) = brokers(1)
    coordinator(b)
    first = join(b)
    assert (first.error_code, first.protocol_type, first.protocol_name) == (
        ErrorCode.member_id_required, None, None)
    joined = join(b, member_id=first.member_id)
    assert (joined.error_code, joined.protocol_type, joined.protocol_name,
            joined.skip_assignment) == (ErrorCode.none, "consumer", "range", False)
    synced = sync(b, 5, joined.generation_id, joined.member_id)
    assert (synced.error_code, synced.protocol_type, synced.protocol_name, synced.assignment) == (
        ErrorCode.none, "consumer", "range", b"a")
    beat = call(b, 12, 4, {"group_id": "jg", "generation_id": joined.generation_id,
                           "member_id": joined.member_id, "group_instance_id": None})
    assert beat.error_code == ErrorCode.none
    left = call(b, 13, 5, {"group_id": "jg", "members": [
        {"member_id": joined.member_id, "group_instance_id": None, "reason": "done"}]})
    assert (left.error_code, [(m.member_id, m.error_code) for m in left.members]) == (
        ErrorCode.none, [(joined.member_id, ErrorCode.none)])


@pytest.mark.parametrize("protocol", [(None, None), ("other", "range"), ("consumer", "rr")])
def test_sync_group_v5_without_the_groups_protocol_is_inconsistent(protocol):
    """v5 makes the protocol type and name mandatory and checks them (4.3.1 answers
    INCONSISTENT_GROUP_PROTOCOL with null protocol fields to each of these)."""
    (b,) = brokers(1)
    coordinator(b)
    joined = join(b, member_id=join(b).member_id)
    synced = sync(b, 5, joined.generation_id, joined.member_id, protocol)
    assert (synced.error_code, synced.protocol_type, synced.protocol_name) == (
        ErrorCode.inconsistent_group_protocol, None, None)
    assert sync(b, 4, joined.generation_id, joined.member_id, protocol).error_code == (
        ErrorCode.none)  # before v5 nobody asked


def test_leave_group_v3_removes_a_static_member_by_its_instance_id_and_answers_each():
    (b,) = brokers(1)
    coordinator(b)
    joined = join(b, instance="i-1")
    assert joined.error_code == ErrorCode.none  # static members need no second round
    left = call(b, 13, 5, {"group_id": "jg", "members": [
        {"member_id": "", "group_instance_id": "i-1", "reason": None},
        {"member_id": "nobody", "group_instance_id": None, "reason": None}]})
    assert [(m.group_instance_id, m.error_code) for m in left.members] == [
        ("i-1", ErrorCode.none), (None, ErrorCode.unknown_member_id)]
    assert not b.groups.groups["jg"].members


def test_leave_group_of_an_unknown_group_per_version():
    """As 4.3.1: v0-2 answer UNKNOWN_MEMBER_ID for the request, v3+ for each member."""
    (b,) = brokers(1)
    coordinator(b)
    assert call(b, 13, 2, {"group_id": "zz", "member_id": "a"}).error_code == (
        ErrorCode.unknown_member_id)
    left = call(b, 13, 5, {"group_id": "zz", "members": [
        {"member_id": "a", "group_instance_id": None, "reason": None}]})
    assert (left.error_code, [m.error_code for m in left.members]) == (
        ErrorCode.none, [ErrorCode.unknown_member_id])


def test_describe_groups_v6_says_an_unknown_group_is_not_found():
    (b,) = brokers(1)
    coordinator(b)
    for version, error, message in ((5, ErrorCode.none, None),
                                    (6, ErrorCode.group_id_not_found, "Group zz not found.")):
        (group,) = call(b, 15, version, {"groups": ["zz"],
                                         "include_authorized_operations": False}).groups
        assert (group.error_code, group.group_state) == (error, "Dead")
        assert getattr(group, "error_message", None) == message


def test_list_groups_v5_filters_by_type_and_state_whatever_their_case():
    (b,) = brokers(1)
    coordinator(b)
    join(b, member_id=join(b).member_id)
    for types, states, listed in (([], [], ["jg"]), (["Classic"], [], ["jg"]),
                                  (["consumer"], [], []), ([], ["completingrebalance"], ["jg"]),
                                  ([], ["Empty"], [])):
        body = call(b, 16, 5, {"states_filter": states, "types_filter": types})
        assert [(g.group_id, g.group_type) for g in body.groups] == [
            (g, "classic") for g in listed]


# -- admin APIs -------------------------------------------------------------------------------
def create_v7(broker, name, validate_only=False, configs=(), partitions=2):
    return call(broker, 19, 7, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": -1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": 5000, "validate_only": validate_only}).topics[0]


def test_create_topics_v5_tells_the_shape_and_configs_and_v7_the_id():
    """As 4.3.1: partitions, replication factor (defaults filled in), every topic config with
    its source (1 the override, 5 a default), the id; -1 and no configs after a failure."""
    (b,) = brokers(1)
    for validate_only in (True, False):
        created = create_v7(b, "t", validate_only, configs=[("retention.ms", "1000")])
        assert (created.error_code, created.num_partitions, created.replication_factor) == (
            ErrorCode.none, 2, 1)
        configs = {c.name: (c.value, c.config_source) for c in created.configs}
        assert configs["retention.ms"] == ("1000", 1)
        assert configs["cleanup.policy"] == ("delete", 5)
        assert created.topic_id is not None
    assert created.topic_id == topic_id(b, "t")
    again = create_v7(b, "t")
    assert (again.error_code, again.num_partitions, again.replication_factor, again.configs,
            again.topic_id) == (ErrorCode.topic_already_exists, -1, -1, (), None)


def test_delete_topics_v6_by_name_or_by_id_never_both():
    """As 4.3.1 answered: by id (the name given back), by name (the id given back), an
    unknown id UNKNOWN_TOPIC_ID, a name and an id at once INVALID_REQUEST."""
    (b,) = brokers(1)
    for name in ("d1", "d2"):
        create(b, name)
    d1, d2, stranger = topic_id(b, "d1"), topic_id(b, "d2"), uuid.uuid4()
    body = call(b, 20, 6, {"timeout": 5000, "topics": [
        {"name": "d1", "topic_id": None}, {"name": None, "topic_id": d2},
        {"name": None, "topic_id": stranger}, {"name": "d1", "topic_id": d2}]})
    assert [(r.name, r.topic_id, r.error_code) for r in body.responses] == [
        ("d1", d1, ErrorCode.none), ("d2", d2, ErrorCode.none),
        (None, stranger, ErrorCode.unknown_topic_id), ("d1", d2, ErrorCode.invalid_request)]
    assert b.metadata.topics == ()


def test_the_config_and_partition_apis_at_their_flexible_versions():
    (b,) = brokers(1)
    create(b, "t")
    altered = call(b, 33, 2, {"validate_only": False, "resources": [{
        "resource_type": 2, "resource_name": "t",
        "configs": [{"name": "retention.ms", "value": "5000"}]}]})
    assert altered.responses[0].error_code == ErrorCode.none
    incremental = call(b, 44, 1, {"validate_only": False, "resources": [{
        "resource_type": 2, "resource_name": "t",
        "configs": [{"name": "segment.ms", "config_operation": 0, "value": "60000"}]}]})
    assert incremental.responses[0].error_code == ErrorCode.none
    described = call(b, 32, 4, {"include_synonyms": False, "include_documentation": False,
                                "resources": [{"resource_type": 2, "resource_name": "t",
                                               "configuration_keys": ["segment.ms"]}]})
    assert [(c.name, c.value) for c in described.results[0].configs] == [("segment.ms", "60000")]
    grown = call(b, 37, 3, {"timeout": 5000, "validate_only": False, "topics": [
        {"name": "t", "count": 3, "assignments": None}]})
    assert grown.results[0].error_code == ErrorCode.none
    assert len(b.metadata.topic("t").partitions) == 3


# -- InitProducerId, OffsetForLeaderEpoch -----------------------------------------------------
@pytest.mark.parametrize("named, error", [
    ((-1, -1), ErrorCode.none), ((7, 0), ErrorCode.none), ((7, -1), ErrorCode.invalid_request),
    ((-1, 3), ErrorCode.invalid_request)])
def test_init_producer_id_v3_names_the_current_id_and_epoch_both_or_neither(named, error):
    (b,) = brokers(1)
    body = call(b, 22, 5, {"transactional_id": None, "transaction_timeout": 60_000,
                           "producer_id": named[0], "producer_epoch": named[1]})
    assert body.error_code == error
    if error == ErrorCode.none:
        assert body.producer_id >= 0 and body.producer_id != named[0] and body.producer_epoch == 0
    else:
        assert (body.producer_id, body.producer_epoch) == (-1, -1)


def test_offset_for_leader_epoch_v4():
    (b,) = brokers(1)
    create(b, "t")
    produce(b, 12, "t")
    body = call(b, 23, 4, {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}]}]})
    assert body.topics[0].partitions[0].end_offset == 1


# -- ApiVersions ------------------------------------------------------------------------------
def test_api_versions_v4_lists_every_api_and_v5_is_answered_with_the_v0_layout():
    (b,) = brokers(1)
    body = call(b, 18, 4, {"client_software_name": "x", "client_software_version": "1"})
    assert body.error_code == ErrorCode.none
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == {
        key: (low, high) for key, (_, low, high) in wire.SUPPORTED.items()}
    frame = bytearray(wire.encode_request(9, "x", build(load_request_schema(18, 4), {
        "client_software_name": "x", "client_software_version": "1"})))
    frame[6:8] = (5).to_bytes(2, "big")  # 4.4.0's newest, which 4.3.1 does not know
    decoded = wire.decode_request(bytes(frame[4:]))
    out = []
    b.handle(decoded, out.append)
    _, answer = wire.decode_response(18, 0, wire.encode_response(9, out[0])[4:])
    assert answer.error_code == ErrorCode.unsupported_version


# -- DescribeCluster, DescribeTopicPartitions, DescribeLogDirs --------------------------------
def test_describe_cluster_names_the_brokers_and_refuses_other_endpoint_types():
    """As 4.3.1: the live brokers (is_fenced from v2), the controller; asked for controllers,
    MISMATCHED_ENDPOINT_TYPE; an endpoint type Kafka does not know, UNSUPPORTED_ENDPOINT_TYPE."""
    b0, _ = brokers(2)
    body = call(b0, 60, 2, {"include_cluster_authorized_operations": False,
                            "endpoint_type": 1, "include_fenced_brokers": True})
    assert (body.error_code, body.cluster_id, body.endpoint_type) == (
        ErrorCode.none, "kafkaref", 1)
    assert sorted((b.broker_id, b.port, b.is_fenced) for b in body.brokers) == [
        (0, 9092, False), (1, 9093, False)]
    for endpoint_type, error in ((2, ErrorCode.mismatched_endpoint_type),
                                 (3, ErrorCode.unsupported_endpoint_type)):
        body = call(b0, 60, 1, {"include_cluster_authorized_operations": False,
                                "endpoint_type": endpoint_type})
        assert (body.error_code, body.brokers, body.controller_id) == (error, (), -1)
    assert call(b0, 60, 0, {"include_cluster_authorized_operations": False}).brokers


def describe_partitions(broker, names, limit, cursor=None):
    body = call(broker, 75, 0, {"topics": [{"name": n} for n in names],
                                "response_partition_limit": limit, "cursor": cursor})
    cursor = body.next_cursor
    return ([(t.name, t.error_code, [p.partition_index for p in t.partitions])
             for t in body.topics],
            None if cursor is None else (cursor.topic_name, cursor.partition_index))


def test_describe_topic_partitions_answers_at_most_kafkas_2000_partitions_a_page():
    """A limit above max.request.partition.size.limit (Kafka's default 2000) is cut to it.
    Found by mutation testing (session 2225a175104f's survivor 00372: the cap read 1999)."""
    (b,) = brokers(1)
    create(b, "big", partitions=2001)
    [(name, error, indexes)], cursor = describe_partitions(b, ["big"], 5000)
    assert (name, error, indexes, cursor) == ("big", ErrorCode.none, list(range(2000)),
                                              ("big", 2000))


def test_describe_topic_partitions_pages_by_name_as_kafka_does():
    """The pages 4.3.1 gave for the same topics (KIP-966): sorted names, unknown and illegal
    ones answered in place, at most `limit` partitions, a cursor to the next page."""
    (b,) = brokers(1)
    create(b, "cv5", partitions=2)
    create(b, "p1")
    create(b, "p2")
    none, unknown = ErrorCode.none, ErrorCode.unknown_topic_or_partition
    assert describe_partitions(b, ["p2", "nope", "cv5", "bad name!"], 100) == ([
        ("bad name!", ErrorCode.invalid_topic_exception, []), ("cv5", none, [0, 1]),
        ("nope", unknown, []), ("p2", none, [0])], None)
    assert describe_partitions(b, ["p2", "nope", "cv5"], 2) == ([("cv5", none, [0, 1])],
                                                                ("nope", 0))
    assert describe_partitions(b, ["p2", "cv5", "p1"], 2, {"topic_name": "cv5",
                                                           "partition_index": 1}) == (
        [("cv5", none, [1]), ("p1", none, [0])], ("p2", 0))
    assert describe_partitions(b, ["cv5", "p2"], 1) == ([("cv5", none, [0])], ("cv5", 1))
    assert describe_partitions(b, ["p2"], 0) == ([("p2", none, [0])], None)
    assert describe_partitions(b, [], 3) == ([("cv5", none, [0, 1]), ("p1", none, [0])],
                                             ("p2", 0))
    refused = ErrorCode.invalid_request
    assert describe_partitions(b, ["p2"], 5, {"topic_name": "zzz", "partition_index": 0}) == (
        [("p2", refused, [])], None)
    assert describe_partitions(b, ["cv5"], 5, {"topic_name": "cv5", "partition_index": -1}) == (
        [("cv5", refused, [])], None)


def test_describe_log_dirs_gives_the_size_of_each_hosted_partition():
    (b,) = brokers(1)
    b.log_dir = "/nonexistent/kafkaref-log-dir"  # no such volume: its bytes are unknown
    create(b, "t")
    produce(b, 12, "t")
    body = call(b, 35, 5, {"topics": None})
    (result,) = body.results
    assert (result.log_dir, result.total_bytes, result.usable_bytes) == (b.log_dir, -1, -1)
    assert [(t.name, [(p.partition_index, p.partition_size) for p in t.partitions])
            for t in result.topics] == [("t", [(0, len(BATCH))])]
    body = call(b, 35, 1, {"topics": [{"topic": "t", "partitions": [0, 5]},
                                      {"topic": "nope", "partitions": [0]}]})
    assert [(t.name, [p.partition_index for p in t.partitions])
            for t in body.results[0].topics] == [("t", [0])]
