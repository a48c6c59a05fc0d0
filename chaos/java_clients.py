"""Apache Kafka's Java client, as Kafka's own tools drive it, from the pinned jars of the
apache-kafka peer (chaos/peers/apache-kafka.pom.xml; kafka-tools and kafka-clients 4.3.1):

- VerifiableProducer and VerifiableConsumer, the clients of Kafka's system tests: they print
  every acknowledgement and every consumed record as one JSON object a line, which is what a
  test or the chaos workload reads (`events`);
- the command-line tools behind bin/kafka-topics.sh, kafka-consumer-groups.sh,
  kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh (`run_tool`).

Values: VerifiableProducer writes the text "P.N" (its --value-prefix P, then its count N);
`value_of` maps it to the int64 P << 32 | N, the encoding of the chaos histories.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable

TOOLS = "org.apache.kafka.tools."
TOPIC_COMMAND = TOOLS + "TopicCommand"
GROUP_COMMAND = TOOLS + "consumer.group.ConsumerGroupCommand"
PRODUCER_PERFORMANCE = TOOLS + "ProducerPerformance"
CONSUMER_PERFORMANCE = TOOLS + "ConsumerPerformance"
VERIFIABLE_PRODUCER = TOOLS + "VerifiableProducer"
VERIFIABLE_CONSUMER = TOOLS + "VerifiableConsumer"
# The tools are short-lived: the C1 compiler alone starts them sooner, and a small heap is
# enough (2 cores shared with brokers).
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)
HEAP_MB = 192


def java_tool(main_class: str, *args: str) -> list[str]:
    """The command line running one of Kafka's tools from the pinned jars (fetched once)."""
    from kafkaref.chaos.peers.apache_kafka import java_command

    return java_command(main_class, *args, heap_mb=HEAP_MB, jvm_options=JVM_OPTIONS)


def run_tool(main_class: str, *args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess:
    """Run a tool to its end; its output as text (a hung tool is killed at timeout_s and
    subprocess.TimeoutExpired raised)."""
    return subprocess.run(java_tool(main_class, *args), capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL, check=False)


def properties_file(settings: dict[str, str], directory: str | None = None) -> str:
    """A Java properties file holding settings (the tools' --command-config)."""
    handle, path = tempfile.mkstemp(prefix="kafka-client-", suffix=".properties", dir=directory)
    with os.fdopen(handle, "w") as f:
        f.writelines(f"{key}={value}\n" for key, value in settings.items())
    return path


def verifiable_producer(bootstrap: str, topic: str, config_path: str, *, max_messages: int,
                        throughput: int = -1, value_prefix: int = 0,
                        repeating_keys: int | None = None) -> list[str]:
    """VerifiableProducer's command line: max_messages values "value_prefix.N", acks=all."""
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--acks", "-1",
            "--max-messages", str(max_messages), "--throughput", str(throughput),
            "--value-prefix", str(value_prefix), "--command-config", config_path]
    if repeating_keys is not None:  # keys 0..K-1 spread the records over the partitions
        args += ["--repeating-keys", str(repeating_keys)]
    return java_tool(VERIFIABLE_PRODUCER, *args)


def verifiable_consumer(bootstrap: str, topic: str, group: str, config_path: str, *,
                        max_messages: int = -1) -> list[str]:
    """VerifiableConsumer's command line: subscribes in group (classic protocol), from the
    earliest offset, commits after each poll, prints every record (--verbose)."""
    return java_tool(VERIFIABLE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic,
                     "--group-id", group, "--max-messages", str(max_messages), "--verbose",
                     "--reset-policy", "earliest", "--command-config", config_path)


def event(line: str) -> dict | None:
    """One line of a Verifiable tool's output as its JSON event; None for anything else (a
    log line)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        found = json.loads(line)
    except ValueError:
        return None
    return found if isinstance(found, dict) and "name" in found else None


def events(lines: Iterable[str]) -> list[dict]:
    return [e for e in map(event, lines) if e is not None]


def value_of(text: str | None) -> int | None:
    """VerifiableProducer's "P.N" as P << 32 | N; None for any other text."""
    prefix, dot, count = (text or "").partition(".")
    if not dot or not prefix.isdigit() or not count.isdigit():
        return None
    return int(prefix) << 32 | int(count)
