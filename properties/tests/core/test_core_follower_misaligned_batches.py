"""A follower whose log end falls inside one of its leader's batches (its own batches cut the
same offsets differently) never appends across a gap: it cuts back to a batch boundary both
logs share and appends the leader's batches only from exactly its log end, so its log stays
contiguous and, past the cut, the leader's bytes.

A kafkaref follower copies its leader's batches, and truncation points are epoch starts (batch
boundaries in both logs), so no walk reaches this; Kafka's follower fails the partition there
(UnexpectedAppendOffsetException) unless its log is empty at its log start (the DeleteRecords
case, impl/replication/apply.py from_log_end). The rule is the follower's own safety net.
Found by mutation testing (session 9df4313ef37b's survivor 00042: from_log_end's
`log_end_offset != header.base_offset` read `==`, never run by the replication layer, appended
a batch above the log end)."""

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.replication.apply import apply_fetch_response

LEADER, FOLLOWER = 1, 2
EPOCH = 3

batchings = st.lists(st.integers(1, 4), min_size=1, max_size=6)  # records per batch


def _written(node: int, batching) -> Partition:
    """A partition holding sum(batching) records in batches of those sizes, written as leader."""
    partition = Partition("t", 0, node, MemoryLog(), clock=lambda: 0)
    partition.make_leader(EPOCH, {node}, (node,))
    for step, count in enumerate(batching):
        batch = build_batch([(None, b"%d-%d" % (step, i), (), 1) for i in range(count)])
        assert partition.append_as_leader(batch, 1).error == ErrorCode.none
    return partition


def _batches(partition: Partition) -> list[tuple[int, int, bytes]]:
    return [(h.base_offset, h.last_offset, bytes(raw)) for h, raw in partition.log.iter_batches()]


@given(leader_batching=batchings, follower_batching=batchings)
def test_a_follower_inside_a_leader_batch_never_appends_across_a_gap(leader_batching,
                                                                      follower_batching):
    leader = _written(LEADER, leader_batching)
    follower = _written(FOLLOWER, follower_batching)
    follower.make_follower(LEADER, EPOCH, (LEADER, FOLLOWER))
    leo = follower.log_end_offset
    # the leader answers a fetch at the follower's log end from the batch holding it
    answer = leader.log.read(min(leo, leader.log_end_offset), 1 << 20)
    apply_fetch_response(follower, ErrorCode.none, None, answer, 0)
    held = _batches(follower)
    starts = [0] + [last + 1 for _, last, _ in held[:-1]]
    assert [base for base, _, _ in held] == starts[:len(held)], held  # contiguous from 0
    assert follower.log_end_offset == (held[-1][1] + 1 if held else 0)
    leader_batches = {(base, last): raw for base, last, raw in _batches(leader)}
    for base, last, raw in held:
        if last >= leo:  # appended now: the leader's batch, byte for byte
            assert leader_batches.get((base, last)) == raw, (base, last)
