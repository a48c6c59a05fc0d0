"""DescribeTopicPartitions from a cursor at any partition index: Kafka's
DescribeTopicPartitionsRequestHandler refuses only a negative one ("cursor partition must be
valid": every topic named answered INVALID_REQUEST); from index 0 on, the cursor's topic is
answered from that partition, and the topics after it in full.

A topic named that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION with the zero topic id
(Uuid.ZERO_UUID), as Kafka answers it.

Found by mutation testing (session 9df4313ef37b's survivor 00298: `partition_index < 0` read
`<= 0` refused the cursor at partition 0, which the core tests never sent; 00185: the unknown
topic's id read UUID 1)."""

import uuid

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers, create_topic


@given(index=st.integers(-3, 2))  # the cursor's topic has partitions 0-2
def test_a_cursor_is_refused_only_below_partition_zero(index):
    (b,) = core_brokers(1)
    create_topic(b, "a", 3)
    create_topic(b, "b", 2)
    body = call(b, 75, 0, {"topics": [{"name": "a"}, {"name": "b"}],
                           "response_partition_limit": 100,
                           "cursor": {"topic_name": "a", "partition_index": index}})
    answered = [(t.name, t.error_code, [p.partition_index for p in t.partitions])
                for t in body.topics]
    if index < 0:
        assert answered == [("a", ErrorCode.invalid_request, []),
                            ("b", ErrorCode.invalid_request, [])]
    else:
        assert answered == [("a", ErrorCode.none, list(range(index, 3))),
                            ("b", ErrorCode.none, [0, 1])]


def test_an_unknown_topic_is_answered_with_the_zero_id():
    (b,) = core_brokers(1)
    body = call(b, 75, 0, {"topics": [{"name": "nope"}], "response_partition_limit": 10,
                           "cursor": None})
    (topic,) = body.topics
    # the zero id on the wire, which the decoder reads as no id
    assert topic.topic_id in (None, uuid.UUID(int=0))
    assert (topic.name, topic.error_code) == ("nope", ErrorCode.unknown_topic_or_partition)
