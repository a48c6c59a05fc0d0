"""What a topic may be called, which configs it may carry and how its replicas may be assigned:
the one definition used by CreateTopics, CreatePartitions, AlterConfigs and
IncrementalAlterConfigs, DescribeConfigs (defaults and types), Metadata and the controllers.

Kafka's rules (org.apache.kafka.common.internals.Topic.validate, LogConfig, and the
CreateTopics checks in ZkAdminManager / ControllerManager): a name is 1..249 characters of
[a-zA-Z0-9._-] and not "." or ".."; a config name must be a known topic config (INVALID_CONFIG
otherwise); an explicit assignment names partitions 0..n-1, each once, with the same number of
distinct, registered brokers (INVALID_REPLICA_ASSIGNMENT otherwise), and then num_partitions and
replication_factor must be -1 (INVALID_REQUEST otherwise). CreatePartitions only grows a topic
(INVALID_PARTITIONS), its assignment names the new partitions with the topic's replication factor.
"""

from __future__ import annotations

import re

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import (
    DEFAULT_MAX_MESSAGE_BYTES,
    SEGMENT_MIN_BYTES,
    TIMESTAMP_AFTER_MAX_MS,
    TIMESTAMP_BEFORE_MAX_MS,
    TOPIC_NAME_MAX_CHARS,
)

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")

# Kafka 4.x topic-level configs (LogConfig / TopicConfig) with Kafka's defaults and types (the
# ConfigType ids DescribeConfigs v3 reports): Apache Kafka 4.3.1 describes exactly these (the
# differential walk compares them) and refuses message.downconversion.enable,
# message.format.version and message.timestamp.difference.max.ms, which 3.x still had, as
# unknown (INVALID_CONFIG). kafkaref honours min.insync.replicas,
# max.message.bytes, segment.bytes and message.timestamp.type per topic (PARTITION_CONFIGS: what
# metadata.TopicMeta.config() reads; segment.bytes reaches the partition's log, a
# LogAppendTime topic's leader stamps its batches with the append time, and a CreateTime
# topic's refuses records whose timestamps are outside message.timestamp.before/after.max.ms
# of its clock; retention.ms and retention.bytes reach the broker's retention task), and of
# cleanup.policy whether it holds "compact" (is_compacted: keyless records are refused; the log
# is never compacted); the others are accepted, stored and described as Kafka does and take the
# broker's settings.
# replica.lag.time.max.ms is a broker config (BrokerConfig.replica_lag_time_max_ms), not a
# topic config: refused here as Kafka refuses it.
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
LONG_MAX = str(2**63 - 1)
TOPIC_CONFIG_DEFAULTS: dict[str, tuple[str, int]] = {
    "cleanup.policy": ("delete", LIST),
    "compression.gzip.level": ("-1", INT),  # KIP-390
    "compression.lz4.level": ("9", INT),
    "compression.type": ("producer", STRING),
    "compression.zstd.level": ("3", INT),
    "delete.retention.ms": ("86400000", LONG),
    "file.delete.delay.ms": ("60000", LONG),
    "flush.messages": (LONG_MAX, LONG),
    "flush.ms": (LONG_MAX, LONG),
    "follower.replication.throttled.replicas": ("", LIST),
    "index.interval.bytes": ("4096", INT),
    "leader.replication.throttled.replicas": ("", LIST),
    "local.retention.bytes": ("-2", LONG),
    "local.retention.ms": ("-2", LONG),
    "max.compaction.lag.ms": (LONG_MAX, LONG),
    "max.message.bytes": (str(DEFAULT_MAX_MESSAGE_BYTES), INT),
    "message.timestamp.after.max.ms": (str(TIMESTAMP_AFTER_MAX_MS), LONG),
    "message.timestamp.before.max.ms": (str(TIMESTAMP_BEFORE_MAX_MS), LONG),
    "message.timestamp.type": ("CreateTime", STRING),
    "min.cleanable.dirty.ratio": ("0.5", DOUBLE),
    "min.compaction.lag.ms": ("0", LONG),
    "min.insync.replicas": ("1", INT),
    "preallocate": ("false", BOOLEAN),
    "remote.log.copy.disable": ("false", BOOLEAN),  # KIP-950
    "remote.log.delete.on.disable": ("false", BOOLEAN),
    "remote.storage.enable": ("false", BOOLEAN),
    "retention.bytes": ("-1", LONG),
    "retention.ms": ("604800000", LONG),
    "segment.bytes": ("1073741824", INT),
    "segment.index.bytes": ("10485760", INT),
    "segment.jitter.ms": ("0", LONG),
    "segment.ms": ("604800000", LONG),
    "unclean.leader.election.enable": ("false", BOOLEAN),
}
TOPIC_CONFIGS = frozenset(TOPIC_CONFIG_DEFAULTS)
# The broker config each topic config falls back to when Kafka lists it as a DEFAULT_CONFIG
# synonym in DescribeConfigs (ServerTopicConfigSynonyms; Kafka lists none where the broker
# config has no default of its own, e.g. retention.ms's log.retention.ms).
BROKER_SYNONYMS = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.type": "compression.type",
    "compression.zstd.level": "compression.zstd.level",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "flush.messages": "log.flush.interval.messages",
    "index.interval.bytes": "log.index.interval.bytes",
    "local.retention.bytes": "log.local.retention.bytes",
    "local.retention.ms": "log.local.retention.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.type": "log.message.timestamp.type",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "min.insync.replicas": "min.insync.replicas",
    "preallocate": "log.preallocate",
    "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes",
    "segment.index.bytes": "log.index.size.max.bytes",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}
