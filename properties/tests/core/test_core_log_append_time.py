"""message.timestamp.type=LogAppendTime (PartitionConfig.log_append_time): the leader's log stamps
every batch it appends with its wall-clock time (the timestamp-type bit, MaxTimestamp, the CRC;
the records left as sent), the Produce answer carries that time as log_append_time (-1, None in
kio, for CreateTime), a duplicate is answered with its original batch's time, followers copy the
leader's bytes, ListOffsets by time finds the stamped time, and AlterConfigs switching the type
acts on later appends only. As Apache Kafka's LogValidator and UnifiedLog.append do. Core
brokers on MemoryLogs with a fake wall clock, through the wire codec, no sockets."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import PartitionConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition
from kafkaref.impl.core.topic_rules import DELETE, SET
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import (
    build_batch,
    check_batch,
    decode_batch,
    parse_header,
    split_batches,
)
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import alter_incremental, call, core_brokers, replicate_once

KEY = ("t", 0)
WALL_MS = 1_800_000_000_000  # the brokers' wall clock; the producers' timestamps are 1000
MAX_TIMESTAMP = -3  # ListOffsets' "the record with the greatest timestamp"


@pytest.fixture
def wall():
    return ManualClock(WALL_MS)


def brokers(wall, count=1):
    return core_brokers(count, log_factory=lambda key: MemoryLog(wall_ms=wall))


def create(broker, name="t", timestamp_type=None, replication_factor=1):
    configs = [] if timestamp_type is None else [
        {"name": "message.timestamp.type", "value": timestamp_type}]
    body = call(broker, 19, 7, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": replication_factor,
        "assignments": [], "configs": configs}], "timeout": 5000, "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none


def produce(broker, data, name="t"):
    """The partition's answer: (error, base offset, log_append_time in ms or -1)."""
    body = call(broker, 0, 8, {"acks": 1, "timeout": 1000, "transactional_id": None,
                               "topic_data": [{"name": name, "partition_data": [
                                   {"index": 0, "records": data}]}]})
    answer = body.responses[0].partition_responses[0]
    time = answer.log_append_time  # kio reads it as a datetime, None for -1
    return (answer.error_code, answer.base_offset,
            -1 if time is None else round(time.timestamp() * 1000))


def records(count=2, **options) -> bytes:
    return build_batch([(b"k", b"v%d" % i, (), 1000 + i) for i in range(count)], **options)


def stored(broker, name="t"):
    """(header, bytes) of every batch of the partition's log."""
    return list(broker.replica_manager.partition((name, 0)).log.iter_batches())


def test_every_batch_is_stamped_with_the_append_time_and_the_answer_says_it(wall):
    (b,) = brokers(wall)
    create(b, "t", "LogAppendTime")
    create(b, "plain")
    assert produce(b, records(2)) == (ErrorCode.none, 0, WALL_MS)
    wall.advance(250)
    assert produce(b, records(3)) == (ErrorCode.none, 2, WALL_MS + 250)
    assert produce(b, records(2), "plain") == (ErrorCode.none, 0, -1)
    for (header, raw), time in zip(stored(b), (WALL_MS, WALL_MS + 250), strict=True):
        assert header.is_log_append_time and header.max_timestamp == time
        assert check_batch(raw) == ErrorCode.none  # the CRC was recomputed
        assert header.base_timestamp == 1000  # the producer's, as Kafka leaves it
        assert {r.timestamp for r in decode_batch(raw).records} == {time}
    ((header, _),) = stored(b, "plain")
    assert not header.is_log_append_time and header.max_timestamp == 1001


def test_a_duplicate_is_answered_with_its_batchs_append_time(wall):
    """UnifiedLog.append answers a duplicate with the cached batch's timestamp: on a
    LogAppendTime topic the time the log stamped, not the producer's nor the clock's now."""
    (b,) = brokers(wall)
    create(b, "t", "LogAppendTime")
    pid = call(b, 22, 1, {"transactional_id": None, "transaction_timeout": 1000}).producer_id
    data = records(2, producer_id=pid, producer_epoch=0, base_sequence=0)
    assert produce(b, data) == (ErrorCode.none, 0, WALL_MS)
    wall.advance(5_000)
    assert produce(b, data) == (ErrorCode.none, 0, WALL_MS)
    assert len(stored(b)) == 1


