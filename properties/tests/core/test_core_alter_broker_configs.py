"""AlterConfigs and IncrementalAlterConfigs on a broker resource: it must name this broker (or be
"", the cluster default), as Kafka checks, else INVALID_REQUEST; kafkaref's broker settings are
fixed when it starts, so any config to change is INVALID_REQUEST ("cannot update these configs
dynamically") and an alter naming none changes nothing and succeeds. A resource type kafkaref
has no configs for (BROKER_LOGGER 8, CLIENT_METRICS 16, GROUP 32) is INVALID_REQUEST alone.

Found by mutation testing (session 9df4313ef37b's survivor 00359: `kind == BROKER` read `!=`
took broker resources for unsupported ones and the others for brokers; no core test altered a
broker's configs)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers

BROKER = 4


def _alter(broker, api_key: int, kind: int, name: str, configs) -> ErrorCode:
    if api_key == 33:
        entries = [{"name": k, "value": v} for k, v in configs]
    else:
        entries = [{"name": k, "config_operation": 0, "value": v} for k, v in configs]
    body = call(broker, api_key, 1, {"resources": [{
        "resource_type": kind, "resource_name": name, "configs": entries}],
        "validate_only": False})
    return body.responses[0].error_code


@pytest.mark.parametrize("api_key", [33, 44])  # AlterConfigs, IncrementalAlterConfigs
def test_a_broker_resource_is_checked_and_never_changed(api_key):
    (b,) = core_brokers(1)
    assert _alter(b, api_key, BROKER, "0", []) == ErrorCode.none
    assert _alter(b, api_key, BROKER, "", []) == ErrorCode.none
    assert _alter(b, api_key, BROKER, "7", []) == ErrorCode.invalid_request
    assert _alter(b, api_key, BROKER, "0", [("num.partitions", "3")]) == (
        ErrorCode.invalid_request)
    assert b.config.default_partitions == 1
    for kind in (8, 16, 32):
        assert _alter(b, api_key, kind, "0", []) == ErrorCode.invalid_request
