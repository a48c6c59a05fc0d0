"""A partition remembers a producer's last five batches, as Kafka's ProducerStateEntry
(NUM_BATCHES_TO_RETAIN = 5): a retry of one of them is a duplicate, answered with its first
offsets and not appended; a retry of the sixth most recent is out of order.

Found by mutation testing (session 2225a175104f's survivor 00201): PRODUCER_STATE_MAX_BATCHES
read 6 passed the core layer, whose retries were of the last batch or two."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.wire_calls import call, core_brokers, create_topic


def _produce(broker, sequence: int):
    batch = build_batch([(b"k", b"v%d" % sequence, (), None)], producer_id=3, producer_epoch=0,
                        base_sequence=sequence)
    body = call(broker, 0, 9, {"transactional_id": None, "acks": 1, "timeout": 1000,
                               "topic_data": [{"name": "t", "partition_data": [
                                   {"index": 0, "records": batch}]}]})
    answer = body.responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


def test_the_last_five_batches_are_duplicates_and_the_sixth_is_out_of_order():
    (b,) = core_brokers(1)
    create_topic(b, "t")
    for sequence in range(7):
        assert _produce(b, sequence) == (ErrorCode.none, sequence)
    for sequence in range(2, 7):  # the last five: each its first offset again
        assert _produce(b, sequence) == (ErrorCode.none, sequence)
    assert _produce(b, 1)[0] == ErrorCode.out_of_order_sequence_number
    assert b.replica_manager.partition(("t", 0)).log_end_offset == 7
