"""A topic's segment.bytes reaches its partitions' logs (impl/core/topic_rules.py,
PartitionConfig.segment_bytes, Log.set_segment_bytes): at creation and after AlterConfigs /
IncrementalAlterConfigs, on leaders and followers, overriding the broker's log.segment.bytes;
below Kafka 4.0's minimum (1 MiB, KIP-1030) INVALID_CONFIG. Core brokers over impl/storage
logs, through the wire codec, no sockets."""

import datetime

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.config import SEGMENT_MIN_BYTES
from kafkaref.impl.core.topic_rules import DELETE, SET
from kafkaref.impl.protocol.records import build_batch, decode_batch, split_batches
from kafkaref.impl.server.server import storage_log_factory
from kafkaref.impl.storage.config import LogConfig
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import alter_incremental, call

SECONDS = datetime.timedelta(seconds=5)
MIB = 1024 * 1024
VALUE = b"x" * 100_000  # ~100 KB per batch: a 1 MiB segment holds ten


def storage_brokers(tmp_path, count=1, broker_segment_bytes=None):
    """Core brokers on impl/storage logs; the broker-level log.segment.bytes as given."""
    controller, clock = LocalController(), ManualClock()
    sizes = {} if broker_segment_bytes is None else {"segment_bytes": broker_segment_bytes}
    found = []
    for broker_id in range(count):
        logs = storage_log_factory(str(tmp_path / f"b{broker_id}"),
                                   LogConfig(validate_records=False, **sizes))
        b = Broker(BrokerConfig(broker_id=broker_id), clock, logs)
        controller.register(b, "127.0.0.1", 9092 + broker_id)
        found.append(b)
    return found


def create(broker, name, configs=(), rf=1):
    body = call(broker, 19, 4, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": rf, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": SECONDS, "validate_only": False})
    return body.topics[0]


def alter(broker, name, configs):
    body = call(broker, 33, 1, {"resources": [{
        "resource_type": 2, "resource_name": name,
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "validate_only": False})
    return body.responses[0].error_code



def produce(broker, name, count, acks=1):
    """count batches of one ~100 KB record each; their base offsets."""
    bases = []
    for _ in range(count):
        body = call(broker, 0, 8, {"acks": acks, "timeout": 1000, "transactional_id": None,
                                   "topic_data": [{"name": name, "partition_data": [{
                                       "index": 0, "records": build_batch(
                                           [(None, VALUE, (), None)])}]}]})
        answer = body.responses[0].partition_responses[0]
        assert answer.error_code == ErrorCode.none, answer
        bases.append(answer.base_offset)
    return bases


def log_of(broker, name):
    return broker.replica_manager.partition((name, 0)).log


def segment_sizes(log):
    return [segment.size for segment in log.segments]


def test_segment_bytes_at_creation_overrides_the_brokers(tmp_path):
    """A topic created with segment.bytes=1 MiB rolls every ten ~100 KB batches although the
    broker's log.segment.bytes is Kafka's default 1 GiB; a topic without it never rolls."""
    (b,) = storage_brokers(tmp_path)
    assert create(b, "small", [("segment.bytes", str(MIB))]).error_code == ErrorCode.none
    assert create(b, "plain").error_code == ErrorCode.none
    assert produce(b, "small", 25) == list(range(25))
    produce(b, "plain", 25)
    small, plain = log_of(b, "small"), log_of(b, "plain")
    assert len(small.segments) == 3 and max(segment_sizes(small)) <= MIB
    assert len(plain.segments) == 1
    assert small.segment_bases == (0, 10, 20)  # ten ~100 KB batches per 1 MiB segment
    assert small.verify() == []


def test_alter_configs_applies_at_the_next_roll_on_every_replica(tmp_path):
    """AlterConfigs: the new size decides the next roll (the active segment is measured
    against it from the next append on), on the leader and the follower; deleting the override
    goes back to the broker's log.segment.bytes."""
    leader, follower = storage_brokers(tmp_path, 2, broker_segment_bytes=3 * MIB)
    assert create(leader, "t", rf=2).error_code == ErrorCode.none
    produce(leader, "t", 15)
    assert alter(leader, "t", {"segment.bytes": str(MIB)}) == ErrorCode.none
    for b in (leader, follower):
        assert b.replica_manager.partition(("t", 0)).config.segment_bytes == MIB
        assert log_of(b, "t").config.segment_bytes == MIB
    produce(leader, "t", 1)  # 15 batches (~1.5 MiB) are over 1 MiB: this append rolls
    assert log_of(leader, "t").segment_bases == (0, 15)
    assert alter_incremental(leader, "t", [("segment.bytes", DELETE, None)]) == ErrorCode.none
    assert log_of(leader, "t").config.segment_bytes == 3 * MIB
    assert log_of(follower, "t").config.segment_bytes == 3 * MIB
    produce(leader, "t", 15)
    assert log_of(leader, "t").segment_bases == (0, 15)  # 16 batches (~1.6 MiB) < 3 MiB
    assert alter_incremental(leader, "t", [("segment.bytes", SET, str(MIB))]) == ErrorCode.none
    produce(leader, "t", 1)
    assert log_of(leader, "t").segment_bases == (0, 15, 31)


@pytest.mark.parametrize("value", ["1048575", "14", "0", "-1", "big", str(2**31)])
def test_segment_bytes_below_the_minimum_is_invalid_config(tmp_path, value):
    (b,) = storage_brokers(tmp_path)
    answer = create(b, "t", [("segment.bytes", value)])
    assert answer.error_code == ErrorCode.invalid_config
    assert b.metadata.topic("t") is None
    assert create(b, "t", [("segment.bytes", str(SEGMENT_MIN_BYTES))]).error_code == (
        ErrorCode.none)
    assert alter(b, "t", {"segment.bytes": value}) == ErrorCode.invalid_config
    assert alter_incremental(b, "t", [("segment.bytes", SET, value)]) == (
        ErrorCode.invalid_config)
    assert log_of(b, "t").config.segment_bytes == SEGMENT_MIN_BYTES


def test_a_small_broker_segment_size_stays_a_broker_setting(tmp_path):
    """The broker's own log.segment.bytes (a test setting: `kafkaref broker --segment-bytes`)
    may be below the client minimum; a topic override replaces it, and every record is read
    back across the rolls."""
    (b,) = storage_brokers(tmp_path, broker_segment_bytes=250_000)
    assert create(b, "t").error_code == ErrorCode.none
    produce(b, "t", 6)
    assert log_of(b, "t").segment_bases == (0, 2, 4)
    records = []
    for _, raw in log_of(b, "t").iter_batches():
        decoded = decode_batch(raw)
        records.extend(r.offset for r in decoded.records)
    assert records == list(range(6))
    assert split_batches(log_of(b, "t").read(0, 10 * MIB, 6))[0] == ErrorCode.none


@pytest.mark.parametrize("stored", ["14", "0", "-1", "many"])
def test_an_override_stored_before_the_bound_is_ignored(stored):
    """A snapshot written before the 1 MiB bound may hold a smaller segment.bytes: the broker's
    log.segment.bytes applies instead of a value the logs would refuse."""
    from kafkaref.impl.core.metadata import TopicMeta

    assert TopicMeta("t", (), (("segment.bytes", stored),)).config().segment_bytes is None
    assert TopicMeta("t", (), (("segment.bytes", str(MIB)),)).config().segment_bytes == MIB
