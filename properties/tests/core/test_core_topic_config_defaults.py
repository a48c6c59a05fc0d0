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
    "cleanup.policy": ("delete", LIST),
    "compression.gzip.level": ("-1", INT),
    "compression.lz4.level": ("9", INT),
    "compression.type": ("producer", STRING),
    "compression.zstd.level": ("3", INT),
    "delete.retention.ms": ("86400000", LONG),
    "file.delete.delay.ms": ("60000", LONG),
    "flush.messages": ("9223372036854775807", LONG),
    "flush.ms": ("9223372036854775807", LONG),
    "follower.replication.throttled.replicas": ("", LIST),
    "index.interval.bytes": ("4096", INT),
    "leader.replication.throttled.replicas": ("", LIST),
    "local.retention.bytes": ("-2", LONG),
    "local.retention.ms": ("-2", LONG),
    "max.compaction.lag.ms": ("9223372036854775807", LONG),
    "max.message.bytes": ("1048588", INT),
    "message.timestamp.after.max.ms": ("3600000", LONG),
    "message.timestamp.before.max.ms": ("9223372036854775807", LONG),
    "message.timestamp.type": ("CreateTime", STRING),
    "min.cleanable.dirty.ratio": ("0.5", DOUBLE),
    "min.compaction.lag.ms": ("0", LONG),
    "min.insync.replicas": ("1", INT),
    "preallocate": ("false", BOOLEAN),
    "remote.log.copy.disable": ("false", BOOLEAN),
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



def test_a_new_topic_is_described_with_kafkas_defaults():
    (b,) = core_brokers(1)
    _create(b, "t", {})
    body = call(b, 32, 3, {"resources": [{"resource_type": 2, "resource_name": "t",
                                          "configuration_keys": None}],
                           "include_synonyms": False, "include_documentation": False})
    described = {c.name: (c.value, c.config_source, int(c.config_type), c.read_only,
                          c.is_sensitive)
                 for c in body.results[0].configs}
    assert described == {name: (value, DEFAULT_SOURCE, kind, False, False)
                         for name, (value, kind) in KAFKA_4_3_1.items()}


def test_create_topics_lists_every_config_as_kafka_does():
    (b,) = core_brokers(1)
    created = _create(b, "t", {"cleanup.policy": "compact"})
    listed = {c.name: (c.value, c.config_source, c.read_only, c.is_sensitive)
              for c in created.topics[0].configs}
    expected = {name: (value, DEFAULT_SOURCE, False, False)
                for name, (value, _) in KAFKA_4_3_1.items()}
    expected["cleanup.policy"] = ("compact", TOPIC_SOURCE, False, False)
    assert listed == expected


def _create(broker, name: str, configs: dict[str, str]):
    created = call(broker, 19, 7, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "timeout": 5000, "validate_only": False})
    assert created.topics[0].error_code == ErrorCode.none
    return created
