"""The replica fetcher asks for what Kafka's does by default: replica.fetch.max.bytes (1 MiB a
partition) and replica.fetch.response.max.bytes (10 MiB a fetch), read off the Fetch request
it encodes."""

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.replica_fetch import FetchPosition, encode_fetch_request
from kafkaref.impl.replication.fetcher import FETCH_MAX_BYTES, PARTITION_MAX_BYTES


def test_a_replica_fetch_asks_for_kafkas_default_sizes():
    frame = encode_fetch_request(7, "replica-1", 1, 500, 1, FETCH_MAX_BYTES, [
        ("t", [FetchPosition(0, 3, 10, 3, PARTITION_MAX_BYTES, 0)])])
    request = wire.decode_request(frame[4:])
    assert request.body.max_bytes == 10_485_760
    assert request.body.topics[0].partitions[0].partition_max_bytes == 1_048_576
