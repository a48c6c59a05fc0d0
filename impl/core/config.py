"""Every bound and setting of impl/core in one module: the broker's (BrokerConfig), a
partition's (PartitionConfig), and the fixed limits the core's modules use, named with their
unit last (Kafka's names where Kafka has one).

The other layers keep theirs the same way: impl/storage/config.py (LogConfig and the log's
limits), impl/server/config.py (ServerConfig and the threads' limits), impl/protocol/limits.py,
impl/controller/config.py; impl/replication/fetcher.py holds the fetcher's two.
"""

from __future__ import annotations

import attrs

from kafkaref.impl.core.rules import CoreRules, rules_for
from kafkaref.impl.mutants import (
    NONE,
    Mutant,
    Switches,
    mutants_field,
    parse_mutants,
    switches_field,
)

# -- topics and batches -------------------------------------------------------------------------
TOPIC_NAME_MAX_CHARS = 249  # Kafka's Topic.MAX_NAME_LENGTH
# Kafka's default max.message.bytes (the broker's message.max.bytes): 1 MiB + batch overhead.
DEFAULT_MAX_MESSAGE_BYTES = 1048588
# Kafka 4.0's lower bound for segment.bytes (LogConfig: atLeast(1024 * 1024), KIP-1030); Kafka
# 3.x allowed 14 bytes. kafkaref enforces 4.0's: a log keeps a file descriptor and two index
# files per segment, and a 14-byte segment.bytes lets any client make one segment per batch
# (the reason KIP-1030 gives). Smaller segments are for tests only and only through the
# broker's own log.segment.bytes (`kafkaref broker --segment-bytes`, LogConfig), as Kafka 4.0
# keeps its internal.segment.bytes for its tests; no client request reaches them.
SEGMENT_MIN_BYTES = 1024 * 1024
PRODUCER_STATE_MAX_BATCHES = 5  # batches remembered per producer for duplicates (Kafka's 5)
# How far a CreateTime record's timestamp may be behind / ahead of the leader's wall clock
# (message.timestamp.before.max.ms / after.max.ms): Kafka 4's defaults (KIP-937; 4.0 lowered
# after.max.ms from Long.MAX to one hour).
TIMESTAMP_BEFORE_MAX_MS = 2**63 - 1
TIMESTAMP_AFTER_MAX_MS = 3_600_000

# -- groups and committed offsets ---------------------------------------------------------------
# Kafka's group.min.session.timeout.ms and group.max.session.timeout.ms defaults
SESSION_TIMEOUT_MIN_MS, SESSION_TIMEOUT_MAX_MS = 6_000, 1_800_000
# group.initial.rebalance.delay.ms: Kafka's built-in default is 3000; its shipped
# config/server.properties sets 0 "for a better out-of-the-box experience for development and
# testing", and so does kafkaref (the librdkafka peer suite runs with 3000, as its tests expect)
KAFKA_INITIAL_REBALANCE_DELAY_MS = 3_000
OFFSETS_LOAD_CHUNK_BYTES = 1 << 20  # one load step reads this much of each loading partition

# -- purgatory timers ---------------------------------------------------------------------------
TIMING_WHEEL_TICK_MS = 1
TIMING_WHEEL_SLOTS = 20


