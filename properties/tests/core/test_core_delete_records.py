"""DeleteRecords through the wire codec and the core brokers (no sockets): the log start moves
up to the requested offset (at most the hw), reads below it are OFFSET_OUT_OF_RANGE, ListOffsets
EARLIEST answers it, the answer waits for the live followers to have it (the low watermark), and
a follower that has it keeps it when it becomes leader. What Apache Kafka does (ReplicaManager
.deleteRecords, Partition.deleteRecordsOnLeader, DelayedDeleteRecords)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.replication.apply import apply_fetch_response, start_at_leader_log_start
from kafkaref.properties.wire_calls import call, core_brokers, replicate_once

KEY = ("t", 0)


def delete(broker, offset, version=2, timeout=1000, topic="t", partition=0):
    body = call(broker, 21, version, {"timeout": timeout, "topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "offset": offset}]}]})
    if body == "pending":
        return body
    answer = body.topics[0].partitions[0]
    return answer.error_code, answer.low_watermark


def create(broker, name, replication_factor=1, configs=()):
    body = call(broker, 19, 7, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": replication_factor,
        "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": 5000, "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none


def produce(broker):
    call(broker, 0, 12, {"transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": [{
        "name": "t", "partition_data": [{"index": 0, "records": build_batch(
            [(b"k", b"v", (), None)])}]}]})


def produced(broker, count):
    for _ in range(count):
        produce(broker)


def fetch_error(broker, offset):
    body = call(broker, 1, 12, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [{"topic": "t", "partitions": [{
            "partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}]}]})
    answer = body.responses[0].partitions[0]
    return answer.error_code, answer.log_start_offset


def earliest(broker):
    return broker.replica_manager.list_offset(KEY, -2).offset


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_log_start_and_what_is_below_is_gone(version):
    (b,) = core_brokers(1)
    create(b, "t")
    produced(b, 5)
    assert delete(b, 3, version) == (ErrorCode.none, 3)
    assert earliest(b) == 3
    assert fetch_error(b, 2)[0] == ErrorCode.offset_out_of_range
    assert fetch_error(b, 3) == (ErrorCode.none, 3)
    assert delete(b, 1, version) == (ErrorCode.none, 3)  # never back
    assert delete(b, -1, version) == (ErrorCode.none, 5)  # -1: up to the high watermark


def test_delete_records_refusals_as_kafka_answers_them():
    (b,) = core_brokers(1)
    create(b, "t")
    create(b, "compacted", configs=[("cleanup.policy", "compact")])
    produced(b, 2)
    assert delete(b, 3) == (ErrorCode.offset_out_of_range, -1)  # above the hw
    assert delete(b, -2) == (ErrorCode.offset_out_of_range, -1)
    assert delete(b, 0, partition=4) == (ErrorCode.unknown_topic_or_partition, -1)
    assert delete(b, 0, topic="compacted") == (ErrorCode.policy_violation, -1)
    call(b, 10, 2, {"key": "g", "key_type": 0})  # creates __consumer_offsets
    assert delete(b, 0, topic="__consumer_offsets") == (ErrorCode.invalid_topic_exception, -1)


def replicate(leader, follower):
    return replicate_once(leader, follower, KEY)


def leader_and_follower():
    b0, b1 = core_brokers(2)
    create(b0, "t", replication_factor=2)
    leading = b0.metadata.topic("t").partitions[0].leader
    return (b0, b1) if leading == 0 else (b1, b0)


def test_the_answer_waits_for_the_followers_log_start():
    """The low watermark counts every live follower (one that has not fetched in this epoch as
    -1): the request waits in purgatory until the follower's next fetch carries the new start."""
    leader, follower = leader_and_follower()
    for _ in range(4):
        produce(leader)
        replicate(leader, follower)
    replicate(leader, follower)  # the follower learns the hw
    out = []
    leader.replica_manager.delete_records(5000, {KEY: 2}, out.append)
    assert out == []  # parked: the follower still says 0
    replicate(leader, follower)  # it learns the leader's start (2) from the answer ...
    assert follower.replica_manager.partition(KEY).log.log_start_offset == 2
    assert out == []
    replicate(leader, follower)  # ... and its next fetch says so
    (results,) = out
    assert (results[KEY].error, results[KEY].low_watermark) == (ErrorCode.none, 2)


def replicated_once():
    """A leader with one produced batch, copied to its follower, which knows the hw."""
    leader, follower = leader_and_follower()
    produce(leader)
    replicate(leader, follower)
    replicate(leader, follower)
    return leader, follower


def test_a_waiting_deletion_times_out_with_the_low_watermark_it_first_saw():
    leader, follower = replicated_once()
    out = []
    leader.replica_manager.delete_records(100, {KEY: 1}, out.append)
    leader.clock.now_ms += 101
    leader.advance_clock()
    (results,) = out
    assert (results[KEY].error, results[KEY].low_watermark) == (ErrorCode.request_timed_out, 0)


def test_a_follower_on_a_fenced_broker_does_not_hold_the_answer():
    leader, follower = replicated_once()
    leader.replica_manager.live_broker = lambda broker_id: broker_id == leader.broker_id
    assert delete(leader, 1) == (ErrorCode.none, 1)


def test_the_log_start_survives_a_leader_change_and_a_lagging_follower_starts_there():
    leader, follower = leader_and_follower()
    for _ in range(3):
        produce(leader)
        replicate(leader, follower)
    replicate(leader, follower)
    out = []
    leader.replica_manager.delete_records(5000, {KEY: 2}, out.append)
    replicate(leader, follower)
    replicate(leader, follower)
    assert out and out[0][KEY].error == ErrorCode.none
    # the follower takes over: its log start is the deleted one
    follower.replica_manager.become_leader(KEY, follower.replica_manager.partition(KEY).config,
                                           1, (0, 1), (0, 1))
    assert earliest(follower) == 2
    # a follower whose log ends below its leader's start starts again there
    lagging = leader.replica_manager.partition(KEY)
    lagging.truncate_to(1)
    lagging.make_follower(follower.broker_id, 1, (0, 1))
    assert start_at_leader_log_start(lagging, 2)
    assert (lagging.log.log_start_offset, lagging.log_end_offset) == (2, 2)


def test_an_empty_follower_whose_start_falls_inside_a_batch_starts_at_the_batch():
    """DeleteRecords offsets need not be batch aligned: a follower started again at its
    leader's log start (1) is sent the batch holding it ([0, 1]). As Kafka's follower
    (UnexpectedAppendOffsetException in appendRecordsToFollowerOrFutureReplica), it starts its
    empty log at the batch's base offset, appends, and takes the leader's log start back once
    its hw passes it; before, it dropped the batch and fetched it again forever."""
    _, follower = leader_and_follower()
    partition = follower.replica_manager.partition(KEY)
    partition.truncate_fully_and_start_at(1)
    sent = (build_batch([(b"k", b"a", (), None), (b"k", b"b", (), None)], base_offset=0,
                        partition_leader_epoch=partition.leader_epoch)
            + build_batch([(b"k", b"c", (), None)], base_offset=2,
                          partition_leader_epoch=partition.leader_epoch))
    assert apply_fetch_response(partition, ErrorCode.none, None, sent, 2, 1) == "appended"
    assert (partition.log.log_start_offset, partition.log_end_offset,
            partition.high_watermark) == (1, 3, 2)