def test_followers_copy_the_stamped_batches_unchanged(wall):
    b0, b1 = brokers(wall, 2)
    create(b0, "t", "LogAppendTime", replication_factor=2)
    leading = b0.metadata.topic("t").partitions[0].leader
    leader, follower = (b0, b1) if leading == 0 else (b1, b0)
    produce_ = [produce(leader, records(2)) for _ in range(2)]
    assert [time for _, _, time in produce_] == [WALL_MS, WALL_MS]
    wall.advance(1_000)  # a follower's own clock never enters what it copies
    replicate_once(leader, follower, KEY)
    assert stored(follower) == stored(leader)


def test_list_offsets_by_time_finds_the_stamped_time(wall):
    (b,) = brokers(wall)
    create(b, "t", "LogAppendTime")
    for step in (0, 100, 100):
        wall.advance(step)
        produce(b, records(2))
    answer = b.replica_manager.list_offset(KEY, WALL_MS + 50)
    assert (answer.offset, answer.timestamp) == (2, WALL_MS + 100)
    answer = b.replica_manager.list_offset(KEY, 1000)  # the producers' times are never seen
    assert (answer.offset, answer.timestamp) == (0, WALL_MS)
    answer = b.replica_manager.list_offset(KEY, MAX_TIMESTAMP)
    assert (answer.offset, answer.timestamp) == (4, WALL_MS + 200)


def test_altering_the_timestamp_type_acts_on_later_appends_only(wall):
    """IncrementalAlterConfigs to LogAppendTime and back: batches already written keep what
    they were written with, on the leader and its follower."""
    b0, b1 = brokers(wall, 2)
    create(b0, "t", replication_factor=2)
    leading = b0.metadata.topic("t").partitions[0].leader
    leader, follower = (b0, b1) if leading == 0 else (b1, b0)
    assert produce(leader, records(1)) == (ErrorCode.none, 0, -1)
    assert alter_incremental(leader, "t", [("message.timestamp.type", SET, "LogAppendTime")]) == (
        ErrorCode.none)
    for broker in (leader, follower):
        assert broker.replica_manager.partition(KEY).config.log_append_time
    assert produce(leader, records(1)) == (ErrorCode.none, 1, WALL_MS)
    assert alter_incremental(leader, "t", [("message.timestamp.type", DELETE, None)]) == (
        ErrorCode.none)
    assert produce(leader, records(1)) == (ErrorCode.none, 2, -1)
    replicate_once(leader, follower, KEY)
    for broker in (leader, follower):
        assert [h.is_log_append_time for h, _ in stored(broker)] == [False, True, False]
        assert [h.max_timestamp for h, _ in stored(broker)] == [1000, WALL_MS, 1000]


def test_a_partition_reads_the_timestamp_type_at_each_append():
    log = MemoryLog(wall_ms=lambda: WALL_MS)
    partition = Partition("t", 0, 1, log, clock=lambda: 0)
    partition.make_leader(1, {1}, (1,))
    assert partition.append_as_leader(records(), 1).log_append_time == -1
    partition.reconfigure(PartitionConfig(log_append_time=True))
    result = partition.append_as_leader(records(), 1)
    assert (result.error, result.base_offset, result.log_append_time) == (
        ErrorCode.none, 2, WALL_MS)
    _, views = split_batches(log.read(0, 1 << 20))
    assert [parse_header(v).max_timestamp for v in views] == [1001, WALL_MS]


@pytest.mark.parametrize("codec", list(Compression))
def test_a_compressed_batch_is_stamped_in_place_with_its_records_as_sent(codec):
    """Kafka stamps a compressed batch without recompressing it (the topic's compression.type
    is "producer"): the header changes, the compressed records do not."""
    log = MemoryLog(wall_ms=lambda: WALL_MS)
    partition = Partition("t", 0, 1, log, clock=lambda: 0,
                          config=PartitionConfig(log_append_time=True))
    partition.make_leader(1, {1}, (1,))
    sent = records(3, compression=codec)
    assert partition.append_as_leader(sent, 1).log_append_time == WALL_MS
    ((header, raw),) = log.batches()
    assert header.compression == codec and bytes(raw)[61:] == sent[61:]
    assert check_batch(raw) == ErrorCode.none
    assert [(r.value, r.timestamp) for r in decode_batch(raw).records] == [
        (b"v%d" % i, WALL_MS) for i in range(3)]
