"""A JoinGroup answer's protocol at every version, as Kafka's schema and coordinator write it: an
error names no protocol, which JoinGroup v7+ carries as null (ProtocolName and ProtocolType are
nullable from v7) and older versions as "" (ProtocolName is not nullable there; v0-6 have no
ProtocolType); a member that joined is told the group's protocol at every version.

Found by mutation testing (session 9df4313ef37b's survivor 00290: the first nullable version 7
read 8; the core tests joined at v0, v3 and v5 only)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol import wire
from kafkaref.properties.wire_calls import call, core_brokers

_, _, JOIN_MAX_VERSION = wire.SUPPORTED[11]
NULLABLE_FROM = 7


def _join(broker, version: int, member_id: str):
    return call(broker, 11, version, {
        "group_id": "g", "session_timeout": 10_000, "rebalance_timeout": 10_000,
        "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"x"}], "reason": None})


@pytest.mark.parametrize("version", range(JOIN_MAX_VERSION + 1))
def test_a_join_answer_names_its_protocol_as_the_version_writes_it(version):
    (b,) = core_brokers(1)
    for _ in range(3):  # until __consumer_offsets exists and this broker coordinates "g"
        if call(b, 10, 2, {"key": "g", "key_type": 0}).error_code == ErrorCode.none:
            break
    refused = _join(b, version, "no-such-member")
    assert refused.error_code == ErrorCode.unknown_member_id
    none = None if version >= NULLABLE_FROM else ""
    assert refused.protocol_name == none
    if version >= NULLABLE_FROM:
        assert refused.protocol_type is None
    joined = _join(b, version, "")
    if joined.error_code == ErrorCode.member_id_required:  # v4+: again with the id given
        joined = _join(b, version, joined.member_id)
    assert (joined.error_code, joined.protocol_name) == (ErrorCode.none, "range")
    if version >= NULLABLE_FROM:
        assert joined.protocol_type == "consumer"
