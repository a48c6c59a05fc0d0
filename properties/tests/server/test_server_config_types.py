"""DescribeConfigs names each topic config's type as Kafka's ConfigDef does (the ConfigType enum:
BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7), one config of each type; clients (the
Java admin client, kcat) parse values by it."""

from kafkaref.impl.client.connection import KafkaConnection

KAFKA_TYPES = {"preallocate": 1, "compression.type": 2, "max.message.bytes": 3,
               "retention.ms": 5, "min.cleanable.dirty.ratio": 6, "cleanup.policy": 7}


def test_topic_configs_are_described_with_kafkas_types(broker):
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        conn.send(19, 4, {"topics": [{"name": "typed", "num_partitions": 1,
                                      "replication_factor": 1, "assignments": [],
                                      "configs": []}], "timeout": 5000, "validate_only": False})
        answer = conn.send(32, 4, {"resources": [{"resource_type": 2, "resource_name": "typed",
                                                  "configuration_keys": sorted(KAFKA_TYPES)}],
                                   "include_synonyms": False, "include_documentation": False})
    described = {c.name: int(c.config_type) for c in answer.results[0].configs}
    assert described == KAFKA_TYPES
