"""Answers the differential walk (properties/differential/) found differing from Apache Kafka
4.3.1's, fixed in kafkaref: each test pins the answer Kafka gives, through the wire codec and the
core broker (no sockets). docs/divergences.md lists the differences kept on purpose."""

import datetime

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import CLOSE_CONNECTION, Broker, BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import call

SECONDS = datetime.timedelta(seconds=5)


@pytest.fixture
def core_broker():
    b = Broker(BrokerConfig(broker_id=0), ManualClock(), lambda key: MemoryLog())
    LocalController().register(b, "127.0.0.1", 9092)
    return b


def create(broker, name, partitions=1, configs=()):
    body = call(broker, 19, 4, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": SECONDS, "validate_only": False})
    return body.topics[0].error_code


def produce(broker, partitions, version=8, acks=1):
    """partitions: [(topic, index, records bytes)]; the answers by (topic, index)."""
    topics: dict[str, list] = {}
    for topic, index, data in partitions:
        topics.setdefault(topic, []).append({"index": index, "records": data})
    body = call(broker, 0, version, {"acks": acks, "timeout": 1000, "transactional_id": None,
                                     "topic_data": [{"name": t, "partition_data": ps}
                                                    for t, ps in topics.items()]})
    if body is None or body == CLOSE_CONNECTION:
        return body
    return {(t.name, p.index): p for t in body.responses for p in t.partition_responses}


def batch(size=3, **options) -> bytes:
    return build_batch([(None, b"v" * size, (), 1000)], **options)


def test_a_failed_produce_carries_the_log_start_offset_only_where_kafka_does(core_broker):
    """ReplicaManager.appendToLocalLog answers log_start_offset -1 for unknown partitions,
    oversize and corrupt batches (and KafkaApis for a refused record set); a failure in
    validation (a sequence, an epoch) carries the partition's log start offset."""
    create(core_broker, "t", configs=[("max.message.bytes", "200")])
    pid = call(core_broker, 22, 1, {"transactional_id": None,
                                    "transaction_timeout": 1000}).producer_id
    produce(core_broker, [("t", 0, batch(producer_id=pid, producer_epoch=0, base_sequence=0))])
    corrupt = bytearray(batch())
    corrupt[-1] ^= 1
    cases = {
        "unknown partition": (("t", 5, batch()), -1),
        "too large": (("t", 0, batch(size=300)), -1),
        "corrupt": (("t", 0, bytes(corrupt)), -1),
        "two batches": (("t", 0, batch() + batch()), -1),
        "out of order": (("t", 0, batch(producer_id=pid, producer_epoch=0, base_sequence=5)), 0),
    }
    for what, (partition, log_start) in cases.items():
        (answer,) = produce(core_broker, [partition]).values()
        assert answer.error_code != ErrorCode.none, what
        assert answer.log_start_offset == log_start, what


def test_a_failed_acks0_produce_closes_the_connection(core_broker):
    """KafkaApis.handleProduceRequest closes the connection of an acks=0 produce that failed
    anywhere; one that succeeded everywhere is answered with nothing."""
    create(core_broker, "t")
    assert produce(core_broker, [("t", 0, batch())], acks=0) is None
    assert produce(core_broker, [("t", 0, batch()), ("t", 3, batch())],
                   acks=0) == CLOSE_CONNECTION


@pytest.mark.parametrize("version,expected", [(6, ErrorCode.unsupported_compression_type),
                                              (7, ErrorCode.none)])
def test_zstd_batches_need_produce_v7(core_broker, version, expected):
    """ProduceRequest.validateRecords refuses a zstd batch in a request older than v7 (KIP-110);
    kafkaref appended it."""
    create(core_broker, "t")
    (answer,) = produce(core_broker, [("t", 0, batch(compression=Compression.zstd))],
                        version=version).values()
    assert answer.error_code == expected


def fetch(broker, partitions, isolation=0, version=11, max_bytes=1 << 20):
    """partitions: [(topic, index, offset)]; the answers by (topic, index)."""
    topics: dict[str, list] = {}
    for topic, index, offset in partitions:
        topics.setdefault(topic, []).append({
            "partition": index, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1})
    body = call(broker, 1, version, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": max_bytes,
        "isolation_level": isolation, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [],
        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
    return {(t.topic, p.partition_index): p for t in body.responses for p in t.partitions}


@pytest.mark.parametrize("zero_copy", [False, True])
def test_fetch_answers_fill_offsets_and_aborted_transactions_as_kafka_does(core_broker,
                                                                            zero_copy):
    """A failed partition answers -1 for the high watermark, last stable offset and log start
    offset (kafkaref answered the partition's); aborted_transactions is an empty list for a
    read_committed read and for a partition that does not exist, null otherwise."""
    core_broker.zero_copy_fetch = zero_copy
    create(core_broker, "t")
    produce(core_broker, [("t", 0, batch())])
    for isolation, aborted in ((0, None), (1, ())):
        answers = fetch(core_broker, [("t", 0, 0), ("t", 1, 0)], isolation)
        read, missing = answers[("t", 0)], answers[("t", 1)]
        assert (read.high_watermark, read.last_stable_offset, read.log_start_offset,
                read.aborted_transactions) == (1, 1, 0, aborted)
        assert (missing.error_code, missing.high_watermark, missing.aborted_transactions) == (
            ErrorCode.unknown_topic_or_partition, -1, ())
    (beyond,) = fetch(core_broker, [("t", 0, 9)]).values()
    assert (beyond.error_code, beyond.high_watermark, beyond.last_stable_offset,
            beyond.log_start_offset, beyond.aborted_transactions) == (
        ErrorCode.offset_out_of_range, -1, -1, -1, None)


@pytest.mark.parametrize("zero_copy", [False, True])
def test_a_read_committed_read_cut_by_the_byte_budget_has_null_aborted_transactions(
        core_broker, zero_copy):
    """ReplicaManager.readFromLocalLog replaces a read whose first batch does not fit the
    bytes left (firstEntryIncomplete) by an empty read without aborted transactions: null.
    A read with nothing to read, or no bytes left at all, keeps the log's empty list."""
    core_broker.zero_copy_fetch = zero_copy
    create(core_broker, "t", partitions=2)
    produce(core_broker, [("t", 0, batch()), ("t", 1, batch())])
    size = len(batch())
    for max_bytes, second in ((size + 10, None), (size, ())):
        answers = fetch(core_broker, [("t", 0, 0), ("t", 1, 0)], isolation=1,
                        max_bytes=max_bytes)
        first, cut = answers[("t", 0)], answers[("t", 1)]
        assert (len(first.records), first.aborted_transactions) == (size, ())
        assert (cut.error_code, len(cut.records), cut.aborted_transactions) == (
            ErrorCode.none, 0, second)
    answers = fetch(core_broker, [("t", 0, 0), ("t", 1, 1)], isolation=1, max_bytes=size + 10)
    assert answers[("t", 1)].aborted_transactions == ()  # at the high watermark: nothing to read


def list_offsets(broker, partitions, version=5):
    """partitions: [(topic, index, timestamp)]; the answer's (topic, index, error, offset,
    leader epoch) entries, sorted."""
    topics: dict[str, list] = {}
    for topic, index, timestamp in partitions:
        topics.setdefault(topic, []).append({"partition_index": index, "timestamp": timestamp,
                                             "current_leader_epoch": -1})
    body = call(broker, 2, version, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": t, "partitions": ps} for t, ps in topics.items()]})
    return sorted((t.name, p.partition_index, p.error_code, p.offset, p.leader_epoch)
                  for t in body.topics for p in t.partitions)


def test_list_offsets_answers_as_kafkas_replica_manager_does(core_broker):
    """A partition named twice: one INVALID_REQUEST entry; a special timestamp newer than the
    version (-3 is v7's): UNSUPPORTED_VERSION; a time past every record: offset -1 and no
    leader epoch (kafkaref answered the partition's epoch)."""
    create(core_broker, "t", partitions=3)
    produce(core_broker, [("t", 0, batch())])
    none = ErrorCode.none
    assert list_offsets(core_broker, [("t", 0, -1), ("t", 0, 5), ("t", 2, -3),
                                      ("t", 1, 99_999)]) == [
        ("t", 0, ErrorCode.invalid_request, -1, -1),
        ("t", 1, none, -1, -1),
        ("t", 2, ErrorCode.unsupported_version, -1, -1)]
    assert list_offsets(core_broker, [("t", 0, 1_000), ("t", 1, -2)]) == [
        ("t", 0, none, 0, 0), ("t", 1, none, 0, 0)]


def test_the_topic_configs_are_kafka_4s(core_broker):
    """Apache Kafka 4.3.1 refuses the configs 3.x still had and describes those 4.x added."""
    for old in ("message.format.version", "message.downconversion.enable",
                "message.timestamp.difference.max.ms"):
        assert create(core_broker, "old", configs=[(old, "1")]) == ErrorCode.invalid_config
    assert create(core_broker, "t", configs=[("compression.gzip.level", "5")]) == ErrorCode.none
    body = call(core_broker, 32, 3, {"resources": [{
        "resource_type": 2, "resource_name": "t", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    names = {c.name for c in body.results[0].configs}
    assert {"compression.lz4.level", "compression.zstd.level", "remote.log.copy.disable",
            "remote.log.delete.on.disable"} <= names
    assert "message.format.version" not in names and len(names) == 33


def create_many(broker, topics, validate_only=False):
    """topics: [(name, partitions, replication factor)]; the answers by name, in order."""
    body = call(broker, 19, 4, {"topics": [{
        "name": n, "num_partitions": p, "replication_factor": rf, "assignments": [],
        "configs": []} for n, p, rf in topics], "timeout": SECONDS,
        "validate_only": validate_only})
    return [(t.name, t.error_code) for t in body.topics]


def test_create_topics_checks_in_kafkas_order(core_broker):
    """ReplicationControlManager.createTopic: a replication factor of 0 or below -1, then a
    partition count of 0 or below -1 (kafkaref took both for the defaults), then placement;
    a name given twice is answered once, INVALID_REQUEST."""
    assert sorted(create_many(core_broker, [("a", 0, 1), ("b", 1, 0), ("c", -2, 5), ("d", 1, 5),
                                            ("e", -1, -1), ("f", 1, 1), ("f", 2, 1)])) == [
        ("a", ErrorCode.invalid_partitions), ("b", ErrorCode.invalid_replication_factor),
        ("c", ErrorCode.invalid_partitions), ("d", ErrorCode.invalid_replication_factor),
        ("e", ErrorCode.none), ("f", ErrorCode.invalid_request)]


def test_validate_only_refuses_a_replication_factor_above_the_live_brokers(core_broker):
    """validate_only answers what creating would (CreateTopicsRequest v1+): more replicas than
    live brokers is INVALID_REPLICATION_FACTOR, unless the replicas are assigned by hand (then
    the assignment is checked instead). Found by mutation testing (docs/mutation.md): the
    `not` before `topic.assignments` dropped, and no validate_only request had either shape."""
    assert create_many(core_broker, [("v", 1, 5)], validate_only=True) == [
        ("v", ErrorCode.invalid_replication_factor)]
    body = call(core_broker, 19, 4, {"topics": [{
        "name": "w", "num_partitions": -1, "replication_factor": -1,
        "assignments": [{"partition_index": 0, "broker_ids": [0]}], "configs": []}],
        "timeout": SECONDS, "validate_only": True})
    assert [(t.name, t.error_code) for t in body.topics] == [("w", ErrorCode.none)]


def admin_errors(broker, api_key, values, field="responses") -> list:
    body = call(broker, api_key, 0 if api_key == 44 else 1, values)
    return sorted((r.resource_name if hasattr(r, "resource_name") else r.name, r.error_code)
                  for r in getattr(body, field))


def test_topic_changes_are_checked_in_the_controllers_order(core_broker):
    """Kafka's controller looks up the topics a CreatePartitions / DeleteTopics names without
    checking the names (UNKNOWN_TOPIC_OR_PARTITION); AlterConfigs checks the name (empty:
    INVALID_REQUEST), then the configs, then that the topic exists; a DescribeConfigs naming a
    resource type Kafka does not know fails as a whole."""
    create(core_broker, "t")
    unknown, none = ErrorCode.unknown_topic_or_partition, ErrorCode.none
    assert admin_errors(core_broker, 37, {"topics": [
        {"name": "bad/name", "count": 2, "assignments": None},
        {"name": "t", "count": 2, "assignments": None},
        {"name": "t", "count": 3, "assignments": None}],
        "timeout": SECONDS, "validate_only": True}, "results") == [
        ("bad/name", unknown), ("t", ErrorCode.invalid_request)]
    assert admin_errors(core_broker, 33, {"resources": [
        {"resource_type": 2, "resource_name": "", "configs": []},
        {"resource_type": 2, "resource_name": "nope", "configs": [
            {"name": "retention.ms", "value": "x"}]},
        {"resource_type": 2, "resource_name": "gone", "configs": []},
        {"resource_type": 2, "resource_name": "t", "configs": []}],
        "validate_only": True}) == [
        ("", ErrorCode.invalid_request), ("gone", unknown), ("nope", ErrorCode.invalid_config),
        ("t", none)]
    assert admin_errors(core_broker, 44, {"resources": [
        {"resource_type": 2, "resource_name": "bad/name", "configs": [
            {"name": "preallocate", "config_operation": 2, "value": "x"}]}],
        "validate_only": True}) == [("bad/name", ErrorCode.invalid_config)]
    assert admin_errors(core_broker, 32, {"resources": [
        {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
        {"resource_type": 3, "resource_name": "x", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False}, "results") == [
        ("t", ErrorCode.invalid_request), ("x", ErrorCode.invalid_request)]


@pytest.mark.parametrize("config,value,accepted", [
    ("segment.ms", "0", False), ("segment.ms", "1", True), ("retention.ms", "-2", False),
    ("retention.ms", "-1", True), ("max.message.bytes", "0", True),
    ("max.compaction.lag.ms", "0", False), ("min.cleanable.dirty.ratio", "1.5", False),
    ("compression.gzip.level", "-1", True), ("compression.gzip.level", "0", False),
    ("compression.lz4.level", "18", False), ("local.retention.ms", "-2", True),
    ("message.timestamp.after.max.ms", "-1", False)])
def test_config_values_are_bounded_as_kafkas_log_config_bounds_them(core_broker, config, value,
                                                                     accepted):
    """Kafka's LogConfig validators (atLeast, between); kafkaref took any number, and refused
    max.message.bytes 0, which Kafka takes."""
    expected = ErrorCode.none if accepted else ErrorCode.invalid_config
    assert create(core_broker, "t", configs=[(config, value)]) == expected


def test_an_offset_commit_checks_its_partitions_before_its_group(core_broker):
    """KafkaApis.handleOffsetCommitRequest answers UNKNOWN_TOPIC_OR_PARTITION for partitions
    that do not exist before the coordinator looks at the generation (kafkaref answered
    ILLEGAL_GENERATION for every partition)."""
    create(core_broker, "t")
    call(core_broker, 10, 2, {"key": "g", "key_type": 0})  # the coordinator's partitions
    body = call(core_broker, 8, 7, {
        "group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "",
        "group_instance_id": None, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                          "committed_metadata": ""},
                                         {"partition_index": 4, "committed_offset": 1,
                                          "committed_metadata": ""}]},
            {"name": "nope", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                             "committed_metadata": ""}]}]})
    assert sorted((t.name, p.partition_index, p.error_code) for t in body.topics
                  for p in t.partitions) == [
        ("nope", 0, ErrorCode.unknown_topic_or_partition),
        ("t", 0, ErrorCode.illegal_generation), ("t", 4, ErrorCode.unknown_topic_or_partition)]


def test_a_group_known_by_its_offsets_has_no_members(core_broker):
    """A group created by a commit outside group management is Kafka's "simple" group: a
    later commit naming a generation is from an unknown member (kafkaref answered
    ILLEGAL_GENERATION, as for a group it never knew)."""
    create(core_broker, "t")
    call(core_broker, 10, 2, {"key": "g", "key_type": 0})

    def commit(generation):
        body = call(core_broker, 8, 2, {
            "group_id": "g", "generation_id_or_member_epoch": generation, "member_id": "",
            "topics": [{"name": "t", "partitions": [{"partition_index": 0,
                                                     "committed_offset": 0,
                                                     "committed_metadata": ""}]}]})
        return body.topics[0].partitions[0].error_code

    assert commit(1) == ErrorCode.illegal_generation
    assert commit(-1) == ErrorCode.none
    assert commit(1) == ErrorCode.unknown_member_id


def test_a_simple_group_outlives_the_offsets_of_a_deleted_topic(core_broker):
    """Kafka keeps the group a commit outside group management created (Empty, listed) when a
    topic's deletion takes its offsets; kafkaref forgot it with them (Dead, not listed)."""
    create(core_broker, "t")
    call(core_broker, 10, 2, {"key": "g", "key_type": 0})
    call(core_broker, 8, 2, {"group_id": "g", "generation_id_or_member_epoch": -1,
                             "member_id": "", "topics": [{"name": "t", "partitions": [
                                 {"partition_index": 0, "committed_offset": 0,
                                  "committed_metadata": ""}]}]})
    call(core_broker, 20, 3, {"topic_names": ["t"], "timeout": SECONDS})
    [group] = call(core_broker, 15, 0, {"groups": ["g"]}).groups
    assert (group.group_state, group.protocol_type) == ("Empty", "")
    assert [(g.group_id, g.protocol_type) for g in call(core_broker, 16, 2, {}).groups] == [
        ("g", "")]


def test_a_commit_without_a_generation_to_an_empty_group_names_any_member(core_broker):
    """ClassicGroup.validateOffsetCommit lets a commit with generation -1 into an empty group
    before it looks at the member id (a member still waiting for its id, MEMBER_ID_REQUIRED);
    kafkaref answered UNKNOWN_MEMBER_ID."""
    create(core_broker, "t")
    call(core_broker, 10, 2, {"key": "g", "key_type": 0})
    joined = call(core_broker, 11, 5, {
        "group_id": "g", "session_timeout": 30_000, "rebalance_timeout": 10_000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\0"}]})
    assert joined.error_code == ErrorCode.member_id_required
    body = call(core_broker, 8, 7, {
        "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": joined.member_id,
        "group_instance_id": None, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}]}]})
    assert body.topics[0].partitions[0].error_code == ErrorCode.none


def test_a_duplicate_is_answered_with_its_batchs_timestamp_as_log_append_time(core_broker):
    """Kafka's UnifiedLog.append answers a duplicate idempotent batch with the cached batch's
    timestamp as its log_append_time (a CreateTime topic too); kafkaref answered -1."""
    create(core_broker, "t")
    pid = call(core_broker, 22, 1, {"transactional_id": None,
                                    "transaction_timeout": 1000}).producer_id
    data = build_batch([(None, b"v", (), 1234)], producer_id=pid, producer_epoch=0,
                       base_sequence=0)
    first, again = (produce(core_broker, [("t", 0, data)])[("t", 0)] for _ in range(2))
    assert (first.base_offset, first.log_append_time) == (0, None)
    assert (again.base_offset, again.error_code) == (0, ErrorCode.none)
    assert again.log_append_time is not None  # kio reads the time as a datetime
    assert int(again.log_append_time.timestamp() * 1000) == 1234


def join_group_v0(broker, group, client_host):
    call(broker, 10, 0, {"key": group})  # creates __consumer_offsets (answered "not yet")
    assert call(broker, 10, 0, {"key": group}).error_code == ErrorCode.none
    return call(broker, 11, 0, {
        "group_id": group, "member_id": "", "session_timeout": 30_000,
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"\0"}]},
        client_id="joiner", client_host=client_host)


