"""A rebalance whose deadline passes with only static members that did not rejoin waits another
rebalance timeout (Kafka's completeClassicGroupJoin: "all members are not rejoining", so it
schedules the join again; their session timeouts remove them meanwhile): one of them rejoining
in that time is answered when the others rejoin or the new deadline passes, not at once.

Found by mutation testing (session 2225a175104f's survivor 00112, a line no core test ran): the
new deadline read `now - timeout`, already past, so the next tick completed the join without
the others."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.groups import PREPARING, STABLE, GroupCoordinator
from kafkaref.properties.clock import ManualClock

SESSION_MS, REBALANCE_MS = 6000, 5000


def _join(c, instance, member_id="", answers=None):
    answers = [] if answers is None else answers
    c.join("g", member_id, instance, "consumer", [("range", b"m")], SESSION_MS, REBALANCE_MS,
           answers.append)
    return answers


def _stable_static_pair(clock):
    """Static members "i-a" (the leader) and "i-b", synced: stable at generation 2."""
    c = GroupCoordinator(clock)
    [a] = _join(c, "i-a")
    c.sync("g", 1, a.member_id, [(a.member_id, b"all")], lambda e, x: None)
    b_answers = _join(c, "i-b")
    _join(c, "i-a", a.member_id)
    [b] = b_answers
    c.sync("g", 2, b.member_id, [], lambda e, x: None)
    c.sync("g", 2, a.member_id, [(a.member_id, b"p0"), (b.member_id, b"p1")], lambda e, x: None)
    assert c.groups["g"].state == STABLE
    return c, a.member_id, b.member_id


def test_static_members_that_did_not_rejoin_get_another_rebalance_timeout():
    clock = ManualClock()
    c, a, b = _stable_static_pair(clock)
    _join(c, None)  # a dynamic member joins: a rebalance starts
    group = c.groups["g"]
    assert group.state == PREPARING
    joining = next(m for m in group.members if m not in (a, b))
    clock.now_ms = 100
    assert c.leave("g", joining) == ErrorCode.none  # only the two static members are left
    clock.now_ms = 4000
    for member in (a, b):
        assert c.heartbeat("g", 2, member) == ErrorCode.rebalance_in_progress
    clock.now_ms = REBALANCE_MS
    c.advance_clock()  # the deadline: neither rejoined, both kept (static)
    assert group.state == PREPARING and set(group.members) == {a, b}
    clock.now_ms = REBALANCE_MS + 1
    rejoined = _join(c, "i-a", a)
    for now in (REBALANCE_MS + 2, 6000, 2 * REBALANCE_MS - 1):
        clock.now_ms = now
        for member in (a, b):
            c.heartbeat("g", 2, member)
        c.advance_clock()
        assert rejoined == [], now  # waits for "i-b" until the new deadline
    clock.now_ms = 2 * REBALANCE_MS
    c.advance_clock()
    [answer] = rejoined
    assert answer.error == ErrorCode.none and answer.generation_id == 3
    assert set(group.members) == {a, b}  # "i-b" keeps its place
