"""Checks of the admin APIs an admin client needs beyond CreateTopics: DeleteTopics,
CreatePartitions, DescribeConfigs and (Incremental)AlterConfigs (protocol guide; KIP-339,
KIP-516). Each skips when the broker does not advertise the API. Admin changes reach every
broker eventually (Kafka's metadata propagation), so the checks wait for what they then read."""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import check
from kafkaref.chaos.conform.probe import Probe, batch_now
from kafkaref.impl.protocol.list_offsets import LATEST

TOPIC_RESOURCE, DYNAMIC_TOPIC_CONFIG = 2, 1
PROPAGATION_S = 15.0


def _until(probe: Probe, condition, what: str, response=lambda: "") -> None:
    """Wait up to PROPAGATION_S for condition(); fail with `what` otherwise."""
    deadline = time.monotonic() + PROPAGATION_S
    while not condition():
        if time.monotonic() > deadline:
            raise probe.fail(f"{what} after {PROPAGATION_S:.0f} s", response=response())
        time.sleep(0.1)


def _topic_error(probe: Probe, topic: str, conn=None) -> ErrorCode:
    found = [t for t in probe.metadata([topic], conn).topics if t.name == topic]
    return ErrorCode(int(found[0].error_code)) if found else ErrorCode.unknown_topic_or_partition


def _gone_everywhere(probe: Probe, topic: str) -> bool:
    """Every broker's Metadata leaves the topic out: each has applied the deletion (until then
    a broker may still serve the old partition under the same name)."""
    for broker in probe.metadata([]).brokers:
        conn = probe.connect((broker.host, broker.port))
        try:
            if _topic_error(probe, topic, conn) != ErrorCode.unknown_topic_or_partition:
                return False
        finally:
            conn.close()
    return True


def _create_again(probe: Probe, label: str) -> str:
    """CreateTopics for a name just deleted: TOPIC_ALREADY_EXISTS is retried while the deletion
    completes (Kafka deletes asynchronously)."""
    deadline = time.monotonic() + PROPAGATION_S
    while True:
        try:
            return probe.create_topic(label)
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _delete(probe: Probe, topic: str) -> dict:
    """DeleteTopics of topic, answered NONE, and waited for until every broker's Metadata
    leaves it out; returns the request."""
    request = {"topic_names": [topic], "topics": [{"name": topic, "topic_id": None}],  # v6
               "timeout": int(probe.timeout_s * 1000)}
    answer = probe.connect().call(20, request)
    probe.expect_error(answer.responses[0].error_code, ErrorCode.none, f"DeleteTopics of {topic}",
                       answer)
    _until(probe, lambda: _gone_everywhere(probe, topic),
           "the deleted topic is still in some broker's Metadata")
    return request


@check("delete_topic", "admin", "protocol: DeleteTopics; KIP-516 (a topic created again under "
       "the same name is a new topic)")
def delete_topic(probe: Probe):
    """A deleted topic leaves every broker's Metadata (UNKNOWN_TOPIC_OR_PARTITION); deleting it
    again answers UNKNOWN_TOPIC_OR_PARTITION; a topic created again under the same name starts
    empty."""
    probe.version(20)
    topic = probe.create_topic("delete")
    probe.produce_ok(topic, batch_now([(None, b"old", (), None)]))
    request = _delete(probe, topic)
    again = probe.connect().call(20, request)
    probe.expect_error(again.responses[0].error_code, ErrorCode.unknown_topic_or_partition,
                       "DeleteTopics of a topic that no longer exists", again, soft=True)
    probe.forget_leaders()
    _create_again(probe, "delete")
    end = probe.offset_of(topic, LATEST)
    probe.expect(end == 0, f"the recreated topic starts at offset {end}",
                 expected="0: a new topic, none of the deleted one's records")


@check("records_outlive_other_topics", "admin", "Kafka: a topic's log goes only with that "
       "topic's removal (DeleteTopics; the broker acts on the topic's removal record), never "
       "with another topic's creation or deletion")
def records_outlive_other_topics(probe: Probe):
    """Records acknowledged in a topic are all read back, at the offsets they were acknowledged
    at, after another topic was created, written and deleted: metadata changes about other
    topics leave its log as it was (and its log end where it was)."""
    probe.version(20)
    topic = probe.create_topic("outlive")
    acked = [b"o%d" % i for i in range(6)]
    for i in range(0, len(acked), 2):
        probe.produce_ok(topic, batch_now([(None, v, (), None) for v in acked[i:i + 2]]))
    other = probe.create_topic("other")
    probe.produce_ok(other, batch_now([(None, b"x", (), None)]))
    _delete(probe, other)
    probe.forget_leaders()
    end = probe.offset_of(topic, LATEST)
    probe.expect(end == len(acked), f"after another topic came and went, the log ends at {end}",
                 expected=f"{len(acked)}, every acknowledged record still there")
    values = [r.value for r in probe.read_all(topic, end=len(acked))]
    probe.expect(values == acked, "acknowledged records lost or changed after another topic "
                 "came and went", response=str(values), expected=str(acked))
    return f"{len(acked)} records read back after another topic was created and deleted"


@check("describe_topic_partitions_cursor", "admin", "KIP-966 (DescribeTopicPartitions): "
       "pages of at most response_partition_limit partitions, the next page from the cursor")