def test_describe_groups_names_each_members_host(core_broker):
    """ClassicGroupMember.clientHost: the address of the connection the member joined on, as
    the server names it; the core takes it as a value on the request."""
    joined = join_group_v0(core_broker, "g", "/10.1.2.3")
    assert joined.error_code == ErrorCode.none
    [group] = call(core_broker, 15, 0, {"groups": ["g"]}).groups
    [(client_id, host)] = [(m.client_id, m.client_host) for m in group.members]
    assert (client_id, host) == ("joiner", "/10.1.2.3")


def test_a_rejoining_member_is_counted_with_its_last_protocols(core_broker):
    """ClassicGroup.supportsProtocols: a join's protocols must include one every member
    supports, the joining member counted with the protocols of its last join; an empty group
    takes any, as long as it has a type and protocols."""
    def join(member_id, names, protocol_type="consumer"):
        return call(core_broker, 11, 0, {
            "group_id": "g", "member_id": member_id, "session_timeout": 30_000,
            "protocol_type": protocol_type,
            "protocols": [{"name": name, "metadata": b"\0"} for name in names]})

    call(core_broker, 10, 0, {"key": "g"})  # creates __consumer_offsets
    assert join("", ["range"], protocol_type="").error_code == ErrorCode.inconsistent_group_protocol
    assert join("", []).error_code == ErrorCode.inconsistent_group_protocol
    first = join("", ["range"])
    assert first.error_code == ErrorCode.none
    assert join(first.member_id, ["rr"]).error_code == ErrorCode.inconsistent_group_protocol
    assert join(first.member_id, ["range"], "other").error_code == \
        ErrorCode.inconsistent_group_protocol
    again = join(first.member_id, ["rr", "range"])
    assert (again.error_code, again.generation_id) == (ErrorCode.none, first.generation_id + 1)


