"""AlterPartition for a partition the topic does not have (an index past its last, or below 0)
is UNKNOWN_TOPIC_OR_PARTITION from the controller, never an error of its own (which the controller
server would not turn into an answer).

Found by mutation testing (session 79fa682's survivor 00301: `index < len(partitions)` read as
`<=`, so the index one past the last raised IndexError)."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.state import ControllerState
from kafkaref.properties.clock import ManualClock


@pytest.mark.parametrize("index", [-1, 2, 3])
def test_an_alter_partition_past_the_topics_partitions_is_unknown(index):
    state = ControllerState(ManualClock(), session_timeout_ms=1000)
    for broker_id in range(2):
        state.register(broker_id, "127.0.0.1", 9000 + broker_id)
    assert state.create_topic("t", 2, 2, {}) == (ErrorCode.none, None)
    assert state.alter_isr(0, "t", index, 0, [0]) == ErrorCode.unknown_topic_or_partition
    assert state.alter_isr(0, "nope", 0, 0, [0]) == ErrorCode.unknown_topic_or_partition
