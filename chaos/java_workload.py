"""The chaos workload's Java clients: Apache Kafka's VerifiableProducer and VerifiableConsumer
(chaos/java_clients.py), each a JVM whose JSON lines become history ops (spec/history.py, the
format unchanged).

A VerifiableProducer JVM is one logical process P writing ROUND_S seconds' worth of values
"P.N" (the int64 P << 32 | N), keyed N % KEYS so that the partition of every value is known
before it is sent (the Java client's murmur2 partitioner). It pipelines, so its sends are
invoked together when the JVM starts (a sound lower bound on each send's invocation: the
realtime check compares a send's invocation with others' completions) and completed one by one
in the order it prints them: ok with the acknowledged offset, or info for an error (the Java
client retries internally and does not say whether a failed record was written) or for a value
never reported by the time the JVM ended (fail for the values it never handed to the client:
its last line says how many it sent, in order). Kafka's producer keeps each partition's order, which
nonmonotonic_send and send_reorder judge per process. Each round is a new JVM and process.

A VerifiableConsumer JVM is one process subscribed in the run's group: its records between two
"records_consumed" lines are one poll op; a rebalance ("partitions_assigned") is a subscribe op,
after which its positions may restart (POSITION_RESET_FS). A JVM that exits by itself crashed:
its open poll ends with what it printed, and a new process takes over.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading

from kafkaref.chaos import java_clients as java
from kafkaref.chaos.values import decode_value
from kafkaref.impl.client.partitioner import keyed_partition

# The workload's clients with --java-clients (WorkloadConfig fields): the Java consumer reads
# text values only, so every producer is a Java one.
JAVA_CLIENTS = {"producers": 0, "confluent_producers": 0, "java_producers": 2,
                "java_consumers": 1}
ROUND_S = 10.0  # seconds of sends per producer JVM
KEYS = 60  # --repeating-keys: keys "0".."59", spread over the partitions by murmur2
STOP_GRACE_S = 15.0  # a JVM told to stop (SIGTERM) runs its shutdown hook: close and report


def producer_settings(config) -> dict[str, str]:
    """The Java producer's settings for a workload configuration."""
    return {"acks": "-1" if config.acks == "all" else config.acks,
            "enable.idempotence": str(config.idempotence).lower(),
            "retries": "2147483647" if config.idempotence else "0",
            "request.timeout.ms": str(config.request_timeout_ms),
            "delivery.timeout.ms": str(3 * config.request_timeout_ms + 1000),
            "max.block.ms": str(config.request_timeout_ms), "linger.ms": "0"}


def consumer_settings(config) -> dict[str, str]:
    return {"session.timeout.ms": "6000", "fetch.max.wait.ms": str(config.poll_wait_ms)}


