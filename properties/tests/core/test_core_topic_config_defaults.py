"""A topic created without configs is described (DescribeConfigs) with Apache Kafka 4.3.1's
topic defaults, every one from the default source: the values below are Kafka's answer for a
topic in properties/differential/transcripts/kafka-4.3.1-fixed.txt (its two overrides replaced
by the broker defaults the answer's synonyms name; min.insync.replicas and
unclean.leader.election.enable, which that transcript normalises, are Kafka's documented 1 and
false).

Found by mutation testing (session 79fa682's survivor 00219): Long.MAX_VALUE, the default of
flush.messages, flush.ms and max.compaction.lag.ms, read one less passed the core layer."""

from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers

DEFAULT_SOURCE = 5
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


def test_a_new_topic_is_described_with_kafkas_defaults():
    (b,) = core_brokers(1)
    created = call(b, 19, 4, {"topics": [{
        "name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": []}], "timeout": 5000, "validate_only": False})
    assert created.topics[0].error_code == ErrorCode.none
    body = call(b, 32, 3, {"resources": [{"resource_type": 2, "resource_name": "t",
                                          "configuration_keys": None}],
                           "include_synonyms": False, "include_documentation": False})
    described = {c.name: (c.value, c.config_source) for c in body.results[0].configs}
    assert described == {name: (value, DEFAULT_SOURCE) for name, value in KAFKA_4_3_1.items()}
