"""Apache Kafka's Java client against a 3-broker kafkaref cluster, through Kafka's own tools from
the pinned jars (chaos/java_clients.py): VerifiableProducer and VerifiableConsumer, the clients
of Kafka's system tests, with a partition leader SIGKILLed mid-run -- every acknowledged record
consumed, at its offset, in order per partition, once; and TopicCommand, ConsumerGroupCommand
(describe, reset offsets), ProducerPerformance and ConsumerPerformance working against it.

Each tool is a JVM start (about a second here); the module starts 13 of them.
KAFKAREF_JAVA_CLIENT_PEER=NAME:NODES runs the same tests against another peer (chaos/peers/), as
docs/compatibility.md did for Apache Kafka and kfake.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import Counter

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkaref.chaos import java_clients as java
from kafkaref.impl.client.cluster_view import ClusterView
from kafkaref.properties.servers import PeerSetup
from kafkaref.properties.waiting import wait_until

_NAME, _, _NODES = os.environ.get("KAFKAREF_JAVA_CLIENT_PEER", "kafkaref:3").partition(":")
pytestmark = pytest.mark.parametrize("peer_setup", [PeerSetup(_NAME, int(_NODES or 1))],
                                     scope="module")

RECORDS, KILL_AFTER, PARTITIONS = 3000, 1000, 3
TOOL_TIMEOUT_S = 120.0
PRODUCER = {"enable.idempotence": "true", "acks": "all", "retries": "2147483647", "delivery.timeout.ms": "90000",
            "request.timeout.ms": "5000", "linger.ms": "5", "retry.backoff.ms": "100"}
CONSUMER = {"session.timeout.ms": "10000", "fetch.max.wait.ms": "200"}


def create_topic(peer, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": peer.bootstrap})
    replicas = min(3, len(ClusterView(peer.bootstrap).refresh([]).brokers))
    future = admin.create_topics([NewTopic(
        topic, partitions, replicas, config={"min.insync.replicas": str(min(2, replicas))})])
    future[topic].result(30)


def leader_of(peer, topic: str, partition: int) -> int:
    view = ClusterView(peer.bootstrap)
    try:
        view.refresh([topic])
        return view.leaders[(topic, partition)][0]
    finally:
        view.close()


def run_producer_killing_a_leader(peer, topic: str, config: str, tmp_path) -> tuple[list, int]:
    """VerifiableProducer writing RECORDS values; after KILL_AFTER acks the leader of partition
    0 is SIGKILLed. Its events, and the broker killed."""
    command = java.verifiable_producer(peer.bootstrap, topic, config, max_messages=RECORDS,
                                       throughput=1000, value_prefix=7, repeating_keys=60)
    with open(tmp_path / "producer.err", "w") as err:
        producer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True,
                                    stdin=subprocess.DEVNULL)
    watchdog = threading.Timer(TOOL_TIMEOUT_S, producer.kill)  # a hung producer ends the read
    watchdog.start()
    lines, acks, killed = [], 0, None
    try:
        for line in producer.stdout:
            lines.append(line)
            acks += '"producer_send_success"' in line
            if killed is None and acks >= KILL_AFTER:
                killed = leader_of(peer, topic, 0)
                peer.kill(killed)
        producer.wait(10)
    finally:
        watchdog.cancel()
        if producer.poll() is None:
            producer.kill()
    (tmp_path / "producer.out").write_text("".join(lines))
    return java.events(lines), killed


def test_verifiable_producer_and_consumer_survive_a_leader_sigkill(peer, tmp_path):
    if len(peer.nodes) < 3 or "kill" not in peer.supports:
        pytest.skip(f"{peer.describe()}: a leader kill needs 3 nodes that can be killed apart")
    topic = "java-verifiable"
    create_topic(peer, topic, PARTITIONS)
    config = java.properties_file(PRODUCER, str(tmp_path))
    produced, killed = run_producer_killing_a_leader(peer, topic, config, tmp_path)
    acked = [e for e in produced if e["name"] == "producer_send_success"]
    errors = [e for e in produced if e["name"] == "producer_send_error"]
    assert killed is not None, f"only {len(acked)} acks before the producer ended"
    assert not errors, errors[:3]
    assert len(acked) == RECORDS, f"{len(acked)} of {RECORDS} acknowledged"
    peer.restart(killed)

    consumer = subprocess.run(
        java.verifiable_consumer(peer.bootstrap, topic, "java-verifiable",
                                 java.properties_file(CONSUMER, str(tmp_path)),
                                 max_messages=len(acked)),
        capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    (tmp_path / "consumer.out").write_text(consumer.stdout)
    consumed = [e for e in java.events(consumer.stdout.splitlines())
                if e["name"] == "record_data"]
    check_round_trip(acked, consumed)
    print(f"java verifiable: {len(acked)} acked across a SIGKILL of broker {killed}, "
          f"{len(consumed)} consumed")


def check_round_trip(acked: list[dict], consumed: list[dict]) -> None:
    """Every ack consumed at its partition and offset with its value; per partition, offsets
    strictly increasing; no value twice (an idempotent producer)."""
    at = {(c["partition"], c["offset"]): c["value"] for c in consumed}
    missing = [a for a in acked if at.get((a["partition"], a["offset"])) != a["value"]]
    assert not missing, f"{len(missing)} acknowledged records not consumed, e.g. {missing[:3]}"
    for partition in range(PARTITIONS):
        offsets = [c["offset"] for c in consumed if c["partition"] == partition]
        assert offsets == sorted(set(offsets)), f"partition {partition} consumed out of order"
    twice = [v for v, n in Counter(c["value"] for c in consumed).items() if n > 1]
    assert not twice, f"values consumed twice: {twice[:5]}"


def tool(main_class: str, *args: str) -> str:
    """Run a tool; its stdout (a non-zero exit fails the test with the tool's stderr)."""
    done = java.run_tool(main_class, *args, timeout_s=TOOL_TIMEOUT_S)
    assert done.returncode == 0, f"{main_class} {args} exited {done.returncode}: " \
                                 f"{done.stderr[-1500:]}"
    return done.stdout


def described(peer, topic: str) -> dict[str, str]:
    """TopicCommand --describe's first line as fields (Topic, PartitionCount, ...)."""
    out = tool(java.TOPIC_COMMAND, "--bootstrap-server", peer.bootstrap, "--describe",
               "--topic", topic)
    first = out.splitlines()[0]
    return dict(field.split(": ", 1) for field in first.split("\t") if ": " in field)


def test_topic_command_creates_describes_alters_and_deletes(peer):
    topic, b = "java-topic-command", ["--bootstrap-server", peer.bootstrap]
    replicas = str(min(3, len(peer.nodes)))
    tool(java.TOPIC_COMMAND, *b, "--create", "--topic", topic, "--partitions", "2",
         "--replication-factor", replicas, "--config", "retention.ms=3600000")
    fields = described(peer, topic)
    assert fields["PartitionCount"] == "2" and fields["ReplicationFactor"] == replicas, fields
    assert "retention.ms=3600000" in fields["Configs"], fields
    tool(java.TOPIC_COMMAND, *b, "--alter", "--topic", topic, "--partitions", "4")
    assert described(peer, topic)["PartitionCount"] == "4"
    tool(java.TOPIC_COMMAND, *b, "--delete", "--topic", topic)
    wait_until(lambda: topic not in tool(java.TOPIC_COMMAND, *b, "--list").split(),
               timeout_s=30, what="the deleted topic gone from --list")


def group_offsets(peer, group: str) -> dict[int, tuple[int, int]]:
    """ConsumerGroupCommand --describe: partition -> (current offset, log end offset)."""
    out = tool(java.GROUP_COMMAND, "--bootstrap-server", peer.bootstrap, "--describe",
               "--group", group)
    rows = [line.split() for line in out.splitlines() if line.startswith(group + " ")]
    return {int(r[2]): (int(r[3]), int(r[4])) for r in rows}


def test_consumer_group_command_describes_and_resets_offsets(peer):
    topic, group = "java-group-command", "java-group"
    create_topic(peer, topic, 2)
    producer = ck.Producer({"bootstrap.servers": peer.bootstrap, "acks": "all"})
    for i in range(40):
        producer.produce(topic, value=b"%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": peer.bootstrap, "group.id": group,
                            "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[ck.TopicPartition(topic, p, 20) for p in (0, 1)],
                        asynchronous=False)
    finally:
        consumer.close()
    assert group_offsets(peer, group) == {0: (20, 20), 1: (20, 20)}
    tool(java.GROUP_COMMAND, "--bootstrap-server", peer.bootstrap, "--reset-offsets",
         "--group", group, "--topic", topic, "--to-offset", "5", "--execute")
    assert group_offsets(peer, group) == {0: (5, 20), 1: (5, 20)}


def test_producer_and_consumer_performance(peer):
    topic, count = "java-performance", 20_000
    create_topic(peer, topic, 1)
    started = time.monotonic()
    out = tool(java.PRODUCER_PERFORMANCE, "--topic", topic, "--num-records", str(count),
               "--record-size", "100", "--throughput", "-1", "--command-property",
               f"bootstrap.servers={peer.bootstrap}", "acks=all")
    summary = out.strip().splitlines()[-1]
    assert summary.startswith(f"{count} records sent"), out[-500:]
    out = tool(java.CONSUMER_PERFORMANCE, "--bootstrap-server", peer.bootstrap, "--topic", topic,
               "--num-records", str(count), "--timeout", "30000")
    header, row = out.strip().splitlines()[-2:]
    consumed = dict(zip([h.strip() for h in header.split(",")],
                        [v.strip() for v in row.split(",")], strict=True))
    assert int(consumed["data.consumed.in.nMsg"]) == count, out[-500:]
    print(f"java perf: {summary}; consumed {consumed['data.consumed.in.nMsg']} at "
          f"{consumed['nMsg.sec']} msg/s ({time.monotonic() - started:.1f} s both)")
