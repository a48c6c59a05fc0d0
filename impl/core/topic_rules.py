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
})
# Reserved: kafkaref has no topic configs of its own. In particular deliberate faults
# (impl/mutants.py) are never a topic config, so no client request can switch one on.
RESERVED_CONFIG_PREFIX = "kafkaref."
# Topic configs whose value the core reads: they must parse, or applying the topic would fail.
POSITIVE_INT_CONFIGS = ("min.insync.replicas", "replica.lag.time.max.ms", "max.message.bytes")
# Kafka's default max.message.bytes (the broker's message.max.bytes): 1 MiB + batch overhead.
MAX_MESSAGE_BYTES_DEFAULT = 1048588


def legal_topic_name(name: str | None) -> bool:
    return bool(name) and len(name) <= NAME_MAX and name not in (".", "..") and bool(
        _LEGAL.fullmatch(name))


def check_configs(configs: dict[str, str | None]) -> tuple[ErrorCode, str | None]:
    """(INVALID_CONFIG, why) for a client's topic configs (CreateTopics), or (NONE, None)."""
    for name in configs:
        if name.startswith(RESERVED_CONFIG_PREFIX):
            return (ErrorCode.invalid_config, f"topic config {name!r} is not accepted: names "
                    f"under {RESERVED_CONFIG_PREFIX!r} are reserved, and deliberate faults are "
                    "switched on only when a broker is started (kafkaref broker --mutant; in tests "
                    "BrokerConfig(mutants=...), impl/mutants.py)")
    unknown = sorted(k for k in configs if k not in TOPIC_CONFIGS)
    if unknown:
        return ErrorCode.invalid_config, f"unknown topic config {', '.join(unknown)}"
    for name in POSITIVE_INT_CONFIGS:
        value = configs.get(name)
        if name in configs and not (str(value).isdigit() and int(value) >= 1):
            return (ErrorCode.invalid_config,
                    f"topic config {name}={value!r} must be a positive integer")
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
