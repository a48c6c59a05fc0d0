"""Cluster metadata as frozen values: brokers, topics, and per partition leader / epoch / ISR.

The controller (or, for a single broker, the broker itself) is the only writer; brokers apply a
new image with `Broker.apply_metadata`, which turns it into become_leader / become_follower.
"""

from __future__ import annotations

import uuid

import attrs

from kafkaref.impl.core.config import DEFAULT_MAX_MESSAGE_BYTES, PartitionConfig
from kafkaref.impl.core.topic_rules import (
    deletes_records,
    is_compacted,
    is_log_append_time,
    retention_override,
    segment_bytes,
    timestamp_max_ms,
)


@attrs.frozen
class BrokerEndpoint:
    broker_id: int
    host: str
    port: int


@attrs.frozen
class PartitionMeta:
    leader: int  # -1 when no replica can lead
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0  # bumped on every leader or ISR change (Kafka's partition epoch)
    elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas


@attrs.frozen
class TopicMeta:
    name: str
    partitions: tuple[PartitionMeta, ...]
    configs: tuple[tuple[str, str], ...] = ()
    # Kafka's topic id (KIP-516): a topic deleted and created again under the same name is
    # another topic. A broker that skipped the image without the topic still sees a new id and
    # drops the old partitions (and their logs) before hosting the new ones. "" in images
    # written before ids existed.
    topic_id: str = ""

    def config(self) -> PartitionConfig:
        values = dict(self.configs)
        return PartitionConfig(
            min_insync_replicas=int(values.get("min.insync.replicas", 1)),
            max_message_bytes=int(values.get("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES)),
            compacted=is_compacted(values),
            deletes_records=deletes_records(values),
            segment_bytes=segment_bytes(values),
            retention_ms=retention_override(values, "retention.ms"),
            retention_bytes=retention_override(values, "retention.bytes"),
            log_append_time=is_log_append_time(values),
            timestamp_max_ms=(timestamp_max_ms(values, "message.timestamp.before.max.ms"),
                              timestamp_max_ms(values, "message.timestamp.after.max.ms")),
        )  # never mutants, nor replica.lag.time.max.ms: those are the broker's (Broker config)


@attrs.frozen
class ClusterMetadata:
    cluster_id: str = "kafkaref"
    controller_id: int = -1
    epoch: int = 0  # bumped on every change; brokers ignore older images
    brokers: tuple[BrokerEndpoint, ...] = ()
    topics: tuple[TopicMeta, ...] = ()

    def topic(self, name: str) -> TopicMeta | None:
        for topic in self.topics:
            if topic.name == name:
                return topic
        return None

    def broker(self, broker_id: int) -> BrokerEndpoint | None:
        for broker in self.brokers:
            if broker.broker_id == broker_id:
                return broker
        return None

    def without_topic(self, name: str) -> ClusterMetadata:
        return attrs.evolve(self, topics=tuple(t for t in self.topics if t.name != name),
                            epoch=self.epoch + 1)

    def with_topic(self, topic: TopicMeta) -> ClusterMetadata:
        others = tuple(t for t in self.topics if t.name != topic.name)
        return attrs.evolve(self, topics=(*others, topic), epoch=self.epoch + 1)


def new_topic_id() -> str:
    """A fresh topic id: a random UUID, as Kafka's controller draws them."""
    return str(uuid.uuid4())


def metadata_to_dict(metadata: ClusterMetadata) -> dict:
    return attrs.asdict(metadata)


def metadata_from_dict(data: dict) -> ClusterMetadata:
    return ClusterMetadata(
        cluster_id=data["cluster_id"], controller_id=data["controller_id"], epoch=data["epoch"],
        brokers=tuple(BrokerEndpoint(**b) for b in data["brokers"]),
        topics=tuple(
            TopicMeta(
                t["name"],
                tuple(PartitionMeta(p["leader"], p["leader_epoch"], tuple(p["replicas"]),
                                    tuple(p["isr"]), p["partition_epoch"],
                                    tuple(p.get("elr", ())))
                      for p in t["partitions"]),
                tuple(tuple(c) for c in t["configs"]),
                t.get("topic_id", ""),
            )
            for t in data["topics"]
        ),
    )