def test_a_topic_deleted_twice_in_one_request_is_answered_without_its_id(core_broker):
    """ControllerApis.deleteTopics answers a name given twice once, INVALID_REQUEST, with the
    zero topic id (kafkaref gave the topic's); a topic deleted alone carries its id."""
    create(core_broker, "t")
    body = call(core_broker, 20, 6, {"topics": [{"name": "t", "topic_id": None}] * 2,
                                     "timeout": SECONDS})
    ((answer,),) = [body.responses]
    assert (answer.name, answer.error_code, answer.topic_id) == ("t", ErrorCode.invalid_request,
                                                                 None)
    body = call(core_broker, 20, 6, {"topics": [{"name": "t", "topic_id": None}],
                                     "timeout": SECONDS})
    assert body.responses[0].error_code == ErrorCode.none and body.responses[0].topic_id


def test_a_producer_known_only_by_epoch_minus_one_takes_any_sequence():
    """ProducerAppendInfo.checkSequence: while a producer's recorded epoch is
    NO_PRODUCER_EPOCH (-1: its batches carried none) any sequence is accepted, in that epoch
    and in the next (kafkaref demanded sequence 0 of the new epoch; the walk found it)."""
    from kafkaref.impl.core.producer_state import CachedBatch, ProducerState

    state = ProducerState()
    state.record(7, -1, CachedBatch(0, 3, 0, 3))
    assert state.check(7, -1, 9, 9).error == ErrorCode.none
    assert state.check(7, 0, 4, 4).error == ErrorCode.none
    state.record(7, 0, CachedBatch(4, 4, 4, 4))
    assert state.check(7, 1, 3, 3).error == ErrorCode.out_of_order_sequence_number
    assert state.check(7, 0, 9, 9).error == ErrorCode.out_of_order_sequence_number


