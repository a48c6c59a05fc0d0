"""Retention beside Apache Kafka 4.3.1: one Kafka node and one kafkaref broker on disk, both
running their retention task a second after start and every second after
(log.initial.task.delay.ms, log.retention.check.interval.ms), get the same topics and records;
their log start and end offsets (ListOffsets EARLIEST, LATEST) must end the same. The topics:
retention.ms 1000 on records from 1970 (the differential walk's timestamps), old records then
new ones in one segment and across 1 MiB segments, new then old, records ten minutes ahead,
retention.bytes 0, 1 and 1,200,000, retention.ms -1, a compacted topic, and the broker's seven
days. (Found this way: Kafka rolls a segment when a batch is stamped more than segment.ms after
its first one; kafkaref rolled by the segment's age only.)"""

import time

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.servers import BrokerSetup, PeerSetup
from kafkaref.properties.waiting import wait_until

TASK_MS = 1000
pytestmark = [
    pytest.mark.parametrize("peer_setup", [PeerSetup("apache-kafka", 1, overrides=(
        ("log.initial.task.delay.ms", str(TASK_MS)),
        ("log.retention.check.interval.ms", str(TASK_MS))))], scope="module"),
    pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk", broker=BrokerConfig(
        log_initial_task_delay_ms=TASK_MS, log_retention_check_interval_ms=TASK_MS))]),
]
MIB = 1 << 20
SMALL, BIG = b"v" * 50, b"x" * 100_000
NOW, AHEAD = "now", "ahead"  # stamped when produced; ten minutes ahead (after.max.ms is 1 h)
# topic: (configs, [(batches, timestamp, value)])
TOPICS = {
    "old-1970": ({"retention.ms": "1000"}, [(5, 1000, SMALL)]),
    "old-then-new-one-segment": ({"retention.ms": "60000"}, [(3, 1000, SMALL), (2, NOW, SMALL)]),
    "old-segments-then-new": ({"retention.ms": "60000", "segment.bytes": str(MIB)},
                              [(12, 1000, BIG), (5, NOW, BIG)]),
    "new-then-old-segments": ({"retention.ms": "60000", "segment.bytes": str(MIB)},
                              [(3, NOW, BIG), (12, 1000, BIG)]),
    "ahead": ({"retention.ms": "1000"}, [(3, AHEAD, SMALL)]),
    "bytes-0": ({"retention.bytes": "0"}, [(4, NOW, SMALL)]),
    "bytes-1": ({"retention.bytes": "1"}, [(4, NOW, SMALL)]),
    "bytes-1200000": ({"retention.bytes": "1200000", "segment.bytes": str(MIB)},
                      [(25, NOW, BIG)]),
    "ms-minus-one": ({"retention.ms": "-1"}, [(5, 1000, SMALL)]),
    "compacted": ({"cleanup.policy": "compact", "retention.ms": "1000"}, [(5, 1000, SMALL)]),
    "broker-seven-days": ({}, [(5, 1000, SMALL)]),
}


def stamp(timestamp) -> int:
    now = int(time.time() * 1000)
    return now if timestamp == NOW else now + 600_000 if timestamp == AHEAD else timestamp


def created(connection) -> None:
    body = connection.send(19, 4, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}
        for name, (configs, _) in TOPICS.items()], "timeout": 10_000, "validate_only": False})
    assert {t.error_code for t in body.topics} == {ErrorCode.none}


def produced(connection, name, timestamp, value) -> bool:
    answer = connection.send(0, 8, {"transactional_id": None, "acks": 1, "timeout": 10_000,
                                    "topic_data": [{"name": name, "partition_data": [{
                                        "index": 0, "records": build_batch(
                                            [(b"k", value, (), stamp(timestamp))])}]}]}
                             ).responses[0].partition_responses[0]
    # a topic Kafka just created may not be led yet: retriable, sent again
    assert answer.error_code in (ErrorCode.none, ErrorCode.not_leader_or_follower,
                                 ErrorCode.unknown_topic_or_partition), answer
    return answer.error_code == ErrorCode.none


def fill(connection) -> None:
    created(connection)
    for name, (_, batches) in TOPICS.items():
        for count, timestamp, value in batches:
            for _ in range(count):
                wait_until(lambda n=name, t=timestamp, v=value: produced(connection, n, t, v),
                           timeout_s=30, what=f"a produce to {name}", interval_s=0.1)


def offsets(connection) -> dict[str, tuple[int, int]]:
    found = {}
    for name in TOPICS:
        pair = []
        for which in (-2, -1):  # EARLIEST, LATEST
            answer = connection.send(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [{
                "name": name, "partitions": [{"partition_index": 0, "timestamp": which,
                                              "current_leader_epoch": -1}]}]})
            pair.append(answer.topics[0].partitions[0].offset)
        found[name] = tuple(pair)
    return found


EXPECTED_STARTS = {"old-1970": 5, "old-then-new-one-segment": 3, "old-segments-then-new": 12,
                   "bytes-0": 4, "bytes-1200000": 10}


def test_kafka_and_kafkaref_keep_the_same_records(peer, broker):
    host, port = peer.bootstrap.split(",")[0].rsplit(":", 1)
    with KafkaConnection(host, int(port), timeout_s=30) as kafka, \
            KafkaConnection("127.0.0.1", broker.port, timeout_s=30) as ours:
        fill(kafka)
        fill(ours)
        seen = {}

        def kafka_deleted() -> bool:
            seen["kafka"] = offsets(kafka)
            return all(seen["kafka"][n][0] == start for n, start in EXPECTED_STARTS.items())

        def same() -> bool:
            seen["kafka"], seen["kafkaref"] = offsets(kafka), offsets(ours)
            return seen["kafka"] == seen["kafkaref"]
        # Kafka's task has run (a log start only moves up), then both must agree
        wait_until(kafka_deleted, timeout_s=30, what="Kafka's retention", interval_s=0.2)
        try:
            wait_until(same, timeout_s=30, what="the same log starts", interval_s=0.2)
        except AssertionError:
            differing = {n: (seen["kafka"][n], seen["kafkaref"][n]) for n in TOPICS
                         if seen["kafka"][n] != seen["kafkaref"][n]}
            raise AssertionError(f"(kafka, kafkaref) differ: {differing}") from None
