"""What a topic may be called, which configs it may carry and how its replicas may be assigned:
the one definition used by CreateTopics, Metadata and the controller.

Kafka's rules (org.apache.kafka.common.internals.Topic.validate, LogConfig, and the
CreateTopics checks in ZkAdminManager / ControllerManager): a name is 1..249 characters of
[a-zA-Z0-9._-] and not "." or ".."; a config name must be a known topic config (INVALID_CONFIG
otherwise); an explicit assignment names partitions 0..n-1, each with the same number of
distinct, registered brokers (INVALID_REPLICA_ASSIGNMENT otherwise), and then num_partitions and
replication_factor must be -1 (INVALID_REQUEST otherwise).
"""

from __future__ import annotations

import re

from kio.schema.errors import ErrorCode

NAME_MAX = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")

# Kafka 3.x topic-level configs (LogConfig / TopicConfig). kafkaref honours min.insync.replicas,
# max.message.bytes and replica.lag.time.max.ms per topic; the others are accepted as Kafka
# accepts them and take the broker's settings.
TOPIC_CONFIGS = frozenset({
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
    "flush.messages", "flush.ms", "follower.replication.throttled.replicas",
    "index.interval.bytes", "leader.replication.throttled.replicas", "local.retention.bytes",
    "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
    "message.downconversion.enable", "message.format.version", "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms", "message.timestamp.difference.max.ms",
    "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "preallocate", "remote.storage.enable", "retention.bytes",
    "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable", "replica.lag.time.max.ms",
    "kafkaref.mutants",  # until the typed mutant registry replaces this config (issue 13)
})
# Kafka's default max.message.bytes (the broker's message.max.bytes): 1 MiB + batch overhead.
MAX_MESSAGE_BYTES_DEFAULT = 1048588


def legal_topic_name(name: str | None) -> bool:
    return bool(name) and len(name) <= NAME_MAX and name not in (".", "..") and bool(
        _LEGAL.fullmatch(name))


def check_configs(configs: dict[str, str | None]) -> tuple[ErrorCode, str | None]:
    unknown = sorted(k for k in configs if k not in TOPIC_CONFIGS)
    if unknown:
        return ErrorCode.invalid_config, f"unknown topic config {', '.join(unknown)}"
    for name in ("min.insync.replicas", "max.message.bytes"):
        value = configs.get(name)
        if value is not None and not (str(value).isdigit() and int(value) >= 1):
            return ErrorCode.invalid_config, f"{name} must be a positive integer, not {value!r}"
    return ErrorCode.none, None


def check_assignment(assignment: dict[int, list[int]], brokers: set[int],
                     partitions: int, replication_factor: int) -> tuple[ErrorCode, str | None]:
    """An explicit {partition: [broker ids]} for CreateTopics."""
    if partitions != -1 or replication_factor != -1:
        return (ErrorCode.invalid_request, "with a replica assignment, num_partitions and "
                "replication_factor must be -1")
    if sorted(assignment) != list(range(len(assignment))) or not assignment:
        return ErrorCode.invalid_replica_assignment, "partitions must be 0..n-1"
    sizes = {len(ids) for ids in assignment.values()}
    for index, ids in assignment.items():
        if not ids or len(set(ids)) != len(ids):
            return (ErrorCode.invalid_replica_assignment,
                    f"partition {index}: replicas must be distinct and not empty")
        if not set(ids) <= brokers:
            return (ErrorCode.invalid_replica_assignment,
                    f"partition {index}: unknown brokers {sorted(set(ids) - brokers)}")
    if len(sizes) != 1:
        return ErrorCode.invalid_replica_assignment, "every partition needs as many replicas"
    return ErrorCode.none, None