PARTITION_CONFIGS = ("min.insync.replicas", "max.message.bytes", "segment.bytes",
                     "message.timestamp.type", "message.timestamp.before.max.ms",
                     "message.timestamp.after.max.ms", "retention.ms", "retention.bytes")
# The bounds of Kafka's LogConfig validators (segment.bytes: config.py says why) (atLeast / between; INVALID_CONFIG outside them);
# compression.gzip.level also takes -1 (GZIP's default level)
CONFIG_BOUNDS: dict[str, tuple[float, float | None]] = {
    "segment.bytes": (SEGMENT_MIN_BYTES, None), "segment.ms": (1, None),
    "segment.jitter.ms": (0, None), "segment.index.bytes": (4, None),
    "flush.messages": (1, None), "flush.ms": (0, None), "retention.ms": (-1, None),
    "max.message.bytes": (0, None), "index.interval.bytes": (0, None),
    "delete.retention.ms": (0, None), "min.compaction.lag.ms": (0, None),
    "max.compaction.lag.ms": (1, None), "file.delete.delay.ms": (0, None),
    "min.insync.replicas": (1, None), "local.retention.ms": (-2, None),
    "local.retention.bytes": (-2, None), "message.timestamp.before.max.ms": (0, None),
    "message.timestamp.after.max.ms": (0, None), "min.cleanable.dirty.ratio": (0, 1),
    "compression.gzip.level": (1, 9), "compression.lz4.level": (1, 17),
    "compression.zstd.level": (-131072, 22),
}
GZIP_DEFAULT_LEVEL = "-1"
# Reserved: kafkaref has no topic configs of its own. In particular deliberate faults
# (impl/mutants.py) are never a topic config, so no client request can switch one on.
RESERVED_CONFIG_PREFIX = "kafkaref."
# Values Kafka's validators accept for the enumerated configs (LogConfig's ValidList/ValidString)
ENUMERATED = {
    "cleanup.policy": frozenset({"delete", "compact"}),
    "compression.type": frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}),
    "message.timestamp.type": frozenset({"CreateTime", "LogAppendTime"}),
}
# IncrementalAlterConfigs operations (KIP-339)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def legal_topic_name(name: str | None) -> bool:
    return bool(name) and len(name) <= TOPIC_NAME_MAX_CHARS and name not in (".", "..") and bool(
        _LEGAL.fullmatch(name))


def check_config_names(names) -> tuple[ErrorCode, str | None]:
    """INVALID_CONFIG for a reserved or unknown topic config name, else (NONE, None)."""
    for name in names:
        if name.startswith(RESERVED_CONFIG_PREFIX):
            return (ErrorCode.invalid_config, f"topic config {name!r} is not accepted: names "
                    f"under {RESERVED_CONFIG_PREFIX!r} are reserved, and deliberate faults are "
                    "switched on only when a broker is started (kafkaref broker --mutant; in tests "
                    "BrokerConfig(mutants=...), impl/mutants.py)")
    unknown = sorted(k for k in names if k not in TOPIC_CONFIGS)
    if unknown:
        return ErrorCode.invalid_config, f"unknown topic config {', '.join(unknown)}"
    return ErrorCode.none, None


