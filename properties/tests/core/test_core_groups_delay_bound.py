"""The initial rebalance delay never outlasts the rebalance timeout: however many members keep
arriving, Kafka's InitialDelayedJoin extends by min(delay, remaining) with remaining = max(
remaining - delay, 0), so the join completes when the first member's rebalance timeout is used
up, with everyone who arrived by then.

Found by mutation testing (session 79fa682's survivor 00210: the remaining time floored at 1 ms
instead of 0, so a member arriving in the last extension bought one more, 1 ms long)."""

import pytest

from kafkaref.impl.core.groups import GroupCoordinator
from kafkaref.properties.clock import ManualClock

DELAY_MS = 3000


def join(coordinator, rebalance_timeout_ms, answers):
    coordinator.join("g", "", None, "consumer", [("range", b"meta")], 60_000,
                     rebalance_timeout_ms, answers.append)


@pytest.mark.parametrize("rebalance_timeout_ms", [2 * DELAY_MS, 3 * DELAY_MS, 2 * DELAY_MS + 500])
def test_members_arriving_in_every_extension_wait_no_longer_than_the_timeout(
        rebalance_timeout_ms):
    clock = ManualClock()
    c = GroupCoordinator(clock, initial_rebalance_delay_ms=DELAY_MS)
    answers = []
    join(c, rebalance_timeout_ms, answers)
    members = 1
    for _ in range(10):  # a member arrives just before each delay (or extension) expires
        expiry = c.groups["g"].join_not_before_ms
        clock.now_ms = expiry - 1
        join(c, rebalance_timeout_ms, answers)
        members += 1
        clock.now_ms = expiry
        c.advance_clock()
        if answers:
            break
    assert [a.generation_id for a in answers] == [1] * members, "the delay outlasted the timeout"
    assert clock.now_ms == rebalance_timeout_ms