@attrs.frozen
class BrokerConfig:
    """One broker's settings (Kafka's broker configs)."""

    broker_id: int = 0
    auto_create_topics: bool = True
    default_partitions: int = 1
    default_replication_factor: int = 1
    replica_lag_time_max_ms: int = 30_000
    # __consumer_offsets, created when a group first needs a coordinator (Kafka's defaults;
    # the replication factor is capped by the live brokers at creation)
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_commit_timeout_ms: int = 5_000  # an OffsetCommit waits this long for acks=all
    offset_metadata_max_bytes: int = 4096
    group_min_session_timeout_ms: int = SESSION_TIMEOUT_MIN_MS
    group_max_session_timeout_ms: int = SESSION_TIMEOUT_MAX_MS
    group_initial_rebalance_delay_ms: int = 0  # KAFKA_INITIAL_REBALANCE_DELAY_MS says why 0
    # The retention task (ReplicaManager.run_retention_checks): its first run this long after
    # the broker starts, then every log.retention.check.interval.ms (Kafka's LogManager
    # schedules cleanupLogs so; Kafka's defaults). None: no task (a test that wants none).
    log_initial_task_delay_ms: int = 30_000
    log_retention_check_interval_ms: int | None = 300_000
    # Deliberate faults (impl/mutants.py), set only by tests or `kafkaref broker --mutant`;
    # every partition of this broker gets them (core and replication ones act there).
    mutants: frozenset[Mutant] = attrs.field(default=NONE, converter=parse_mutants)


@attrs.frozen
class PartitionConfig:
    """One partition's settings: its topic's configs and the broker's that act per partition."""

    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30_000
    # Kafka's max.message.bytes: the largest batch a producer may append (MESSAGE_TOO_LARGE).
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    # message.timestamp.type=LogAppendTime: the log stamps each batch with its clock, the Produce
    # answer says the time (PartitionLog.append_as_leader); AlterConfigs acts on later appends.
    log_append_time: bool = False
    # (message.timestamp.before.max.ms, after.max.ms): a CreateTime topic's leader refuses a
    # record whose timestamp is further behind / ahead of its wall clock (INVALID_TIMESTAMP)
    timestamp_max_ms: tuple[int, int] = (TIMESTAMP_BEFORE_MAX_MS, TIMESTAMP_AFTER_MAX_MS)
    # cleanup.policy includes "compact": a leader refuses records without a key (Kafka's
    # LogValidator.validateKey). kafkaref never compacts the log itself.
    compacted: bool = False
    # cleanup.policy includes "delete": DeleteRecords may move the log start (else
    # POLICY_VIOLATION, as Kafka's Partition.deleteRecordsOnLeader answers)
    deletes_records: bool = True
    # The topic's segment.bytes, None without an override (the broker's log.segment.bytes):
    # handed to the log (set_segment_bytes), which rolls at it from its next append on.
    segment_bytes: int | None = None
    # The topic's retention.ms and retention.bytes, None without an override (the broker's
    # log.retention.*, the log's LogConfig): the retention task hands them to the log.
    retention_ms: int | None = None
    retention_bytes: int | None = None
    # KIP-966: the hw does not advance while the ISR is below the minimum. Off = older Kafka,
    # where only acks=all was gated (and NOT_ENOUGH_REPLICAS_AFTER_APPEND is reachable).
    hw_requires_min_isr: bool = True
    # Deliberate faults (impl/mutants.py; tests and `kafkaref broker --mutant` only): the
    # core's (M1 M3 M4 M7 M15 here, M2 M10 M11 in the replica manager) take the place of the
    # rules they break in `rules` (impl/core/rules.py); impl/replication/apply.py acts on M5.
    mutants: frozenset[Mutant] = mutants_field()
    on: Switches = switches_field()
    rules: CoreRules = attrs.field(init=False, eq=False, repr=False, default=attrs.Factory(
        lambda config: rules_for(config.mutants), takes_self=True))

    def minimum_isr(self, replication_factor: int) -> int:
        return min(self.min_insync_replicas, replication_factor)

    def timestamp_bounds(self, log) -> tuple[int, int] | None:
        """The (earliest, latest) record timestamp a producer batch may carry now, by the
        log's wall clock (PartitionLog.wall_ms), inclusive; None on a LogAppendTime topic,
        which stamps its own (Kafka's LogValidator.validateTimestamp)."""
        if self.log_append_time:
            return None
        now = log.wall_ms()
        return now - self.timestamp_max_ms[0], now + self.timestamp_max_ms[1]
