"""A real client (confluent_kafka, librdkafka) against a kafkaref broker: a compacted topic
refuses records without a key with INVALID_RECORD delivery errors and keeps the keyed ones, as
Kafka does (librdkafka's test 0011_produce_batch expects this). docs/semantics.md,
"Compacted topics"."""

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkaref.properties.admin_futures import future_results
from kafkaref.properties.consumer_groups import read_partition

TIMEOUT_S = 30


def create_compacted(address, name):
    admin = AdminClient({"bootstrap.servers": address, "log_level": 3})
    topic = NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})
    assert future_results(admin.create_topics([topic])) == {name: None}


@pytest.mark.parametrize("compression", ["none", "lz4", "zstd"])
def test_keyless_records_are_refused_and_keyed_ones_kept(broker, compression):
    create_compacted(broker.address, "c")
    producer = ck.Producer({"bootstrap.servers": broker.address, "acks": "all",
                            "compression.type": compression, "linger.ms": 0,
                            "retries": 0, "log_level": 3})
    reports = {}

    def report(value):
        return lambda err, msg: reports.__setitem__(value, err)

    for i in range(3):
        producer.produce("c", b"keyless-%d" % i, partition=0, on_delivery=report(b"keyless-%d" % i))
        producer.flush(TIMEOUT_S)  # one batch each: a keyless record sinks its whole batch
        producer.produce("c", b"keyed-%d" % i, key=b"k%d" % i, partition=0,
                         on_delivery=report(b"keyed-%d" % i))
        producer.flush(TIMEOUT_S)
    assert len(reports) == 6
    for i in range(3):
        err = reports[b"keyless-%d" % i]
        assert err is not None and err.code() == ck.KafkaError.INVALID_RECORD, err
        assert reports[b"keyed-%d" % i] is None
    assert read_partition(broker.address, "c") == [b"keyed-0", b"keyed-1", b"keyed-2"]
