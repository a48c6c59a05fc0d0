"""An idempotent producer's retry is a duplicate only within the last five batches the broker
remembers for it (Kafka's ProducerStateEntry: NUM_BATCHES_TO_RETAIN = 5): a retry of one of
them is answered with the offset it was written at, one older is OUT_OF_ORDER_SEQUENCE_NUMBER.
Apache Kafka 4.3.1 answers the sequence below exactly so (checked with the same requests)."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.protocol.records import build_batch


def test_retries_within_the_last_five_batches_are_duplicates_an_older_one_is_out_of_order(broker):
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        conn.send(19, 4, {"topics": [{"name": "dd", "num_partitions": 1, "replication_factor": 1,
                                      "assignments": [], "configs": []}],
                          "timeout": 5000, "validate_only": False})
        producer = conn.send(22, 1, {"transactional_id": None, "transaction_timeout": 60000})

        def send(sequence: int) -> tuple[int, int]:
            batch = build_batch([(None, b"v%d" % sequence, (), None)],
                                producer_id=producer.producer_id,
                                producer_epoch=producer.producer_epoch, base_sequence=sequence)
            answer = conn.send(0, 8, {"transactional_id": None, "acks": -1, "timeout": 5000,
                                      "topic_data": [{"name": "dd", "partition_data": [
                                          {"index": 0, "records": batch}]}]}
                               ).responses[0].partition_responses[0]
            return answer.error_code, answer.base_offset

        assert [send(s) for s in range(6)] == [(ErrorCode.none, s) for s in range(6)]
        assert [send(s) for s in (5, 4, 1)] == [(ErrorCode.none, s) for s in (5, 4, 1)]
        assert send(0) == (ErrorCode.out_of_order_sequence_number, -1)