class JavaRoles:
    """The two roles as bodies for the workload's threads (Workload._guard runs them)."""

    def __init__(self, workload):
        self.workload = workload
        self.config = workload.config
        self.topic = self.config.topic

    # -- the roles ------------------------------------------------------------------------
    def producer(self, rng: random.Random) -> None:
        self._each_process(producer_settings(self.config), self.produce_round)

    def consumer(self, rng: random.Random) -> None:
        self._each_process(consumer_settings(self.config), self.consume)

    def _each_process(self, settings: dict[str, str], run) -> None:
        """run(process, settings file) for a new process each time, until the workload stops;
        the client settings file is removed at the end."""
        first = [True]
        path = java.properties_file(settings)
        try:
            while not self.workload.stopping():
                run(self.workload.new_process(first), path)
        finally:
            os.remove(path)

    # -- the producer ---------------------------------------------------------------------
    def produce_round(self, process: int, settings: str) -> None:
        count = max(1, int(self.config.rate * ROUND_S))
        command = java.verifiable_producer(
            self.workload.bootstrap, self.topic, settings, max_messages=count,
            throughput=max(1, int(self.config.rate)), value_prefix=process, repeating_keys=KEYS)
        pending = {n: self._invoke_send(process, n) for n in range(count)}
        sent = count
        for found in self._events(command):
            if found["name"] == "tool_data":  # its last line: how many it handed to send()
                sent = int(found.get("sent", count))
            n = _count_of(found.get("value"))
            if n not in pending:
                continue
            if found["name"] == "producer_send_success":
                self._complete_send(pending.pop(n), process, n, "ok", found["partition"],
                                    found["offset"])
            elif found["name"] == "producer_send_error":
                self._complete_send(pending.pop(n), process, n, "info", self._partition(n),
                                    None, error=str(found.get("exception"))[:200])
        for n, invocation in sorted(pending.items()):
            if n >= sent:  # it sends in order: stopped before this one, which never left
                self._complete_send(invocation, process, n, "fail", self._partition(n), None,
                                    error="not sent: the producer was stopped first")
            else:  # handed to the client, never reported: outcome unknown
                self._complete_send(invocation, process, n, "info", self._partition(n), None,
                                    error="no acknowledgement before the producer ended")

    def _partition(self, n: int) -> int:
        return keyed_partition(str(n % KEYS).encode(), self.config.partitions)

    def _invoke_send(self, process: int, n: int):
        return self.workload.recorder.invoke(process, "send", {
            "partition": self._partition(n), "value": process << 32 | n, "driver": "java"})

    def _complete_send(self, invocation, process: int, n: int, type_: str, partition: int,
                       offset: int | None, error: str | None = None) -> None:
        self.workload.recorder.complete(
            invocation, type_, error=error,
            records=[("send", self.topic, partition, offset, process << 32 | n)])

    # -- the consumer ---------------------------------------------------------------------
    def consume(self, process: int, settings: str) -> None:
        command = java.verifiable_consumer(self.workload.bootstrap, self.topic,
                                           f"chaos-java-{self.workload.seed}", settings)
        PollRecorder(self.workload.recorder, process, self.topic).follow(self._events(command))

    # -- the JVMs -------------------------------------------------------------------------
    def _events(self, command: list[str]):
        """The JVM's JSON events as it prints them; it is told to stop (SIGTERM, then SIGKILL)
        when the workload stops, and its last lines are still read."""
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   stdin=subprocess.DEVNULL, text=True)
        stopper = threading.Thread(target=self._stop_when_asked, args=(process,), daemon=True)
        stopper.start()
        try:
            for line in process.stdout:
                found = java.event(line)
                if found is not None:
                    yield found
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()

    def _stop_when_asked(self, process: subprocess.Popen) -> None:
        while process.poll() is None:
            if self.workload.stopping(0.2):
                process.terminate()
                try:
                    process.wait(STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                return


def _bytes(text: str | None) -> bytes | None:
    """A value as the consumer got it (StringDeserializer: UTF-8)."""
    return None if text is None else text.encode()


def _count_of(text: str | None) -> int | None:
    """N of a value "P.N"."""
    value = java.value_of(text)
    return None if value is None else value & 0xFFFFFFFF


class PollRecorder:
    """A VerifiableConsumer's events as one process's ops: subscribe, then polls."""

    def __init__(self, recorder, process: int, topic: str):
        self.recorder, self.process, self.topic = recorder, process, topic
        self.records: list = []
        self.poll = None

    def follow(self, events) -> None:
        self._op("subscribe", {"topic": self.topic})
        self.poll = self.recorder.invoke(self.process, "poll")
        for found in events:
            name = found["name"]
            if name == "record_data":
                self.records.append(("poll", found["topic"], found["partition"],
                                     found["offset"], decode_value(_bytes(found["value"]))))
            elif name == "records_consumed":
                self._next_poll()
            elif name == "partitions_assigned":  # a rebalance: positions may restart
                self._next_poll({"partitions": [p["partition"] for p in found["partitions"]]})
        # what the JVM printed it had been given, whether it was stopped or crashed
        self.recorder.complete(self.poll, "ok", records=self.records)

    def _next_poll(self, assigned: dict | None = None) -> None:
        """Complete the open poll and invoke the next; a subscribe op between them when the
        group assigned partitions."""
        self.recorder.complete(self.poll, "ok", records=self.records)
        self.records = []
        if assigned is not None:
            self._op("subscribe", assigned)
        self.poll = self.recorder.invoke(self.process, "poll")

    def _op(self, f: str, value) -> None:
        self.recorder.complete(self.recorder.invoke(self.process, f, value), "ok")
