"""Compacted topics refuse records without a key (Kafka's LogValidator.validateKey, KIP-467):
the leader answers INVALID_RECORD with one record error per keyless record and appends nothing of
that batch; compressed batches are decompressed to check; followers do not check; a topic
without "compact" in its cleanup.policy is unaffected. docs/semantics.md, "Compacted topics"."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import CLOSE_CONNECTION, Broker, BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition, PartitionConfig
from kafkaref.impl.core.topic_rules import APPEND, SET
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import build_batch, decode_batch, keyless_records
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import alter_incremental, call

WHY = "Compacted topic cannot accept message without key in topic partition t-0"


def batch(keys, compression=Compression.none, **options) -> bytes:
    return build_batch([(k, b"v%d" % i, (), 5) for i, k in enumerate(keys)],
                       compression=compression, **options)


def leader(compacted: bool) -> Partition:
    partition = Partition("t", 0, 1, MemoryLog(), clock=lambda: 0,
                          config=PartitionConfig(compacted=compacted))
    partition.make_leader(1, {1}, (1,))
    return partition


# -- the partition ------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", list(Compression))
def test_a_mixed_batch_is_refused_naming_its_keyless_records(compression):
    p = leader(compacted=True)
    result = p.append_as_leader(batch([b"a", None, b"c", None, None], compression), 1)
    assert result.error == ErrorCode.invalid_record
    assert result.record_errors == ((1, WHY), (3, WHY), (4, WHY))
    assert result.error_message == (
        "One or more records have been rejected due to 3 record errors in total, and only "
        "showing the first three errors at most: ["
        f"RecordError(batchIndex=1, message='{WHY}'), RecordError(batchIndex=3, message='{WHY}'), "
        f"RecordError(batchIndex=4, message='{WHY}')]")
    assert p.log_end_offset == 0 and p.high_watermark == 0  # nothing of the batch appended


@pytest.mark.parametrize("compression", list(Compression))
def test_a_keyed_batch_is_appended(compression):
    p = leader(compacted=True)
    result = p.append_as_leader(batch([b"a", b"b", b""], compression), 1)  # b"" is a key
    assert (result.error, result.base_offset, result.last_offset) == (ErrorCode.none, 0, 2)
    assert result.record_errors == ()


@pytest.mark.parametrize("compression", [Compression.none, Compression.zstd])
def test_a_topic_that_is_not_compacted_takes_keyless_records(compression):
    p = leader(compacted=False)
    result = p.append_as_leader(batch([None, None], compression), 1)
    assert (result.error, result.last_offset, result.record_errors) == (ErrorCode.none, 1, ())


def test_more_than_three_keyless_records_are_all_listed_and_three_shown():
    result = leader(compacted=True).append_as_leader(batch([None] * 5), 1)
    assert [i for i, _ in result.record_errors] == [0, 1, 2, 3, 4]
    assert "due to 5 record errors" in result.error_message
    assert result.error_message.count("RecordError(") == 3


def test_a_refused_idempotent_batch_leaves_the_producer_state_alone():
    """Kafka validates before the producer state: the keyless batch is refused (again on a
    retry, never a duplicate), and the same sequence with keys is then accepted."""
    p = leader(compacted=True)
    keyless = batch([None], producer_id=7, producer_epoch=0, base_sequence=0)
    for _ in range(2):
        assert p.append_as_leader(keyless, 1).error == ErrorCode.invalid_record
    keyed = batch([b"k"], producer_id=7, producer_epoch=0, base_sequence=0)
    assert p.append_as_leader(keyed, 1).error == ErrorCode.none
    assert p.log_end_offset == 1


def test_followers_do_not_check_keys():
    """Only the leader validates (Kafka's appendAsFollower skips LogValidator)."""
    follower = Partition("t", 0, 2, MemoryLog(), clock=lambda: 0,
                         config=PartitionConfig(compacted=True))
    follower.make_follower(1, 1, (1, 2))
    follower.append_as_follower(batch([None, b"k"], base_offset=0, partition_leader_epoch=1), 0)
    assert follower.log_end_offset == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=200)), min_size=1, max_size=40),
       st.sampled_from(list(Compression)),
       st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=9))),
                max_size=2))
