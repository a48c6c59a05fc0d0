"""The retention task on a 3-broker kafkaref cluster (separate processes), task every 300 ms:
records stamped in 1970 on a topic with retention.ms 60000 go from every replica, leader and
followers (each runs the task on its own log; a follower's log start also follows its
leader's), the low watermark a client reads moves to the log end, and records produced after
stay."""

import os
import time

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkaref.properties.admin_futures import future_results
from kafkaref.properties.servers import ClusterSetup
from kafkaref.properties.waiting import wait_until

pytestmark = pytest.mark.parametrize("cluster_setup", [ClusterSetup(
    brokers=3, log_initial_task_delay_ms=0, log_retention_check_interval_ms=300)],
    scope="module")


def segment_files(cluster, broker_id, topic) -> list[str]:
    directory = os.path.join(cluster.directory, f"broker-{broker_id}", f"{topic}-0")
    return sorted(n for n in os.listdir(directory) if n.endswith(".log"))


def produce(cluster, topic, count, timestamp):
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                            "linger.ms": 0, "log_level": 3})
    failed = []
    for i in range(count):
        producer.produce(topic, b"v%d" % i, timestamp=timestamp,
                         on_delivery=lambda e, m: e and failed.append(e))
        producer.poll(0)
    assert producer.flush(60) == 0 and not failed, failed


def watermarks(cluster, topic) -> tuple[int, int]:
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "w",
                            "log_level": 3})
    try:
        return consumer.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()


def test_every_replica_deletes_what_retention_ms_expired(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
    topic = NewTopic("aged", 1, 3, config={"retention.ms": "60000"})
    assert list(future_results(admin.create_topics([topic])).values()) == [None]
    produce(cluster, "aged", 20, timestamp=1000)
    wait_until(lambda: watermarks(cluster, "aged") == (20, 20), timeout_s=30,
               what="the leader's log start at its end")
    rolled = f"{20:020d}.log"  # the segment rolled at the log end, the only one left
    wait_until(lambda: all(segment_files(cluster, b, "aged") == [rolled] for b in range(3)),
               timeout_s=30, what="every replica's old segment deleted")
    produce(cluster, "aged", 5, timestamp=int(time.time() * 1000))
    time.sleep(1)  # a few runs
    assert watermarks(cluster, "aged") == (20, 25)
