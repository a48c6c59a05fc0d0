"""The initial rebalance delay's edge: no time left to extend (Kafka's InitialDelayedJoin with
remainingMs 0 completes the join when its delay expires, whoever arrived meanwhile).

Found by mutation testing (docs/mutation.md): the coordinator's `delay_left_ms > 0` read as
`> -1` waited once more, for nothing, and no test told."""

from kafkaref.impl.core.groups import GroupCoordinator
from kafkaref.properties.clock import ManualClock


def join(coordinator, rebalance_timeout_ms, answers):
    coordinator.join("g", "", None, "consumer", [("range", b"meta")], 6000, rebalance_timeout_ms,
                     answers.append)


def test_a_member_arriving_when_no_delay_is_left_does_not_extend_the_wait():
    clock = ManualClock()
    c = GroupCoordinator(clock, initial_rebalance_delay_ms=3000)
    first, second = [], []
    join(c, 3000, first)  # rebalance timeout = the delay: nothing left to extend by
    clock.now_ms = 1000
    join(c, 3000, second)  # a new member meanwhile
    clock.now_ms = 3000
    c.advance_clock()
    assert [a.generation_id for a in first + second] == [1, 1]