@pytest.mark.parametrize("zero_copy", [False, True])
def test_a_partition_fetched_twice_is_answered_once_with_the_later_offsets(core_broker,
                                                                           zero_copy):
    """Kafka's FetchRequest.fetchData is a map keyed by partition: a partition named twice is
    answered once, where it was first named, read from the later entry's offset (seen on 4.3.1
    at v11 and v16; kafkaref answered it twice, and closed the connection at v11)."""
    core_broker.zero_copy_fetch = zero_copy
    create(core_broker, "t", partitions=2)
    produce(core_broker, [("t", 0, batch()), ("t", 1, batch())])
    produce(core_broker, [("t", 0, batch())])
    entry = {"partition_max_bytes": 1 << 20, "current_leader_epoch": -1, "log_start_offset": -1,
             "last_fetched_epoch": -1}
    body = call(core_broker, 1, 11, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [{"topic": "t", "partitions": [
            {**entry, "partition": 0, "fetch_offset": 0},
            {**entry, "partition": 1, "fetch_offset": 0},
            {**entry, "partition": 0, "fetch_offset": 1}]}]})
    answers = [(t.topic, p.partition_index, p.error_code) for t in body.responses
               for p in t.partitions]
    assert answers == [("t", 0, ErrorCode.none), ("t", 1, ErrorCode.none)]
    first = body.responses[0].partitions[0]
    records = first.records if isinstance(first.records, bytes) else bytes(first.records)
    assert int.from_bytes(records[:8], "big") == 1  # the later entry's offset
