"""IncrementalAlterConfigs' APPEND and SUBTRACT (operations 2 and 3 on the wire, KIP-339) on a
config that is not a list: refused INVALID_CONFIG with Kafka's words, naming the operation
(ConfigAdminManager: "Config value append is not allowed for config key: NAME", "... subtract
..."), the topic's configs unchanged; on a list config they add and remove items; SET (0) and
DELETE (1) set a config and give it back its default.

The operations are sent as Kafka's numbers, not kafkaref's constants. Found by mutation testing
(session 9df4313ef37b's survivor 00318: the message's operation name negated; no core test
read the message)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers, create_topic

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # Kafka's AlterConfigOp.OpType ids


def _alter(broker, ops) -> tuple[ErrorCode, str | None]:
    body = call(broker, 44, 1, {"resources": [{
        "resource_type": 2, "resource_name": "t",
        "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
        "validate_only": False})
    answer = body.responses[0]
    return answer.error_code, answer.error_message


def _described(broker, name: str) -> tuple[str, int]:
    """(value, config_source) of one of topic t's configs."""
    body = call(broker, 32, 4, {"resources": [{"resource_type": 2, "resource_name": "t",
                                               "configuration_keys": [name]}],
                                "include_synonyms": False, "include_documentation": False})
    (config,) = body.results[0].configs
    return config.value, config.config_source


def _cleanup_policy(broker) -> str:
    return _described(broker, "cleanup.policy")[0]


@pytest.mark.parametrize(("op", "word"), [(APPEND, "append"), (SUBTRACT, "subtract")])
def test_a_list_operation_on_a_config_that_is_no_list(op, word):
    (b,) = core_brokers(1)
    create_topic(b, "t")
    assert _alter(b, [("retention.ms", op, "5")]) == (
        ErrorCode.invalid_config,
        f"Config value {word} is not allowed for config key: retention.ms")


def test_append_and_subtract_edit_a_list_config():
    (b,) = core_brokers(1)
    create_topic(b, "t")
    assert _alter(b, [("cleanup.policy", APPEND, "compact")])[0] == ErrorCode.none
    assert _cleanup_policy(b) == "delete,compact"
    assert _alter(b, [("cleanup.policy", SUBTRACT, "delete")])[0] == ErrorCode.none
    assert _cleanup_policy(b) == "compact"


def test_set_and_delete_by_kafkas_numbers():
    (b,) = core_brokers(1)
    create_topic(b, "t")
    assert _alter(b, [("retention.ms", SET, "5000")])[0] == ErrorCode.none
    assert _described(b, "retention.ms") == ("5000", 1)  # DYNAMIC_TOPIC_CONFIG
    assert _alter(b, [("retention.ms", DELETE, None)])[0] == ErrorCode.none
    assert _described(b, "retention.ms") == ("604800000", 5)  # DEFAULT_CONFIG again
