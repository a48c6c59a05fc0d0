"""The retention task in the core (ReplicaManager.run_retention_checks, Kafka's LogManager
cleanupLogs every log.retention.check.interval.ms after log.initial.task.delay.ms): every
partition the broker hosts, leader or follower, runs Log.delete_old_segments with its topic's
retention.ms / retention.bytes (CreateTopics, IncrementalAlterConfigs: at the next run), the
log start moves, ListOffsets EARLIEST and Fetch see it. Core brokers over impl/storage logs on
one manual clock (both readings), through the wire codec, no sockets."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.clock import Clock
from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.topic_rules import SET
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.server import storage_log_factory
from kafkaref.impl.storage.config import LogConfig
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import alter_incremental, call, replicate_once

T0 = 1_700_000_000_000  # the brokers' clock when they start (both readings)
DELAY_MS, INTERVAL_MS = 1_000, 5_000
HOUR_MS = 3_600_000


def brokers(tmp_path, count=1):
    """Core brokers on storage logs of 600-byte segments, their retention task first due at
    T0 + DELAY_MS, then every INTERVAL_MS."""
    controller, clock = LocalController(), ManualClock(T0)
    found = []
    for broker_id in range(count):
        logs = storage_log_factory(str(tmp_path / f"b{broker_id}"), LogConfig(segment_bytes=600),
                                   clock=Clock(monotonic_ms=clock, wall_ms=clock))
        config = BrokerConfig(broker_id=broker_id, log_initial_task_delay_ms=DELAY_MS,
                              log_retention_check_interval_ms=INTERVAL_MS)
        b = Broker(config, clock, logs)
        controller.register(b, "127.0.0.1", 9092 + broker_id)
        found.append(b)
    return clock, found


def create(broker, name, configs=(), rf=1):
    body = call(broker, 19, 7, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": rf, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": 5000, "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none


def produce(broker, name, timestamp, count=1):
    for _ in range(count):
        body = call(broker, 0, 12, {"transactional_id": None, "acks": 1, "timeout": 1000,
                                    "topic_data": [{"name": name, "partition_data": [{
                                        "index": 0, "records": build_batch(
                                            [(b"k", b"v" * 100, (), timestamp)])}]}]})
        assert body.responses[0].partition_responses[0].error_code == ErrorCode.none


def earliest(broker, name):
    return broker.replica_manager.list_offset((name, 0), -2).offset


def fetch_error(broker, name, offset):
    body = call(broker, 1, 12, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [{"topic": name, "partitions": [{
            "partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}]}]})
    return body.responses[0].partitions[0].error_code


def caught_up(leader, follower, key=("t", 0)):
    """Replica fetch rounds (one segment each) until the follower has the leader's log and hw."""
    for _ in range(50):
        replicate_once(leader, follower, key)
        mine, theirs = follower.replica_manager.partition(key), leader.replica_manager.partition(key)
        if (mine.log_end_offset, mine.high_watermark) == (theirs.log_end_offset,
                                                           theirs.high_watermark):
            return
    raise AssertionError("the follower did not catch up")


def run_until(clock, broker_list, now):
    clock.now_ms = now
    for b in broker_list:
        b.advance_clock(now)


def test_the_task_runs_after_the_initial_delay_then_every_interval(tmp_path):
    clock, (b,) = brokers(tmp_path)
    create(b, "t", [("retention.ms", "1000")])
    assert b.next_deadline_ms() <= T0 + DELAY_MS
    produce(b, "t", T0 - HOUR_MS, count=12)  # an hour old: past retention.ms at once
    leo = b.replica_manager.partition(("t", 0)).log_end_offset
    run_until(clock, [b], T0 + DELAY_MS - 1)
    assert earliest(b, "t") == 0  # not yet
    run_until(clock, [b], T0 + DELAY_MS)
    assert earliest(b, "t") == leo  # every segment, the active one rolled first
    assert fetch_error(b, "t", leo - 1) == ErrorCode.offset_out_of_range
    assert fetch_error(b, "t", leo) == ErrorCode.none
    assert b.replica_manager.next_deadline_ms() == T0 + DELAY_MS + INTERVAL_MS
    produce(b, "t", T0 - HOUR_MS, count=3)
    run_until(clock, [b], T0 + DELAY_MS + INTERVAL_MS - 1)
    assert earliest(b, "t") == leo
    run_until(clock, [b], T0 + DELAY_MS + INTERVAL_MS)
    assert earliest(b, "t") == leo + 3


