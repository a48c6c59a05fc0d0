"""A follower fetching with Fetch v4, which carries no log start offset (the field comes in v5),
counts with Kafka's schema default for it, -1 (FetchRequest.json: logStartOffset, default -1):
its leader's low watermark is -1 until it says more, and a DeleteRecords that waits for it times
out naming that low watermark.

Found by mutation testing (session 79fa682's survivor 00255: the default read as -2 passed the
core layer, no test fetching as a follower below v5)."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.properties.wire_calls import call, call_later, core_brokers


def test_a_v4_followers_log_start_is_kafkas_default():
    leader, _ = core_brokers(2)
    assert call(leader, 19, 7, {"topics": [{
        "name": "t", "num_partitions": 1, "replication_factor": 2, "assignments": [],
        "configs": []}], "timeout": 5000, "validate_only": False}).topics[0].error_code == 0
    assert leader.metadata.topic("t").partitions[0].leader == 0
    call(leader, 0, 9, {"transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": [{
        "name": "t", "partition_data": [{"index": 0, "records": build_batch(
            [(b"k", b"v", (), None)] * 2)}]}]})
    fetched = call(leader, 1, 4, {  # follower 1, caught up: the hw moves to 2
        "replica_id": 1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "topics": [{"topic": "t", "partitions": [{
            "partition": 0, "fetch_offset": 2, "partition_max_bytes": 1 << 20}]}]})
    assert fetched.responses[0].partitions[0].error_code == ErrorCode.none
    assert leader.replica_manager.partition(("t", 0)).high_watermark == 2
    out = call_later(leader, 21, 2, {"timeout": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "offset": 1}]}]})
    leader.advance_clock(leader.replica_manager.clock() + 1)
    [body] = out
    answer = body.topics[0].partitions[0]
    assert (answer.error_code, answer.low_watermark) == (ErrorCode.request_timed_out, -1)
