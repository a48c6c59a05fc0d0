"""Topic changes after creation, as pure functions of the metadata image: deleting a topic,
adding partitions to it, replacing its config overrides. Both controllers (state.py for a
cluster, local.py for one broker) apply them, so each rule has one definition; the checks on
names, configs and assignments are topic_rules'.

Each returns (error, message, new image or None). The new image is what the controller commits
and pushes; brokers act on the difference (Broker.apply_metadata): a topic gone, or listed with
another topic id, has its partitions stopped and their logs deleted; new partitions are hosted;
new configs reach every partition of the topic.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.metadata import ClusterMetadata, PartitionMeta, TopicMeta
from kafkaref.impl.core.topic_rules import check_configs, check_new_partitions

Change = tuple[ErrorCode, str | None, ClusterMetadata | None]


def _unknown(name: str) -> Change:
    return ErrorCode.unknown_topic_or_partition, f"topic {name} does not exist", None


def deleted(metadata: ClusterMetadata, name: str) -> Change:
    """DeleteTopics: the image without the topic (KRaft removes it in one record)."""
    if metadata.topic(name) is None:
        return _unknown(name)
    return ErrorCode.none, None, metadata.without_topic(name)


def grown(metadata: ClusterMetadata, name: str, count: int,
          assignment: list[list[int]] | None, alive: set[int],
          automatic_elections: bool = True) -> Change:
    """CreatePartitions: the topic with partitions up to `count`, replicated like its first
    partition. Without an assignment the new replicas are spread over the live brokers as
    CreateTopics spreads them; with one, it is checked (topic_rules.check_new_partitions)."""
    topic = metadata.topic(name)
    if topic is None:
        return _unknown(name)
    current, rf = len(topic.partitions), len(topic.partitions[0].replicas)
    error, why = check_new_partitions(current, count, rf, assignment, alive)
    if error != ErrorCode.none:
        return error, why, None
    if assignment is None:
        ids = sorted(alive)
        if rf > len(ids):
            return (ErrorCode.invalid_replication_factor, f"the topic's replication factor {rf} "
                    f"cannot be reached with {len(ids)} live brokers", None)
        start = sum(len(t.partitions) for t in metadata.topics)
        assignment = [[ids[(start + i + k) % len(ids)] for k in range(rf)]
                      for i in range(count - current)]
    added = tuple(new_partition(tuple(map(int, r)), automatic_elections) for r in assignment)
    return ErrorCode.none, None, metadata.with_topic(
        attrs.evolve(topic, partitions=(*topic.partitions, *added)))


def new_partition(replicas: tuple[int, ...], automatic_elections: bool) -> PartitionMeta:
    """A partition as CreateTopics and CreatePartitions make it: led by its first replica at
    epoch 0 at once, or, with explicit elections, offline until an election gives epoch 0."""
    if automatic_elections:
        return PartitionMeta(replicas[0], 0, replicas, replicas)
    return PartitionMeta(-1, -1, replicas, replicas)  # offline until an election (lockstep)


def reconfigured(metadata: ClusterMetadata, name: str, configs: dict[str, str]) -> Change:
    """AlterConfigs (and IncrementalAlterConfigs, once its ops are applied): the topic with
    exactly these overrides; names left out go back to their defaults. The configs are checked
    before the topic's existence, as Kafka's ConfigurationControlManager.validateAlterConfig
    does (bad configs for an unknown topic: INVALID_CONFIG)."""
    error, why = check_configs(configs)
    if error != ErrorCode.none:
        return error, why, None
    topic = metadata.topic(name)
    if topic is None:
        return _unknown(name)
    overrides = tuple(sorted((str(k), str(v)) for k, v in configs.items()))
    return ErrorCode.none, None, metadata.with_topic(attrs.evolve(topic, configs=overrides))


def new_topic(name: str, partitions: tuple[PartitionMeta, ...], configs: dict,
              topic_id: str) -> TopicMeta:
    return TopicMeta(name, partitions, tuple(sorted((str(k), str(v)) for k, v in configs.items())),
                     topic_id)