def test_leader_and_follower_each_delete_only_below_the_hw(tmp_path):
    clock, (leader, follower) = brokers(tmp_path, 2)
    create(leader, "t", [("retention.ms", "60000")], rf=2)
    if leader.replica_manager.partition(("t", 0)).is_leader is False:
        leader, follower = follower, leader
    produce(leader, "t", T0 - HOUR_MS, count=8)  # old
    produce(leader, "t", T0, count=4)  # new
    caught_up(leader, follower)
    produce(leader, "t", T0 - HOUR_MS, count=2)  # old again, above the hw: kept
    hw = leader.replica_manager.partition(("t", 0)).high_watermark
    assert hw == 12
    run_until(clock, [leader, follower], T0 + DELAY_MS)
    start = earliest(leader, "t")
    assert 0 < start <= 8  # the old segments, up to the one holding new records
    assert follower.replica_manager.partition(("t", 0)).log.log_start_offset == start
    for b in (leader, follower):
        log = b.replica_manager.partition(("t", 0)).log
        assert log.log_start_offset <= log.high_watermark
        assert [h.base_offset for h, _ in log.iter_batches()] == list(
            range(start, log.log_end_offset))
    caught_up(leader, follower)
    assert follower.replica_manager.partition(("t", 0)).log.log_end_offset == 14


def test_topic_configs_take_effect_at_the_next_run(tmp_path):
    """retention.ms set by IncrementalAlterConfigs; retention.bytes at creation; -1 keeps;
    a compacted topic is not the task's (cleanup.policy without "delete")."""
    clock, (b,) = brokers(tmp_path)
    create(b, "later")  # the broker's log.retention.ms: seven days
    create(b, "sized", [("retention.bytes", "700"), ("retention.ms", "-1")])
    create(b, "kept", [("retention.ms", "-1")])
    create(b, "compacted", [("cleanup.policy", "compact"), ("retention.ms", "1000")])
    for name in ("later", "sized", "kept", "compacted"):
        produce(b, name, T0 - HOUR_MS, count=10)
    run_until(clock, [b], T0 + DELAY_MS)
    assert [earliest(b, n) for n in ("later", "kept", "compacted")] == [0, 0, 0]
    sized = b.replica_manager.partition(("sized", 0)).log
    assert earliest(b, "sized") > 0 and sized.size_bytes - sized.segments[0].size < 700
    assert alter_incremental(b, "later", [("retention.ms", SET, "1000")]) == ErrorCode.none
    assert earliest(b, "later") == 0  # not at once: at the next run
    run_until(clock, [b], T0 + DELAY_MS + INTERVAL_MS)
    assert earliest(b, "later") == 10
    assert [earliest(b, n) for n in ("kept", "compacted")] == [0, 0]


def test_no_task_when_the_interval_is_none_and_a_zero_interval_is_refused(tmp_path):
    controller, clock = LocalController(), ManualClock(T0)
    logs = storage_log_factory(str(tmp_path), LogConfig(segment_bytes=600),
                               clock=Clock(monotonic_ms=clock, wall_ms=clock))
    b = Broker(BrokerConfig(log_retention_check_interval_ms=None), clock, logs)
    controller.register(b, "127.0.0.1", 9092)
    create(b, "t", [("retention.ms", "1000")])
    produce(b, "t", T0 - HOUR_MS, count=5)
    run_until(clock, [b], T0 + 30 * 24 * HOUR_MS)
    assert earliest(b, "t") == 0
    with pytest.raises(ValueError, match="must be positive"):
        Broker(BrokerConfig(log_retention_check_interval_ms=0), clock, logs)
