"""The hw shortcuts on the replication path against the naive rule they stand for.

A leader recomputes its hw only when a follower's leo moved (a follower fetch at an unchanged
offset cannot move it) and a follower applies an empty fetch answer by setting its hw alone.
Twin: after every step the leader's hw is what the one hw rule (model/helpers.py
high_watermark) gives from the fetch positions the test tracks, and a follower's equals
min(leader hw, own leo)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition, PartitionConfig
from kafkaref.impl.protocol.records import build_batch
from kafkaref.model.helpers import high_watermark
from kafkaref.properties.clock import ManualClock


def batch(n: int) -> bytes:
    return build_batch([(None, b"v", (), None)] * n)


steps = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("fetch"), st.sampled_from([2, 3]), st.integers(0, 4)),  # back-off
), max_size=40)


@settings(max_examples=60)
@given(steps)
def test_leader_hw_matches_naive_rule(plan):
    clock = ManualClock(1_000)
    leader = Partition("t", 0, 1, MemoryLog(), clock, PartitionConfig(min_insync_replicas=1))
    leader.make_leader(0, (1, 2, 3), (1, 2, 3))
    follower_leo = {2: 0, 3: 0}
    for step in plan:
        clock.now_ms += 1
        if step[0] == "append":
            leader.append_as_leader(batch(step[1]), 1)
        else:
            _, replica, behind = step
            # a follower fetches at its leo, which only grows up to the leader's leo
            follower_leo[replica] = max(follower_leo[replica],
                                        leader.log_end_offset - behind)
            before = leader.high_watermark
            leader.fetch(follower_leo[replica], 1 << 20, replica, 0)
            followers = [follower_leo[r] for r in leader.isr if r != 1]
            assert leader.high_watermark == high_watermark(
                before, leader.log_end_offset, followers, gated=False)
        assert leader.high_watermark <= leader.log_end_offset


def test_follower_applies_empty_answers_as_hw_only():
    follower = Partition("t", 0, 2, MemoryLog(), ManualClock(1_000))
    follower.make_follower(1, 0, (1, 2))
    data = batch(3)
    follower.append_as_follower(data, 0)
    assert (follower.log_end_offset, follower.high_watermark) == (3, 0)
    follower.append_as_follower(b"", 2)
    assert follower.high_watermark == 2
    follower.append_as_follower(b"", 9)  # never past its own leo
    assert follower.high_watermark == 3
    assert follower.log_end_offset == 3
