"""An isolation level Kafka does not know (anything but 0 and 1) fails the request that reads
it, as Apache Kafka 4.3.1 answers (IsolationLevel.forId throws; KafkaApis answers with the
request's error response): ListOffsets, every partition named (unknown ones too)
UNKNOWN_SERVER_ERROR with -1 offsets; a consumer's Fetch, the error at the top and, below
v13, the same on every partition.
Found by mutation testing's blind spot (request fields only ever sent with their default);
the differential walk now draws the level 2 too."""

import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection

FAILED = ErrorCode.unknown_server_error


@pytest.fixture
def connection(broker):
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        conn.send(19, 4, {"topics": [{"name": "iso", "num_partitions": 1, "replication_factor": 1,
                                      "assignments": [], "configs": []}],
                          "timeout": 5000, "validate_only": False})
        yield conn


def list_offsets(connection, version, level):
    partitions = [{"partition_index": i, "timestamp": -1, "current_leader_epoch": -1}
                  for i in (0, 7)]
    return connection.send(2, version, {"replica_id": -1, "isolation_level": level, "topics": [
        {"name": "iso", "partitions": partitions},
        {"name": "nosuch", "partitions": partitions[:1]}]}).topics


def fetch(connection, version, level, topic_id=None):
    topic = {"topic": "iso", "topic_id": topic_id or uuid.UUID(int=0), "partitions": [{
        "partition": 0, "fetch_offset": 0, "current_leader_epoch": -1, "log_start_offset": -1,
        "partition_max_bytes": 1000}]}
    return connection.send(1, version, {
        "replica_id": -1, "max_wait": 10, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": level, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [], "topics": [topic]})


@pytest.mark.parametrize("version", [2, 5, 9, 11])
@pytest.mark.parametrize("level", [2, -1])
def test_list_offsets_at_an_unknown_isolation_level_fails_every_partition(connection, version,
                                                                          level):
    topics = list_offsets(connection, version, level)
    assert [(t.name, [(p.partition_index, p.error_code, p.offset, p.timestamp)
                      for p in t.partitions]) for t in topics] == [
        ("iso", [(0, FAILED, -1, -1), (7, FAILED, -1, -1)]), ("nosuch", [(0, FAILED, -1, -1)])]


@pytest.mark.parametrize("level", [0, 1])
def test_list_offsets_at_a_known_isolation_level_answers(connection, level):
    iso, nosuch = list_offsets(connection, 5, level)
    assert [p.error_code for p in iso.partitions] == [ErrorCode.none,
                                                      ErrorCode.unknown_topic_or_partition]


@pytest.mark.parametrize("version", [4, 11, 16])
@pytest.mark.parametrize("level", [2, -1])
def test_a_consumer_fetch_at_an_unknown_isolation_level_fails(connection, version, level):
    topic_id = None
    if version >= 13:
        topic_id = connection.send(3, 12, {"topics": [{"name": "iso"}]}).topics[0].topic_id
    answer = fetch(connection, version, level, topic_id)
    if version >= 7:
        assert answer.error_code == FAILED
    if version >= 13:  # the top-level error alone (FetchRequest.getErrorResponse)
        assert answer.responses == ()
        return
    (partition,) = answer.responses[0].partitions
    assert (partition.error_code, partition.high_watermark, partition.records) == (FAILED, -1, b"")


def test_a_fetch_naming_only_unknown_topic_ids_is_answered_before_the_level_is_read(connection):
    """Kafka refuses the unknown ids first and, with nothing left to read, never reads the
    level (observed: UNKNOWN_TOPIC_ID, the top-level error NONE)."""
    answer = fetch(connection, 16, 2, uuid.uuid4())
    assert answer.error_code == ErrorCode.none
    assert answer.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_id
