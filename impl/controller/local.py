"""In-process control plane for a single broker (and for tests with several in-process brokers)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller import topic_changes
from kafkaref.impl.controller.state import named_controller
from kafkaref.impl.core.metadata import BrokerEndpoint, ClusterMetadata, new_topic_id
from kafkaref.impl.core.topic_rules import check_configs

Done = Callable[[ErrorCode, str | None], None]


class LocalController:
    """Owns the metadata image; every registered broker gets each new image at once."""

    def __init__(self, cluster_id: str = "kafkaref", controller_id: int | None = None):
        """controller_id: the broker Metadata answers name as the controller; left out, the one
        the cluster's controller would name (state.named_controller: a registered broker)."""
        self.controller_id = controller_id
        self.metadata = ClusterMetadata(cluster_id=cluster_id, controller_id=self._controller(()))
        self.brokers: dict[int, object] = {}  # broker id -> core Broker

    def _controller(self, brokers) -> int:
        return named_controller(brokers) if self.controller_id is None else self.controller_id

    def register(self, broker, host: str, port: int) -> None:
        self.brokers[broker.broker_id] = broker
        endpoints = tuple(b for b in self.metadata.brokers if b.broker_id != broker.broker_id)
        endpoints = (*endpoints, BrokerEndpoint(broker.broker_id, host, port))
        self.metadata = attrs.evolve(self.metadata, brokers=endpoints, epoch=self.metadata.epoch + 1,
                                     controller_id=self._controller(endpoints))
        broker.create_topic = self.create_topic
        broker.delete_topic = self.delete_topic
        broker.create_partitions = self.create_partitions
        broker.alter_topic_configs = self.alter_topic_configs
        self._push()

    def _push(self) -> None:
        for broker in self.brokers.values():
            broker.apply_metadata(self.metadata)

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict,
                     done: Callable[[ErrorCode, str | None], None],
                     assignment: dict[int, list[int]] | None = None,
                     topic_id: str | None = None) -> None:
        """topic_id: a reopened topic's (single.py), else a new one."""
        topic_id = topic_id or new_topic_id()
        ids = sorted(b.broker_id for b in self.metadata.brokers)
        if self.metadata.topic(name) is not None:
            done(ErrorCode.topic_already_exists, "topic exists")
            return
        error, why = check_configs(configs)
        if error != ErrorCode.none:
            done(error, why)
            return
        if assignment:  # validated by the broker (topic_rules.check_assignment)
            metas = tuple(topic_changes.new_partition(tuple(assignment[i]), True)
                          for i in range(len(assignment)))
            self.metadata = self.metadata.with_topic(
                topic_changes.new_topic(name, metas, configs, topic_id))
            self._push()
            done(ErrorCode.none, None)
            return
        if partitions < 1:  # first, as ControllerState and Kafka's ReplicationControlManager
            done(ErrorCode.invalid_partitions, "partitions must be >= 1")
            return
        if replication_factor > len(ids) or replication_factor < 1:
            done(ErrorCode.invalid_replication_factor,
                 f"replication factor {replication_factor} with {len(ids)} brokers")
            return
        metas = []
        for index in range(partitions):
            replicas = tuple(ids[(index + k) % len(ids)] for k in range(replication_factor))
            metas.append(topic_changes.new_partition(replicas, True))
        topic = topic_changes.new_topic(name, tuple(metas), configs, topic_id)
        self.metadata = self.metadata.with_topic(topic)
        self._push()
        done(ErrorCode.none, None)

    def delete_topic(self, name: str, done: Done) -> None:
        self._apply(topic_changes.deleted(self.metadata, name), done)

    def create_partitions(self, name: str, count: int, assignment: list[list[int]] | None,
                          done: Done) -> None:
        alive = {b.broker_id for b in self.metadata.brokers}
        self._apply(topic_changes.grown(self.metadata, name, count, assignment, alive), done)

    def alter_topic_configs(self, name: str, configs: dict[str, str], done: Done) -> None:
        self._apply(topic_changes.reconfigured(self.metadata, name, configs), done)

    def _apply(self, change: topic_changes.Change, done: Done) -> None:
        error, message, metadata = change
        if metadata is not None:
            self.metadata = metadata
            self._push()
        done(error, message)