def check_configs(configs: dict[str, str | None]) -> tuple[ErrorCode, str | None]:
    """(INVALID_CONFIG, why) for a client's topic configs (CreateTopics, AlterConfigs, the
    result of IncrementalAlterConfigs), or (NONE, None): known names, values of the config's
    type (Kafka's LogConfig validators, the ones kafkaref reads strictest)."""
    error, why = check_config_names(configs)
    if error != ErrorCode.none:
        return error, why
    for name, value in configs.items():
        why = _value_problem(name, value)
        if why is not None:
            return ErrorCode.invalid_config, f"topic config {name}={value!r}: {why}"
    return ErrorCode.none, None


def _value_problem(name: str, value: str | None) -> str | None:
    if value is None:
        return "a null value is not supported"
    kind = TOPIC_CONFIG_DEFAULTS[name][1]
    if kind in (INT, LONG):
        try:
            number = int(value)
        except ValueError:
            return "must be an integer"
        bound = 2**31 if kind == INT else 2**63
        if not -bound <= number < bound:
            return "out of range"
        return None if name == "compression.gzip.level" and value == GZIP_DEFAULT_LEVEL else (
            _out_of_bounds(name, number))
    if kind == BOOLEAN:
        return None if value.lower() in ("true", "false") else "must be true or false"
    if kind == DOUBLE:
        try:
            number = float(value)
        except ValueError:
            return "must be a number"
        return _out_of_bounds(name, number)
    allowed = ENUMERATED.get(name)
    items = _list_items(value) if kind == LIST else [value]
    if allowed is not None and not set(items) <= allowed:
        return f"must be {'some' if kind == LIST else 'one'} of {sorted(allowed)}"
    return None


def _out_of_bounds(name: str, number: float) -> str | None:
    low, high = CONFIG_BOUNDS.get(name, (None, None))
    if low is not None and number < low:
        return f"must be at least {low}"
    if high is not None and number > high:
        return f"must be at most {high}"
    return None


def segment_bytes(configs: dict[str, str]) -> int | None:
    """The topic's segment.bytes override, or None: the broker's log.segment.bytes applies.
    An override stored before the 1 MiB bound (a controller snapshot or topic-configs.json
    holding "14") is ignored rather than handed to the logs, which would refuse it."""
    value = configs.get("segment.bytes")
    if value is None or _value_problem("segment.bytes", value) is not None:
        return None
    return int(value)


def retention_override(configs: dict[str, str], name: str) -> int | None:
    """The topic's retention.ms or retention.bytes, None without an override: the broker's
    log.retention.* applies (an override stored unchecked is ignored, as segment_bytes does)."""
    value = configs.get(name)
    if value is None or _value_problem(name, value) is not None:
        return None
    return int(value)


def is_compacted(configs: dict[str, str]) -> bool:
    """Does the topic's cleanup.policy include "compact" (alone or with "delete")? Then Kafka's
    LogValidator refuses records without a key (INVALID_RECORD)."""
    policy = configs.get("cleanup.policy", TOPIC_CONFIG_DEFAULTS["cleanup.policy"][0])
    return "compact" in _list_items(policy)


def is_log_append_time(configs: dict[str, str]) -> bool:
    """Is the topic's message.timestamp.type LogAppendTime? Then its leader stamps every batch
    with the broker's append time (Kafka's LogValidator; PartitionConfig.log_append_time)."""
    return configs.get("message.timestamp.type") == "LogAppendTime"


def timestamp_max_ms(configs: dict[str, str], name: str) -> int:
    """message.timestamp.before.max.ms or after.max.ms: the topic's override, else Kafka 4's
    default (an override stored unchecked is ignored, as segment_bytes does)."""
    value = configs.get(name)
    if value is None or _value_problem(name, value) is not None:
        return int(TOPIC_CONFIG_DEFAULTS[name][0])
    return int(value)


def deletes_records(configs: dict[str, str]) -> bool:
    """Does the topic's cleanup.policy include "delete"? Only then may DeleteRecords move its
    log start (Kafka's Partition.deleteRecordsOnLeader: POLICY_VIOLATION otherwise)."""
    policy = configs.get("cleanup.policy", TOPIC_CONFIG_DEFAULTS["cleanup.policy"][0])
    return "delete" in _list_items(policy)


