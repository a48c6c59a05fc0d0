"""An idempotent producer's sequence numbers wrap from Integer.MAX_VALUE to 0 (Kafka's
DefaultRecordBatch.incrementSequence and ProducerAppendInfo.checkSequence): after a batch ending
at sequence 2**31 - 1 the next batch starts at 0, and a batch may itself wrap (its last sequence
is (base + count - 1) mod 2**31); a batch starting anywhere else is out of order.

Found by mutation testing (session 2225a175104f's survivor 00224): producer_state's own
INT32_MAX read 2**32 - 1 passed the core layer, no test's sequences came near the wrap; the
module now takes records.INT32_MAX, the one statement of the bound.

A batch without a sequence (NO_SEQUENCE, -1) from a producer id has no last sequence either
(DefaultRecordBatch.lastSequence answers NO_SEQUENCE), so the producer's next batch in sequence
starts at 0: session 9df4313ef37b's survivor 00287, last_sequence's -1 read 0, asked for 1."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import INT32_MAX, build_batch
from kafkaref.properties.wire_calls import call, core_brokers, create_topic

PRODUCER_ID = 7


def _produce(broker, base_sequence: int, count: int) -> ErrorCode:
    batch = build_batch([(b"k", b"v%d" % i, (), None) for i in range(count)],
                        producer_id=PRODUCER_ID, producer_epoch=0, base_sequence=base_sequence)
    body = call(broker, 0, 9, {"transactional_id": None, "acks": 1, "timeout": 1000,
                               "topic_data": [{"name": "t", "partition_data": [
                                   {"index": 0, "records": batch}]}]})
    return body.responses[0].partition_responses[0].error_code


@pytest.fixture
def broker():
    (b,) = core_brokers(1)
    create_topic(b, "t")
    return b


@pytest.mark.parametrize("count", [1, 2, 3])
def test_the_sequence_after_the_largest_is_zero(broker, count):
    assert _produce(broker, INT32_MAX - count + 1, count) == ErrorCode.none  # ends at the max
    assert _produce(broker, 1, 1) == ErrorCode.out_of_order_sequence_number
    assert _produce(broker, 0, 2) == ErrorCode.none  # wrapped
    assert _produce(broker, 2, 1) == ErrorCode.none


@pytest.mark.parametrize("count", [2, 3, 5])
def test_a_batch_may_wrap(broker, count):
    assert _produce(broker, INT32_MAX - 1, 1) == ErrorCode.none
    assert _produce(broker, INT32_MAX, count) == ErrorCode.none  # MAX, 0, 1, ...
    assert _produce(broker, 0, 1) == ErrorCode.out_of_order_sequence_number
    assert _produce(broker, count - 1, 1) == ErrorCode.none


def test_after_a_batch_without_a_sequence_the_next_starts_at_zero(broker):
    assert _produce(broker, -1, 1) == ErrorCode.none  # a new producer: any sequence
    assert _produce(broker, 0, 1) == ErrorCode.none
