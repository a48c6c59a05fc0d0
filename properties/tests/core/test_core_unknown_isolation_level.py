"""ListOffsets at an isolation level Kafka does not know, in the core layer: every partition
named, known or not, answers ListOffsetsRequest.getErrorResponse's values (UNKNOWN_SERVER_ERROR,
offset and timestamp -1, leader epoch -1 from v4). The same rule through a server is
properties/tests/server/test_server_isolation_level.py; the core's own layer never sent the
field other than 0.

Found by mutation testing (session 2225a175104f's survivor 00368): the answer's timestamp -1
read -2, on a line the core layer never ran."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers

UNKNOWN = -1  # ListOffsetsResponse.UNKNOWN_OFFSET, UNKNOWN_TIMESTAMP, UNKNOWN_EPOCH


@pytest.mark.parametrize("version", [2, 3, 4, 6, 9, 10])
@pytest.mark.parametrize("level", [2, -1, 127])
def test_list_offsets_at_an_unknown_isolation_level(version, level):
    (b,) = core_brokers(1)
    named = [{"partition_index": i, "timestamp": -1, "current_leader_epoch": -1} for i in (0, 3)]
    body = call(b, 2, version, {"replica_id": -1, "isolation_level": level,
                                "topics": [{"name": "absent", "partitions": named}]})
    (topic,) = body.topics
    answered = [(p.partition_index, p.error_code, p.offset, p.timestamp,
                 getattr(p, "leader_epoch", UNKNOWN)) for p in topic.partitions]
    assert answered == [(i, ErrorCode.unknown_server_error, UNKNOWN, UNKNOWN, UNKNOWN)
                        for i in (0, 3)]
