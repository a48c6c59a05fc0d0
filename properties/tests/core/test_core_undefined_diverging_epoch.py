"""A diverging epoch of (-1, -1) is no divergence: the follower appends as if none were sent.

Kafka's follower reads the field as a divergence only when its epoch is >= 0
(FetchResponse.isDivergingEpoch); (-1, -1) is the field's default, what a leader's endOffsetFor
answers for an epoch above every epoch it knows (impl/storage/epoch_cache.py end_offset_for).
A kafkaref leader never sends it to a kafkaref follower (the fetch's current leader epoch is
checked first, and a leader's cache holds its own epoch), so no walk reaches it; the follower
must still take it as Kafka does. Property: for any follower log, answering (-1, -1) or nothing
leaves the same log, hw and log start. Found by mutation testing (docs/mutation.md, survivor
00019: `diverging[0] >= 0` read as `<= 0` in apply_fetch_response truncated on it)."""

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.replication.apply import apply_fetch_response

LEADER, FOLLOWER = 1, 2

# the follower's log: batches of 1-3 records, each written in an epoch (non-decreasing)
histories = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3)), min_size=1, max_size=6)


def leader_bytes(history) -> tuple[bytes, int]:
    """The batches a leader wrote in those epochs, offsets and epochs stamped."""
    leader = Partition("t", 0, LEADER, MemoryLog(), clock=lambda: 0)
    epoch = 0
    for step, (bump, count) in enumerate(history):
        epoch += bump
        leader.make_leader(epoch, {LEADER}, (LEADER,))
        batch = build_batch([(None, b"%d-%d" % (step, i), (), 1) for i in range(count)])
        assert leader.append_as_leader(batch, 1).error == ErrorCode.none
    return leader.log.read(0, 1 << 30), epoch


def follower_of(history, hw_back: int) -> tuple[Partition, int]:
    data, epoch = leader_bytes(history)
    follower = Partition("t", 0, FOLLOWER, MemoryLog(), clock=lambda: 0)
    follower.make_follower(LEADER, epoch, (LEADER, FOLLOWER))
    leo = sum(count for _, count in history)
    hw = max(0, leo - hw_back)
    assert apply_fetch_response(follower, ErrorCode.none, None, data, hw) == "appended"
    return follower, hw


def state(partition: Partition):
    log = partition.log
    return (log.log_start_offset, log.log_end_offset, partition.high_watermark,
            log.read(0, 1 << 30), tuple(log.epochs.entries))


@given(history=histories, hw_back=st.integers(0, 4), leader_hw_back=st.integers(0, 4))
def test_an_undefined_diverging_epoch_is_no_divergence(history, hw_back, leader_hw_back):
    answered, hw = follower_of(history, hw_back)
    plain, _ = follower_of(history, hw_back)
    leader_hw = max(hw, answered.log_end_offset - leader_hw_back)
    outcomes = [apply_fetch_response(answered, ErrorCode.none, (-1, -1), b"", leader_hw),
                apply_fetch_response(plain, ErrorCode.none, None, b"", leader_hw)]
    assert outcomes == ["appended", "appended"]
    assert state(answered) == state(plain)
