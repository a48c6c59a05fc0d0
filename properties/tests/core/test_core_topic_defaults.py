"""CreateTopics fills in what a request leaves to the broker as Kafka does: a partition count
or replication factor of -1 takes the broker's num.partitions / default.replication.factor, any
other (positive) one is taken as asked, with or without validate_only, in the answer (v5+) and
in the topic created.

Found by mutation testing (session 79fa682's survivor 00181): `replication_factor > 0` read as
`> 1` (a topic asking for one replica got the broker's default instead) passed the core layer,
whose brokers all had the default of one replica."""

import datetime

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers

BROKERS = 3


def create(broker, name: str, partitions: int, rf: int, validate_only: bool):
    body = call(broker, 19, 5, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": rf,
        "assignments": [], "configs": []}], "timeout": datetime.timedelta(seconds=5),
        "validate_only": validate_only})
    [topic] = body.topics
    return topic.error_code, topic.num_partitions, topic.replication_factor


@given(default_partitions=st.integers(1, 3), default_rf=st.integers(1, BROKERS),
       partitions=st.sampled_from([-1, 1, 2]), rf=st.sampled_from([-1, 1, 2, BROKERS]))
def test_minus_one_takes_the_brokers_default_and_any_other_count_is_taken(
        default_partitions, default_rf, partitions, rf):
    b = core_brokers(BROKERS, default_partitions=default_partitions,
                     default_replication_factor=default_rf)[0]
    expected = (partitions if partitions > 0 else default_partitions,
                rf if rf > 0 else default_rf)
    assert create(b, "checked", partitions, rf, True) == (ErrorCode.none, *expected)
    assert create(b, "made", partitions, rf, False) == (ErrorCode.none, *expected)
    topic = b.metadata.topic("made")
    assert (len(topic.partitions), {len(p.replicas) for p in topic.partitions}) == (
        expected[0], {expected[1]})
