"""The admin requests of `kafkaref topics`, as kafka-topics and kafka-configs send them: to any
broker (it forwards to the controller). Each raises AdminError with the broker's error code;
OSError and NoBrokerAvailable when the cluster cannot be reached.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable

TIMEOUT_MS = 30_000
TOPIC_RESOURCE = 2  # ConfigResource type of a topic
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations


class AdminError(Exception):
    """The broker refused: its error code's name and message."""


def _call(bootstrap: str, api_key: int, version: int, values: dict):
    """One request to any broker of the cluster at bootstrap (ValueError: a bad address)."""
    view = ClusterView(bootstrap)
    try:
        view.refresh([])
        if not view.brokers:
            raise NoBrokerAvailable("no broker in metadata")
        return view.connection(min(view.brokers)).send(api_key, version, values)
    finally:
        view.close()


# What an error code means to someone managing topics, for answers that carry no message.
_MEANINGS = {
    ErrorCode.unknown_topic_or_partition: "no such topic",
    ErrorCode.topic_already_exists: "a topic of that name exists",
    ErrorCode.invalid_topic_exception: "not a legal topic name",
    ErrorCode.invalid_replication_factor: "more replicas than the cluster has brokers?",
    ErrorCode.invalid_partitions: "a topic's partitions can only be added",
}


def _check(result, what: str) -> None:
    """AdminError "what: error_name (the broker's message, or what the code means)"."""
    if result.error_code != ErrorCode.none:
        code = ErrorCode(result.error_code)
        said = getattr(result, "error_message", None) or _MEANINGS.get(code)
        raise AdminError(f"{what}: {code.name}" + (f" ({said})" if said else ""))


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int,
                 configs: list[tuple[str, str]]) -> None:
    """CreateTopics v4 with the (name, value) configs."""
    answer = _call(bootstrap, 19, 4, {"topics": [{
        "name": topic, "num_partitions": partitions, "replication_factor": replication_factor,
        "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs]}],
        "timeout": TIMEOUT_MS, "validate_only": False})
    _check(answer.topics[0], f"create topic {topic}")


def delete_topic(bootstrap: str, topic: str) -> None:
    """DeleteTopics v3: every broker drops the topic's partitions and their logs."""
    _check(_call(bootstrap, 20, 3, {"topic_names": [topic], "timeout": TIMEOUT_MS}).responses[0],
           f"delete topic {topic}")


def add_partitions(bootstrap: str, topic: str, partitions: int) -> None:
    """CreatePartitions v1: grow the topic to `partitions` (never fewer)."""
    _check(_call(bootstrap, 37, 1, {"topics": [{
        "name": topic, "count": partitions, "assignments": None}], "timeout": TIMEOUT_MS,
        "validate_only": False}).results[0], f"add partitions to {topic}")


def alter_configs(bootstrap: str, topic: str, sets: list[tuple[str, str]],
                  deletes: list[str]) -> None:
    """IncrementalAlterConfigs v0: override each (name, value) of sets, remove the overrides
    named in deletes."""
    ops = [{"name": k, "config_operation": SET, "value": v} for k, v in sets]
    ops += [{"name": k, "config_operation": DELETE, "value": None} for k in deletes]
    _check(_call(bootstrap, 44, 0, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic, "configs": ops}],
        "validate_only": False}).responses[0], f"change the configs of {topic}")


def describe_configs(bootstrap: str, topic: str) -> list[tuple[str, str, bool]]:
    """DescribeConfigs v3: (name, value, overridden) of each of the topic's configs."""
    answer = _call(bootstrap, 32, 3, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    result = answer.results[0]
    _check(result, f"describe the configs of {topic}")
    return [(entry.name, entry.value, entry.config_source == 1) for entry in result.configs]
