"""In-process control plane for a single broker (and for tests with several in-process brokers)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.metadata import BrokerEndpoint, ClusterMetadata, PartitionMeta, TopicMeta
from kafkaref.impl.core.topic_rules import check_configs


class LocalController:
    """Owns the metadata image; every registered broker gets each new image at once."""

    def __init__(self, cluster_id: str = "kafkaref", controller_id: int = 0):
        self.metadata = ClusterMetadata(cluster_id=cluster_id, controller_id=controller_id)
        self.brokers: dict[int, object] = {}  # broker id -> core Broker

    def register(self, broker, host: str, port: int) -> None:
        self.brokers[broker.broker_id] = broker
        endpoints = tuple(b for b in self.metadata.brokers if b.broker_id != broker.broker_id)
        self.metadata = attrs.evolve(
            self.metadata, brokers=(*endpoints, BrokerEndpoint(broker.broker_id, host, port)),
            epoch=self.metadata.epoch + 1)
        broker.create_topic = self.create_topic
        self._push()

    def _push(self) -> None:
        for broker in self.brokers.values():
            broker.apply_metadata(self.metadata)

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict,
                     done: Callable[[ErrorCode, str | None], None],
                     assignment: dict[int, list[int]] | None = None) -> None:
        ids = sorted(b.broker_id for b in self.metadata.brokers)
        if self.metadata.topic(name) is not None:
            done(ErrorCode.topic_already_exists, "topic exists")
            return
        error, why = check_configs(configs)
        if error != ErrorCode.none:
            done(error, why)
            return
        if assignment:  # validated by the broker (topic_rules.check_assignment)
            metas = tuple(PartitionMeta(r[0], 0, tuple(r), tuple(r))
                          for r in (assignment[i] for i in range(len(assignment))))
            self.metadata = self.metadata.with_topic(
                TopicMeta(name, metas, tuple(sorted(configs.items()))))
            self._push()
            done(ErrorCode.none, None)
            return
        if replication_factor > len(ids) or replication_factor < 1:
            done(ErrorCode.invalid_replication_factor,
                 f"replication factor {replication_factor} with {len(ids)} brokers")
            return
        if partitions < 1:
            done(ErrorCode.invalid_partitions, "partitions must be >= 1")
            return
        metas = []
        for index in range(partitions):
            replicas = tuple(ids[(index + k) % len(ids)] for k in range(replication_factor))
            metas.append(PartitionMeta(replicas[0], 0, replicas, replicas))
        topic = TopicMeta(name, tuple(metas), tuple(sorted(configs.items())))
        self.metadata = self.metadata.with_topic(topic)
        self._push()
        done(ErrorCode.none, None)
