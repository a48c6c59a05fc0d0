"""Fetch fields sent with values clients rarely send, answered as Apache Kafka 4.3.1 answers
them (observed with the same requests; issue 26's blind spot: fields only ever sent with their
default value):

- a negative byte limit (the request's max_bytes, or a partition's) fails the partition with
  UNKNOWN_SERVER_ERROR when there is something to read (Kafka's LogSegment.read throws on a
  negative size), and not when the read is empty (at the high watermark);
- a session epoch other than -1 (no session) and 0 (a full fetch) continues a fetch session
  (KIP-227); kafkaref never creates one, so the session is unknown: FETCH_SESSION_ID_NOT_FOUND
  at the top, no partitions. A full fetch naming a session id is answered as usual."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.protocol.records import build_batch

TOPIC = "odd"


@pytest.fixture
def connection(broker):
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        conn.send(19, 4, {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1,
                                      "assignments": [], "configs": []}],
                          "timeout": 5000, "validate_only": False})
        for partition in (0, 1):
            conn.send(0, 8, {"transactional_id": None, "acks": 1, "timeout": 5000, "topic_data": [
                {"name": TOPIC, "partition_data": [{"index": partition, "records": build_batch(
                    [(None, b"x" * 20, (), None)])}]}]})
        yield conn


def fetch(connection, max_bytes=1 << 20, session=(0, -1), partitions=((0, 0, 1000),)):
    """(top-level error, [(partition, error, hw, record bytes)]) of a Fetch v11."""
    answer = connection.send(1, 11, {
        "replica_id": -1, "max_wait": 10, "min_bytes": 1, "max_bytes": max_bytes,
        "isolation_level": 0, "session_id": session[0], "session_epoch": session[1],
        "rack_id": "", "forgotten_topics_data": [], "topics": [{"topic": TOPIC, "partitions": [
            {"partition": p, "fetch_offset": offset, "current_leader_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": limit}
            for p, offset, limit in partitions]}]})
    return answer.error_code, [(p.partition_index, p.error_code, p.high_watermark,
                                len(p.records or b"")) for t in answer.responses
                               for p in t.partitions]


@pytest.mark.parametrize("max_bytes, partition_max", [(-1, 1000), (1000, -1), (-5, -5)])
def test_a_negative_byte_limit_fails_a_partition_with_records_to_read(connection, max_bytes,
                                                                      partition_max):
    assert fetch(connection, max_bytes, partitions=((0, 0, partition_max),)) == (
        ErrorCode.none, [(0, ErrorCode.unknown_server_error, -1, 0)])


def test_a_negative_byte_limit_at_the_high_watermark_reads_nothing_and_fails_nothing(connection):
    assert fetch(connection, -1, partitions=((0, 1, 1000),)) == (
        ErrorCode.none, [(0, ErrorCode.none, 1, 0)])


def test_after_a_negative_request_limit_the_next_partition_still_gets_its_first_batch(connection):
    """Kafka's readFromLog: the budget left is max(0, limit - bytes read), and until a partition
    returned records the first batch comes whole."""
    error, answers = fetch(connection, -1, partitions=((0, 0, 1000), (1, 0, 1000)))
    assert error == ErrorCode.none
    assert answers[0] == (0, ErrorCode.unknown_server_error, -1, 0)
    assert answers[1][:3] == (1, ErrorCode.none, 1) and answers[1][3] > 0


@pytest.mark.parametrize("session", [(0, 1), (5, 1), (0, -2), (5, -2), (0, 2**31 - 1)])
def test_an_incremental_fetch_names_a_session_kafkaref_never_created(connection, session):
    assert fetch(connection, session=session) == (ErrorCode.fetch_session_id_not_found, [])


@pytest.mark.parametrize("session", [(5, 0), (5, -1)])
def test_a_full_fetch_naming_a_session_id_is_answered(connection, session):
    error, [(partition, partition_error, hw, size)] = fetch(connection, session=session)
    assert (error, partition_error, hw) == (ErrorCode.none, ErrorCode.none, 1) and size > 0