def _list_items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def incremental_configs(current: dict[str, str], ops: list[tuple[str, int, str | None]],
                        ) -> tuple[ErrorCode, str | None, dict[str, str]]:
    """A topic's overrides after IncrementalAlterConfigs ops (name, operation, value): SET,
    DELETE (back to the default), APPEND / SUBTRACT (list configs only, starting from the
    override or the default), in Kafka's order: the broker's ConfigAdminManager.preprocess
    (duplicate names, a null value to set: INVALID_REQUEST), then the controller's
    ConfigurationControlManager (appending to or subtracting from a config that is not a list,
    an unknown one included: INVALID_CONFIG). An unknown operation: INVALID_REQUEST. The
    caller then checks the topic's name, the resulting configs (check_configs) and that the
    topic exists, in that order, as the controller does."""
    names = [name for name, _, _ in ops]
    if len(set(names)) != len(names):
        return ErrorCode.invalid_request, "duplicate config names in one resource", current
    if any(value is None and op != DELETE for _, op, value in ops):
        return ErrorCode.invalid_request, "a null value is only for DELETE", current
    result = dict(current)
    for name, op, value in ops:
        if op == SET:
            result[name] = value
        elif op == DELETE:
            result.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if name not in TOPIC_CONFIGS or TOPIC_CONFIG_DEFAULTS[name][1] != LIST:
                return (ErrorCode.invalid_config,  # Kafka's ConfigAdminManager's words
                        f"Config value {'append' if op == APPEND else 'subtract'} is not allowed "
                        f"for config key: {name}", current)
            items = _list_items(result.get(name, TOPIC_CONFIG_DEFAULTS[name][0]))
            given = _list_items(value or "")
            items = (items + [i for i in given if i not in items] if op == APPEND
                     else [i for i in items if i not in given])
            result[name] = ",".join(items)
        else:
            return ErrorCode.invalid_request, f"unknown config operation {op}", current
    return ErrorCode.none, None, result


def check_assignment(assignment: dict[int, list[int]], brokers: set[int],
                     partitions: int, replication_factor: int) -> tuple[ErrorCode, str | None]:
    """An explicit {partition: [broker ids]} for CreateTopics."""
    if partitions != -1 or replication_factor != -1:
        return (ErrorCode.invalid_request, "with a replica assignment, num_partitions and "
                "replication_factor must be -1")
    if sorted(assignment) != list(range(len(assignment))) or not assignment:
        return (ErrorCode.invalid_replica_assignment,
                "partitions should be a consecutive 0-based integer sequence")
    return _check_replicas(assignment, brokers, None)


def check_assignment_entries(entries: list[tuple[int, list[int]]], brokers: set[int],
                             partitions: int,
                             replication_factor: int) -> tuple[ErrorCode, str | None]:
    """check_assignment of CreateTopics' assignments as the request lists them: a partition
    named twice is refused, not overwritten (Kafka's ReplicationControlManager.createTopic:
    "Found multiple manual partition assignments")."""
    indexes = [index for index, _ in entries]
    twice = next((i for n, i in enumerate(indexes) if i in indexes[:n]), None)
    if twice is not None and partitions == replication_factor == -1:
        return (ErrorCode.invalid_replica_assignment,
                f"Found multiple manual partition assignments for partition {twice}")
    return check_assignment(dict(entries), brokers, partitions, replication_factor)


def check_new_partitions(current: int, count: int, replication_factor: int,
                         assignment: list[list[int]] | None,
                         brokers: set[int]) -> tuple[ErrorCode, str | None]:
    """CreatePartitions growing a topic of `current` partitions to `count` (Kafka's
    ReplicationControlManager.createPartitions): never shrink nor stay (INVALID_PARTITIONS);
    an explicit assignment names exactly the new partitions, each with the topic's replication
    factor of distinct registered brokers (INVALID_REPLICA_ASSIGNMENT)."""
    if count < current:
        return (ErrorCode.invalid_partitions, f"topic currently has {current} partitions, "
                f"which is higher than the requested {count}")
    if count == current:
        return ErrorCode.invalid_partitions, f"topic already has {current} partitions"
    if assignment is None:
        return ErrorCode.none, None
    if len(assignment) != count - current:
        return (ErrorCode.invalid_replica_assignment, f"{len(assignment)} assignments for "
                f"{count - current} new partitions")
    return _check_replicas({current + i: list(ids) for i, ids in enumerate(assignment)},
                           brokers, replication_factor)


def _check_replicas(assignment: dict[int, list[int]], brokers: set[int],
                    replication_factor: int | None) -> tuple[ErrorCode, str | None]:
    """Every partition: distinct registered brokers, as many as every other (and as
    replication_factor when given)."""
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
    if replication_factor is not None and sizes != {replication_factor}:
        return (ErrorCode.invalid_replica_assignment, f"the topic's replication factor is "
                f"{replication_factor}, the assignment has {sizes.pop()} replicas")
    return ErrorCode.none, None
