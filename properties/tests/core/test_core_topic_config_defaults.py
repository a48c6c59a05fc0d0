"""A topic created without configs is described (DescribeConfigs) with Apache Kafka 4.3.1's
topic defaults, every one from the default source, with Kafka's config type (ConfigDef's
ConfigType: clients parse a value by it), neither read-only nor sensitive; CreateTopics v5+
lists the same configs, an override from the topic's own source. The values and types below
are Kafka's answer for a topic in properties/differential/transcripts/kafka-4.3.1-fixed.txt (its
two overrides replaced by the broker defaults the answer's synonyms name; min.insync.replicas
and unclean.leader.election.enable, which that transcript normalises, are Kafka's documented 1
and false); CreateTopics' is Kafka's answer in kafka-4.3.1-walk-versions.txt.

Found by mutation testing (session 79fa682's survivor 00219): Long.MAX_VALUE, the default of
flush.messages, flush.ms and max.compaction.lag.ms, read one less passed the core layer; the
types (session 9df4313's topic_rules.py:45) and CreateTopics' flags (admin.py:346) were held
only by the server layer and the differential walk."""

from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers

BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7  # Kafka's ConfigDef.Type ids
DEFAULT_SOURCE, TOPIC_SOURCE = 5, 1
KAFKA_4_3_1 = {
    "cleanup.policy": "delete",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.type": "producer",
    "compression.zstd.level": "3",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "follower.replication.throttled.replicas": "",
    "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}


# each config's type as Kafka 4.3.1 describes it (config_type), by type
KAFKA_4_3_1_TYPES = {
    BOOLEAN: (
        "preallocate", "remote.log.copy.disable", "remote.log.delete.on.disable",
        "remote.storage.enable", "unclean.leader.election.enable",
    ),
    STRING: (
        "compression.type", "message.timestamp.type",
    ),
    INT: (
        "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
        "index.interval.bytes", "max.message.bytes", "min.insync.replicas", "segment.bytes",
        "segment.index.bytes",
    ),
    LONG: (
        "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
        "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms",
        "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
        "min.compaction.lag.ms", "retention.bytes", "retention.ms", "segment.jitter.ms",
        "segment.ms",
    ),
    DOUBLE: (
        "min.cleanable.dirty.ratio",
    ),
    LIST: (
        "cleanup.policy", "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
    ),
}


def test_a_new_topic_is_described_with_kafkas_defaults():
    (b,) = core_brokers(1)
    _create(b, "t", {})
    body = call(b, 32, 3, {"resources": [{"resource_type": 2, "resource_name": "t",
                                          "configuration_keys": None}],
                           "include_synonyms": False, "include_documentation": False})
    described = {c.name: (c.value, c.config_source, int(c.config_type), c.read_only,
                          c.is_sensitive)
                 for c in body.results[0].configs}
    kinds = {name: kind for kind, names in KAFKA_4_3_1_TYPES.items() for name in names}
    assert described == {name: (value, DEFAULT_SOURCE, kinds[name], False, False)
                         for name, value in KAFKA_4_3_1.items()}


def test_create_topics_lists_every_config_as_kafka_does():
    (b,) = core_brokers(1)
    created = _create(b, "t", {"cleanup.policy": "compact"})
    listed = {c.name: (c.value, c.config_source, c.read_only, c.is_sensitive)
              for c in created.topics[0].configs}
    expected = {name: (value, DEFAULT_SOURCE, False, False)
                for name, value in KAFKA_4_3_1.items()}
    expected["cleanup.policy"] = ("compact", TOPIC_SOURCE, False, False)
    assert listed == expected


def _create(broker, name: str, configs: dict[str, str]):
    created = call(broker, 19, 7, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "timeout": 5000, "validate_only": False})
    assert created.topics[0].error_code == ErrorCode.none
    return created
