"""The threaded broker's retention task end to end, over sockets: a broker on disk whose task
runs every 200 ms (log.initial.task.delay.ms, log.retention.check.interval.ms), topics with
small retention.ms / retention.bytes. Records stamped in 1970 go at the next run: ListOffsets
EARLIEST moves to the log end, a Fetch below it is OFFSET_OUT_OF_RANGE, nothing at or above the
hw is lost, and new records stay. An IncrementalAlterConfigs of retention.ms acts at the next
run. (In lockstep with the model: properties/tests/core/test_core_lockstep_delete_records.py.)"""

import time

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.servers import BrokerSetup
from kafkaref.properties.waiting import wait_until

TASK_MS = 200
ON_DISK = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk", broker=(
    BrokerConfig(log_initial_task_delay_ms=TASK_MS, log_retention_check_interval_ms=TASK_MS)))])
EARLIEST, LATEST = -2, -1


@pytest.fixture
def connection(broker):
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        yield conn


def create(connection, name, configs=()):
    answer = connection.send(19, 4, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": 5000, "validate_only": False}).topics[0]
    assert answer.error_code == ErrorCode.none


def produce(connection, topic, timestamp, count=1):
    for _ in range(count):
        answer = connection.send(0, 8, {"transactional_id": None, "acks": 1, "timeout": 5000,
                                        "topic_data": [{"name": topic, "partition_data": [{
                                            "index": 0, "records": build_batch(
                                                [(b"k", b"v" * 50, (), timestamp)])}]}]}
                                 ).responses[0].partition_responses[0]
        assert answer.error_code == ErrorCode.none


def offset(connection, topic, which):
    answer = connection.send(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [{
        "name": topic, "partitions": [{"partition_index": 0, "timestamp": which,
                                        "current_leader_epoch": -1}]}]}).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.none
    return answer.offset


def fetch(connection, topic, at):
    answer = connection.send(1, 12, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [{"topic": topic, "partitions": [{
            "partition": 0, "fetch_offset": at, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}]}]})
    partition = answer.responses[0].partitions[0]
    return partition.error_code, partition.log_start_offset, bytes(partition.records or b"")


def now_ms() -> int:
    return int(time.time() * 1000)


@ON_DISK
def test_records_from_1970_go_at_the_next_run_and_new_ones_stay(connection):
    create(connection, "old", [("retention.ms", "1000")])
    produce(connection, "old", 1000, count=5)  # the differential walk's timestamps
    assert offset(connection, "old", LATEST) == 5
    wait_until(lambda: offset(connection, "old", EARLIEST) == 5, timeout_s=10,
               what="the retention task moving the log start")
    assert offset(connection, "old", LATEST) == 5  # the hw: nothing at or above it went
    assert fetch(connection, "old", 4)[0] == ErrorCode.offset_out_of_range
    produce(connection, "old", now_ms())
    time.sleep(5 * TASK_MS / 1000)  # several runs
    assert offset(connection, "old", EARLIEST) == 5
    error, log_start, records = fetch(connection, "old", 5)
    assert (error, log_start) == (ErrorCode.none, 5) and records


@ON_DISK
def test_retention_ms_altered_acts_at_the_next_run(connection):
    create(connection, "later")  # the broker's log.retention.ms: seven days
    produce(connection, "later", now_ms() - 60_000, count=3)  # a minute old
    time.sleep(3 * TASK_MS / 1000)
    assert offset(connection, "later", EARLIEST) == 0
    answer = connection.send(44, 0, {"resources": [{
        "resource_type": 2, "resource_name": "later",
        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "30000"}]}],
        "validate_only": False}).responses[0]
    assert answer.error_code == ErrorCode.none
    wait_until(lambda: offset(connection, "later", EARLIEST) == 3, timeout_s=10,
               what="the altered retention.ms at the next run")


@ON_DISK
def test_retention_bytes_deletes_a_segment_only_if_the_log_stays_at_or_over_it(connection):
    """Kafka's deleteRetentionSizeBreachedSegments: a segment goes when the log without it still
    holds retention.bytes; at 0 the whole log goes (rolled first, as deleteSegments does)."""
    create(connection, "one", [("retention.bytes", "1")])
    create(connection, "zero", [("retention.bytes", "0")])
    for name in ("one", "zero"):
        produce(connection, name, now_ms(), count=4)
    wait_until(lambda: offset(connection, "zero", EARLIEST) == 4, timeout_s=10,
               what="retention.bytes=0 emptying the log")
    assert offset(connection, "zero", LATEST) == 4
    assert offset(connection, "one", EARLIEST) == 0  # one segment: without it, 0 bytes < 1


def test_the_broker_process_takes_kafkas_retention_settings(tmp_path):
    """`kafkaref broker --config`: log.retention.ms, log.initial.task.delay.ms and
    log.retention.check.interval.ms as Kafka's server.properties names them; bad values exit 2
    with one line."""
    import os
    import subprocess
    import sys

    from kafkaref.impl.server.local_cluster import signal_and_wait

    exe = os.path.join(os.path.dirname(sys.executable), "kafkaref")
    config = tmp_path / "server.properties"
    config.write_text(f"port=0\nlog.dirs={tmp_path / 'd'}\nlog.retention.ms=1000\n"
                      "log.initial.task.delay.ms=0\nlog.retention.check.interval.ms=200\n")
    proc = subprocess.Popen([exe, "broker", "--config", str(config)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(proc.stdout.readline().split(":")[-1])
        with KafkaConnection("127.0.0.1", port) as conn:
            create(conn, "t")  # no override: the broker's log.retention.ms, 1 s
            produce(conn, "t", 1000, count=3)
            wait_until(lambda: offset(conn, "t", EARLIEST) == 3, timeout_s=10,
                       what="the broker's log.retention.ms at work")
    finally:
        signal_and_wait(proc)
    for line in ("log.retention.ms=-2", "log.retention.check.interval.ms=0",
                 "log.retention.hours=x"):
        config.write_text(f"port=0\nlog.dirs={tmp_path / 'd'}\n{line}\n")
        result = subprocess.run([exe, "broker", "--config", str(config)], capture_output=True,
                                text=True, timeout=30)
        assert result.returncode == 2 and "Traceback" not in result.stderr, (line, result.stderr)
