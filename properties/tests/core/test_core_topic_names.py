"""Which topic names are legal, as Kafka's Topic.validate says, through the handlers that check
them (no sockets): 1 to 249 characters of [a-zA-Z0-9._-], neither "." nor "..". CreateTopics
(validate_only) refuses any other with INVALID_TOPIC_EXCEPTION, and Metadata answers it
INVALID_TOPIC_EXCEPTION where a legal unknown name is UNKNOWN_TOPIC_OR_PARTITION. (DeleteTopics
checks no name: test_core_admin.py.)

Found by mutation testing (session 79fa682's survivor 00128): the longest name 249 read as 250
passed the core layer (only a server test sent a 250-character name)."""

import datetime
import functools
import re

from hypothesis import example, given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers

KAFKA_LEGAL = re.compile(r"[a-zA-Z0-9._-]{1,249}")  # Topic.MAX_NAME_LENGTH, Topic.LEGAL_CHARS
NAMES = st.one_of(
    st.text(alphabet="ab._-Z9 /é", max_size=6),
    st.builds(lambda n, c: c * n, st.integers(245, 252), st.sampled_from("x._ ")))


def kafka_accepts(name: str) -> bool:
    return bool(KAFKA_LEGAL.fullmatch(name)) and name not in (".", "..")


@functools.cache
def broker():
    (b,) = core_brokers(1)
    return b


def answers(name: str) -> tuple[ErrorCode, ErrorCode]:
    """(CreateTopics validate_only, Metadata) for a name no topic has."""
    b = broker()
    created = call(b, 19, 4, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": []}], "timeout": datetime.timedelta(seconds=5), "validate_only": True})
    metadata = call(b, 3, 8, {"topics": [{"name": name}], "allow_auto_topic_creation": False,
                              "include_cluster_authorized_operations": False,
                              "include_topic_authorized_operations": False})
    return created.topics[0].error_code, metadata.topics[0].error_code


@given(NAMES)
@example("x" * 249)
@example("x" * 250)
def test_a_name_is_legal_exactly_when_kafka_says_so(name):
    if kafka_accepts(name):
        expected = (ErrorCode.none, ErrorCode.unknown_topic_or_partition)
    else:
        expected = (ErrorCode.invalid_topic_exception,) * 2
    assert answers(name) == expected