def test_keyless_records_agrees_with_the_decoder(keys, compression, headers):
    data = build_batch([(k, b"v" * i, tuple(headers), i) for i, k in enumerate(keys)],
                       compression=compression)
    decoded = decode_batch(data)
    assert keyless_records(data) == [i for i, r in enumerate(decoded.records) if r.key is None]


def test_keyless_records_never_raises_on_garbage():
    data = bytearray(batch([None, b"k"]))
    assert keyless_records(bytes(data[:30])) == ErrorCode.corrupt_message
    data[-3] ^= 0xFF  # a record's bytes changed: the CRC no longer matches
    assert keyless_records(bytes(data)) == ErrorCode.corrupt_message


# -- the broker: topic configs reach the partitions, the wire carries the record errors -----------
def broker() -> Broker:
    b = Broker(BrokerConfig(broker_id=0), ManualClock(), lambda key: MemoryLog())
    LocalController().register(b, "127.0.0.1", 9092)
    return b



def create(b, name, configs=()):
    body = call(b, 19, 4, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": 5000, "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none, body



def produce(b, name, data, acks=1, version=8):
    body = call(b, 0, version, {"acks": acks, "timeout": 1000, "transactional_id": None,
                                "topic_data": [{"name": name, "partition_data": [
                                    {"index": 0, "records": data}]}]})
    return body if body in (None, CLOSE_CONNECTION) else body.responses[0].partition_responses[0]


def leo(b, name) -> int:
    return b.replica_manager.partition((name, 0)).log_end_offset


@pytest.mark.parametrize("policy", ["compact", "compact,delete", "delete, compact"])
def test_a_compacted_topic_answers_record_errors_on_the_wire(policy):
    b = broker()
    create(b, "t", [("cleanup.policy", policy)])
    answer = produce(b, "t", batch([None, b"k", None], Compression.lz4))
    assert answer.error_code == ErrorCode.invalid_record
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
        (0, WHY), (2, WHY)]
    assert answer.error_message.startswith("One or more records have been rejected due to 2")
    assert leo(b, "t") == 0
    answer = produce(b, "t", batch([b"k", b"l"]))
    assert (answer.error_code, answer.base_offset, answer.record_errors) == (ErrorCode.none, 0, ())


def test_acks_0_appends_nothing_and_closes_the_connection():
    b = broker()
    create(b, "t", [("cleanup.policy", "compact")])
    assert produce(b, "t", batch([None]), acks=0) == CLOSE_CONNECTION  # as Kafka does
    assert leo(b, "t") == 0


def test_acks_all_answers_the_refusal_at_once():
    b = broker()
    create(b, "t", [("cleanup.policy", "compact")])
    assert produce(b, "t", batch([None]), acks=-1).error_code == ErrorCode.invalid_record


def test_an_old_produce_version_gets_the_error_code_alone():
    b = broker()
    create(b, "t", [("cleanup.policy", "compact")])
    assert produce(b, "t", batch([None]), version=3).error_code == ErrorCode.invalid_record


def test_altering_cleanup_policy_reaches_the_partition_at_once():
    b = broker()
    create(b, "t")
    assert produce(b, "t", batch([None])).error_code == ErrorCode.none
    assert alter_incremental(b, "t", [("cleanup.policy", APPEND, "compact")]) == ErrorCode.none
    assert produce(b, "t", batch([None])).error_code == ErrorCode.invalid_record
    assert alter_incremental(b, "t", [("cleanup.policy", SET, "delete")]) == ErrorCode.none
    assert produce(b, "t", batch([None])).error_code == ErrorCode.none
    assert leo(b, "t") == 2