def describe_topic_partitions_cursor(probe: Probe):
    """DescribeTopicPartitions of a named 3-partition topic pages it: with a limit of 1
    partition the answer holds partition 0 and a cursor naming the topic and partition 1; asked
    again from a cursor at partition 1 (the topic still named), it answers partitions 1 and 2
    without an error."""
    probe.version(75)
    topic = probe.create_topic("paged", partitions=3)
    conn = probe.connect()

    def describe(limit, cursor=None):
        request = {"topics": [{"name": topic}], "response_partition_limit": limit,
                   "cursor": cursor}
        answer = conn.call(75, request)
        [described] = [t for t in answer.topics if t.name == topic]
        probe.expect_error(described.error_code, ErrorCode.none,
                           f"DescribeTopicPartitions of {topic} (cursor {cursor})", answer)
        return answer, sorted(p.partition_index for p in described.partitions)

    answer, first = describe(1)
    cursor = answer.next_cursor
    probe.expect(first == [0] and cursor is not None and (cursor.topic_name, cursor.partition_index)
                 == (topic, 1), f"a page of 1 answered partitions {first}, cursor {cursor}",
                 response=answer, expected=f"[0], cursor ({topic}, 1)")
    answer, rest = describe(10, {"topic_name": topic, "partition_index": 1})
    probe.expect(rest == [1, 2], f"from the cursor at partition 1: partitions {rest}",
                 response=answer, expected="[1, 2]")
    return "pages [0], then [1, 2] from the cursor"


@check("create_partitions", "admin", "protocol: CreatePartitions (KIP-195): partitions can only "
       "be added")
def create_partitions(probe: Probe):
    """A topic grown from 1 to 3 partitions lists 3 in Metadata and its new partition takes
    writes; asking for fewer partitions than it has answers INVALID_PARTITIONS; validate_only
    changes nothing."""
    probe.version(37)
    topic = probe.create_topic("grow")

    def grow(count: int, validate_only: bool = False):
        answer = probe.connect().call(37, {"topics": [{
            "name": topic, "count": count, "assignments": None}],
            "timeout": int(probe.timeout_s * 1000), "validate_only": validate_only})
        return answer, answer.results[0].error_code

    answer, error = grow(5, validate_only=True)
    probe.expect_error(error, ErrorCode.none, "CreatePartitions validate_only", answer)
    answer, error = grow(3)
    probe.expect_error(error, ErrorCode.none, "CreatePartitions 1 -> 3", answer)
    probe.wait_for_leaders(topic, 3)
    probe.produce_ok(topic, batch_now([(None, b"new", (), None)]), partition=2)
    answer, error = grow(2)
    probe.expect_error(error, ErrorCode.invalid_partitions, "CreatePartitions 3 -> 2", answer,
                       soft=True)


def _describe(probe: Probe, topic: str):
    """Every config of the topic (configuration_keys null, as admin clients ask)."""
    answer = probe.connect().call(32, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    result = answer.results[0]
    probe.expect_error(result.error_code, ErrorCode.none, "DescribeConfigs", answer)
    return answer, {c.name: c for c in result.configs}


@check("topic_configs", "admin", "protocol: DescribeConfigs, AlterConfigs, "
       "IncrementalAlterConfigs (KIP-339)")
def topic_configs(probe: Probe):
    """DescribeConfigs reports a topic's override with source DYNAMIC_TOPIC_CONFIG; an
    IncrementalAlterConfigs SET (AlterConfigs where that is all the broker has) is described
    afterwards; an unknown config name is refused with INVALID_CONFIG."""
    probe.version(32)
    topic = probe.create_topic("configs", configs={"retention.ms": "3600000"})
    answer, configs = _describe(probe, topic)
    entry = configs.get("retention.ms")
    probe.soft(entry is not None and entry.value == "3600000" and (
        entry.config_source == DYNAMIC_TOPIC_CONFIG), "the topic's override is not described "
        "as such", response=answer, expected="retention.ms = 3600000, source "
        "DYNAMIC_TOPIC_CONFIG (1)")
    incremental = probe.supports(44)
    probe.version(44 if incremental else 33)

    def alter(name: str, value: str):
        config = {"name": name, "value": value}
        if incremental:
            config["config_operation"] = 0  # SET
        answer = probe.connect().call(44 if incremental else 33, {"resources": [{
            "resource_type": TOPIC_RESOURCE, "resource_name": topic, "configs": [config]}],
            "validate_only": False})
        return answer, answer.responses[0].error_code

    answer, error = alter("retention.ms", "7200000")
    probe.expect_error(error, ErrorCode.none, "altering retention.ms", answer)
    seen = {}

    def described() -> bool:
        seen["answer"], configs = _describe(probe, topic)
        return "retention.ms" in configs and configs["retention.ms"].value == "7200000"

    _until(probe, described, "the altered retention.ms is not described",
           lambda: seen.get("answer", ""))
    answer, error = alter("no.such.config", "1")
    probe.expect_error(error, ErrorCode.invalid_config, "altering an unknown config", answer,
                       soft=True)
    return "IncrementalAlterConfigs" if incremental else "AlterConfigs"
