"""A broker opens each partition's log once however many metadata images it applies (Kafka's
LogManager.getOrCreateLog hands back the log it has), and again only for a topic deleted and
created anew. A second open of a disk log would run recovery on a directory in use and hold a
second set of file descriptors, one per image.

Found by mutation testing (session 2225a175104f's survivor 00007): apply_metadata's
`current is None and topic.topic_id` read `or` passed the core layer; every image then opened
each hosted partition's log again (the partition kept its first log, so nothing read changed)."""

from collections import Counter

from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import alter_incremental, call, create_topic


def _brokers(count: int):
    """count core brokers on one controller, each counting the logs it opens per partition."""
    controller, clock = LocalController(), ManualClock()
    brokers, opened = [], []
    for broker_id in range(count):
        counts = Counter()
        opened.append(counts)

        def open_log(key, counts=counts):
            counts[key] += 1
            return MemoryLog()

        broker = Broker(BrokerConfig(broker_id=broker_id), clock, open_log)
        controller.register(broker, "127.0.0.1", 9092 + broker_id)
        brokers.append(broker)
    return brokers, opened


def _delete(broker, name: str) -> None:
    body = call(broker, 20, 4, {"topic_names": [name], "timeout": 5000})
    assert body.responses[0].error_code == ErrorCode.none


def test_each_partition_log_is_opened_once_per_topic():
    (b0, b1), opened = _brokers(2)
    create_topic(b0, "a", 2, 2)
    for images in range(3):  # each a new metadata image on both brokers
        create_topic(b0, f"other{images}", 1, 1)
        assert alter_incremental(b0, "a", [("retention.ms", 0, str(1000 + images))]) == (
            ErrorCode.none)
    body = call(b0, 37, 3, {"topics": [{"name": "a", "count": 3, "assignments": None}],
                            "timeout": 5000, "validate_only": False})
    assert body.results[0].error_code == ErrorCode.none
    create_topic(b0, "b", 1, 2)
    _delete(b0, "b")
    create_topic(b0, "b", 1, 2)  # a new topic of the same name: its log is opened anew
    create_topic(b0, "last", 1, 1)
    for broker, counts in zip((b0, b1), opened, strict=True):
        hosted = set(broker.replica_manager.partitions)
        assert {("a", 0), ("a", 1), ("a", 2), ("b", 0)} <= hosted
        assert {key: counts[key] for key in hosted} == {
            key: 2 if key == ("b", 0) else 1 for key in hosted}, broker.broker_id
