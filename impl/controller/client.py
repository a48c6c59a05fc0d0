"""The broker side of the control channel: register, heartbeat, forward ISR changes and
topic creations; adopt every newer metadata image (under the server's core lock)."""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.channel import recv_message, send_message
from kafkaref.impl.controller.config import (
    BATCH_MAX_MESSAGES,
    HEARTBEAT_INTERVAL_MS,
    PROPAGATION_POLL_S,
    PROPAGATION_WAIT_S,
)
from kafkaref.impl.core.metadata import metadata_from_dict

log = logging.getLogger(__name__)

# what a client may rely on at once after the answer: new topics and new partitions, and
# deleted topics (a topic created again right after its deletion must not meet a broker that
# still hosts the old one: librdkafka's 0107; Kafka's DeleteTopics answers once the topic is
# gone from the brokers' metadata, DelayedDeleteTopics)
_AWAITED = frozenset({"create_topic", "create_partitions", "delete_topic"})


class ControllerClient(threading.Thread):
    def __init__(self, server, controller_address: str,
                 heartbeat_ms: int = HEARTBEAT_INTERVAL_MS):
        super().__init__(name="kafkaref-controller-client", daemon=True)
        self.server = server  # KafkaServer: .broker, .lock, .port, .config.host, .stopping
        host, _, port = controller_address.rpartition(":")
        self.controller = (host, int(port))
        self.heartbeat_ms = heartbeat_ms
        self.outbox: queue.SimpleQueue = queue.SimpleQueue()
        self.metadata_epoch = -1
        self.registered = threading.Event()
        broker = server.broker
        broker.create_topic = self.create_topic
        broker.delete_topic = self.delete_topic
        broker.create_partitions = self.create_partitions
        broker.alter_topic_configs = self.alter_topic_configs
        broker.replica_manager.alter_isr = self.alter_isr
        for partition in broker.replica_manager.partitions.values():
            partition.alter_isr = self.alter_isr

    # -- called under the core lock by the broker -----------------------------------------------
    def create_topic(self, name, partitions, replication_factor, configs,
                     done: Callable[[ErrorCode, str | None], None],
                     assignment: dict[int, list[int]] | None = None) -> None:
        message = {"type": "create_topic", "broker_id": self.server.broker.broker_id,
                   "name": name, "partitions": partitions,
                   "replication_factor": replication_factor, "configs": configs}
        if assignment:
            message["assignment"] = [assignment[i] for i in range(len(assignment))]
        self.outbox.put((message, done))

    def delete_topic(self, name: str, done: Callable[[ErrorCode, str | None], None]) -> None:
        self.outbox.put(({"type": "delete_topic", "name": name, **self._sender()}, done))

    def create_partitions(self, name: str, count: int, assignment: list[list[int]] | None,
                          done: Callable[[ErrorCode, str | None], None]) -> None:
        self.outbox.put(({"type": "create_partitions", "name": name, "count": count,
                          "assignment": assignment, **self._sender()}, done))

    def alter_topic_configs(self, name: str, configs: dict[str, str],
                            done: Callable[[ErrorCode, str | None], None]) -> None:
        self.outbox.put(({"type": "alter_configs", "name": name, "configs": configs,
                          **self._sender()}, done))

    def _sender(self) -> dict:
        return {"broker_id": self.server.broker.broker_id}

    def alter_isr(self, partition, proposed_isr) -> None:
        def done(error, message):
            # runs after the answer's metadata image (if any) was applied
            self.server.broker.replica_manager.isr_answered(partition.key, proposed_isr)

        self.outbox.put(({"type": "alter_isr", "broker_id": partition.broker_id,
                          "topic": partition.topic, "partition": partition.index,
                          "leader_epoch": partition.leader_epoch,
                          "isr": sorted(proposed_isr)}, done))

    # -- the thread -------------------------------------------------------------------------------
    def run(self) -> None:
        stopping = self.server.stopping
        while not stopping.is_set():
            try:
                with socket.create_connection(self.controller, timeout=5) as sock:
                    self._session(sock, stopping)
            except (OSError, ValueError) as exc:
                log.info("controller channel: %s; reconnecting", exc)
                self.metadata_epoch = -1
                stopping.wait(0.2)

    def _session(self, sock, stopping) -> None:
        self._call(sock, {"type": "register", "broker_id": self.server.broker.broker_id,
                          "host": self.server.config.host, "port": self._advertised_port()})
        self.registered.set()
        created: list = []  # answered creations (and other requests) whose callbacks wait
        while not stopping.is_set():
            batch = self._next_batch()
            reregister = flush = False
            for (message, done), answer in zip(batch, self._send(sock, batch), strict=True):
                reregister = reregister or bool(answer.get("reregister"))
                if done is None:  # a heartbeat: announce what waits
                    flush = flush or message["type"] not in _AWAITED
                    continue
                error = ErrorCode(answer["error"]) if answer.get("error", 0) >= 0 else (
                    ErrorCode.unknown_server_error)
                creation = message["type"] in _AWAITED and error == ErrorCode.none
                created.append((done, error, answer.get("message"), creation))
                flush = flush or not creation
            if reregister:
                self._call(sock, {"type": "register", "broker_id": self.server.broker.broker_id,
                                  "host": self.server.config.host, "port": self._advertised_port()})
            if created and (flush or self.outbox.empty()):
                self._announce_created(sock, created)
                created = []

    def _next_batch(self) -> list:
        """What the broker queued for the controller (a heartbeat when nothing came within the
        heartbeat interval), up to BATCH_MAX_MESSAGES messages: all of a CreateTopics goes at once."""
        try:
            batch = [self.outbox.get(timeout=self.heartbeat_ms / 1000)]
        except queue.Empty:
            return [({"type": "heartbeat", "broker_id": self.server.broker.broker_id}, None)]
        while len(batch) < BATCH_MAX_MESSAGES:
            try:
                batch.append(self.outbox.get_nowait())
            except queue.Empty:
                break
        return batch

    def _send(self, sock, batch: list) -> list[dict]:
        """The controller's answers to the batch's messages, in order (its metadata image, if
        any, applied before they are looked at)."""
        if len(batch) == 1:
            return [self._call(sock, batch[0][0])]
        answer = self._call(sock, {"type": "batch", "messages": [m for m, _ in batch]})
        answers = answer.get("answers")
        if not isinstance(answers, list) or len(answers) != len(batch):
            raise ValueError(f"controller answered a batch of {len(batch)} with {answer!r:.200}")
        return answers

    def _announce_created(self, sock, created) -> None:
        """Answer creations and deletions once every other broker has applied them: one await_epoch for a
        run of them (CreateTopics of 100 topics waits once, not 100 times)."""
        if any(creation for *_, creation in created):
            epoch, deadline = self.metadata_epoch, time.monotonic() + PROPAGATION_WAIT_S
            while not self._call(sock, {"type": "await_epoch", "epoch": epoch,
                                        "broker_id": self.server.broker.broker_id}
                                 ).get("applied", True):
                if time.monotonic() > deadline or self.server.stopping.is_set():
                    log.warning("metadata epoch %d not applied by every broker in %.1f s",
                                epoch, PROPAGATION_WAIT_S)
                    break
                time.sleep(PROPAGATION_POLL_S)
        with self.server.lock:
            for done, error, text, _ in created:
                done(error, text)

    def _advertised_port(self) -> int:
        return self.server.config.advertised_port or self.server.port

    def _call(self, sock, message: dict) -> dict:
        message["metadata_epoch"] = self.metadata_epoch
        send_message(sock, message)
        answer = recv_message(sock)
        if answer is None:
            raise ConnectionError("controller closed the channel")
        if "metadata" in answer:
            metadata = metadata_from_dict(answer["metadata"])
            with self.server.lock:
                self.server.broker.apply_metadata(metadata)
            self.metadata_epoch = metadata.epoch
        return answer
