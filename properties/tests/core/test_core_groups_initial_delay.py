"""The initial rebalance delay's edge: no time left to extend (Kafka's InitialDelayedJoin with
remainingMs 0 completes the join when its delay expires, whoever arrived meanwhile).

Found by mutation testing (docs/mutation.md): the coordinator's `delay_left_ms > 0` read as
`> -1` waited once more, for nothing, and no test told; read as `> 1` (session 9df4313ef37b's
survivor 00013) it did not wait out a last millisecond. The property holds the whole schedule
to Kafka's (GroupMetadataManager.tryCompleteInitialRebalanceElseSchedule): each expiry with a
new member since the last and time left (`remainingMs != 0`) waits min(delay, remaining) more,
else the join completes."""

from hypothesis import assume, example, given
from hypothesis import strategies as st

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


def kafkas_expiries_ms(delay_ms: int, rebalance_timeout_ms: int, arrivals: set[int]) -> list[int]:
    """Kafka's initial-delay expiries for a group whose first member joins at 0 and new ones
    at `arrivals`; the join completes at the last."""
    expiries, remaining, added = [delay_ms], max(rebalance_timeout_ms - delay_ms, 0), False
    for now in range(1, delay_ms + rebalance_timeout_ms + 1):
        added = added or now in arrivals
        if now == expiries[-1]:
            if not (added and remaining != 0):
                return expiries
            added = False
            expiries.append(now + min(delay_ms, remaining))
            remaining = max(remaining - delay_ms, 0)
    raise AssertionError("no completion")


@given(delay_ms=st.integers(1, 6), extra_ms=st.integers(0, 12),
       arrivals=st.sets(st.integers(1, 30), max_size=4))
@example(delay_ms=3, extra_ms=1, arrivals={1})  # 1 ms left: one more millisecond's wait
@example(delay_ms=3, extra_ms=4, arrivals={1, 4})  # 1 ms left after the first extension
def test_the_initial_delay_is_extended_as_kafka_extends_it(delay_ms, extra_ms, arrivals):
    timeout_ms = delay_ms + extra_ms
    expiries = kafkas_expiries_ms(delay_ms, timeout_ms, arrivals)
    assume(not arrivals & set(expiries))  # a join and an expiry in one millisecond: either order
    clock = ManualClock()
    c = GroupCoordinator(clock, initial_rebalance_delay_ms=delay_ms)
    answers = []
    join(c, timeout_ms, answers)
    for now in range(1, expiries[-1] + 1):
        clock.now_ms = now
        if now in arrivals:
            join(c, timeout_ms, answers)
        c.advance_clock()
        assert bool(answers) == (now == expiries[-1]), now
