"""A broker started without settings describes each broker config it knows (DescribeConfigs,
broker resource; Kafka lists hundreds, kafkaref the eight below) with Apache Kafka 4.3.1's
default, and its partitions run on the values it describes. The values below are Kafka 4.3.1's constants (kafka-server and kafka-server-common jars, read with
`javap -constants`: ReplicationConfigs.REPLICA_LAG_TIME_MAX_MS_DEFAULT = 30000,
REPLICATION_FACTOR_DEFAULT = 1; ServerLogConfigs.NUM_PARTITIONS_DEFAULT = 1,
AUTO_CREATE_TOPICS_ENABLE_DEFAULT = true, MAX_MESSAGE_BYTES_DEFAULT = 1048588,
MIN_IN_SYNC_REPLICAS_DEFAULT = 1; ServerConfigs.DELETE_TOPIC_ENABLE_DEFAULT = true).

Found by mutation testing (session 2225a175104f's survivor 00058): BrokerConfig's
replica_lag_time_max_ms default read 30001 passed the core layer, whose tests set the lag
they need. The settings kafkaref does not describe are held to Kafka's constants too
(ServerLogConfigs.LOG_INITIAL_TASK_DELAY_MS_DEFAULT = 30000, LOG_CLEANUP_INTERVAL_MS_DEFAULT =
300000; GroupCoordinatorConfig's OFFSETS_TOPIC_PARTITIONS_DEFAULT = 50,
OFFSETS_TOPIC_REPLICATION_FACTOR_DEFAULT = 3, OFFSET_COMMIT_TIMEOUT_MS_DEFAULT = 5000,
OFFSET_METADATA_MAX_SIZE_DEFAULT = 4096, GROUP_MIN_SESSION_TIMEOUT_MS_DEFAULT = 6000,
GROUP_MAX_SESSION_TIMEOUT_MS_DEFAULT = 1800000, GROUP_INITIAL_REBALANCE_DELAY_MS_DEFAULT =
3000; session 9df4313ef37b's survivor 00015, log.initial.task.delay.ms read 29999), and a
default topic's partitions run on PartitionConfig()'s defaults, the ones the core tests build
partitions with."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import (
    KAFKA_INITIAL_REBALANCE_DELAY_MS,
    BrokerConfig,
    PartitionConfig,
)
from kafkaref.properties.wire_calls import call, core_brokers, create_topic

BROKER_RESOURCE = 4
# the broker configs kafkaref describes, with Kafka 4.3.1's defaults (broker.id: this broker's)
KAFKA_4_3_1 = {
    "auto.create.topics.enable": "true",
    "broker.id": "0",
    "default.replication.factor": "1",
    "delete.topic.enable": "true",
    "message.max.bytes": "1048588",
    "min.insync.replicas": "1",
    "num.partitions": "1",
    "replica.lag.time.max.ms": "30000",
}


def _described(broker) -> dict[str, str]:
    body = call(broker, 32, 4, {"resources": [{
        "resource_type": BROKER_RESOURCE, "resource_name": "0", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    assert body.results[0].error_code == ErrorCode.none
    return {c.name: c.value for c in body.results[0].configs}


def test_a_broker_without_settings_is_described_with_kafkas_defaults():
    (b,) = core_brokers(1)
    assert _described(b) == KAFKA_4_3_1


def test_its_partitions_run_on_the_described_settings():
    (b,) = core_brokers(1)
    create_topic(b, "t", -1, -1)  # the broker's defaults
    described = _described(b)
    assert len(b.metadata.topic("t").partitions) == int(described["num.partitions"])
    config = b.replica_manager.partition(("t", 0)).config
    assert config.replica_lag_time_max_ms == int(described["replica.lag.time.max.ms"])
    assert config.min_insync_replicas == int(described["min.insync.replicas"])
    assert config.max_message_bytes == int(described["message.max.bytes"])


# BrokerConfig's settings no DescribeConfigs shows, with Kafka 4.3.1's defaults
UNDESCRIBED_KAFKA_4_3_1 = {
    "log_initial_task_delay_ms": 30_000,
    "log_retention_check_interval_ms": 300_000,
    "offsets_topic_num_partitions": 50,
    "offsets_topic_replication_factor": 3,
    "offsets_commit_timeout_ms": 5_000,
    "offset_metadata_max_bytes": 4096,
    "group_min_session_timeout_ms": 6_000,
    "group_max_session_timeout_ms": 1_800_000,
}


def test_the_undescribed_broker_settings_are_kafkas_defaults():
    config = BrokerConfig()
    assert {name: getattr(config, name) for name in UNDESCRIBED_KAFKA_4_3_1} == (
        UNDESCRIBED_KAFKA_4_3_1)
    # kafkaref's own default is 0, as Kafka's shipped server.properties sets (config.py says why)
    assert (KAFKA_INITIAL_REBALANCE_DELAY_MS, config.group_initial_rebalance_delay_ms) == (3000, 0)


def test_a_default_topic_runs_on_the_default_partition_config():
    (b,) = core_brokers(1)
    create_topic(b, "t", -1, -1)
    assert b.replica_manager.partition(("t", 0)).config == PartitionConfig()
