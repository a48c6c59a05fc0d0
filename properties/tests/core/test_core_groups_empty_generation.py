"""A rebalance that ends with no member left: the group goes Empty at the next generation
(Kafka's GroupMetadataManager.completeClassicGroupJoin: initNextGeneration bumps the generation
whether or not members are left, then the group is Empty), so the next member to join gets the
generation after that.

Found by mutation testing (docs/mutation.md): the bump on that path read as `+= 0` and no test
told; the core layer never completed a join that had lost every member."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.groups import EMPTY, GroupCoordinator
from kafkaref.properties.clock import ManualClock

SESSION_MS, REBALANCE_MS = 6000, 3000


def join(coordinator, member_id, answers):
    coordinator.join("g", member_id, None, "consumer", [("range", b"meta")], SESSION_MS,
                     REBALANCE_MS, answers.append)


def test_a_join_that_loses_every_member_moves_to_the_next_generation_empty():
    clock = ManualClock()
    c = GroupCoordinator(clock)
    first = []
    join(c, "", first)  # A: the group's first generation
    a = first[-1]
    assert (a.error, a.generation_id) == (ErrorCode.none, 1)
    c.sync("g", 1, a.member_id, [(a.member_id, b"")], lambda *_: None)
    second = []
    join(c, "", second)  # B: a rebalance starts; A must rejoin within the rebalance timeout
    b_id = next(m for m in c.groups["g"].members if m != a.member_id)
    assert c.leave("g", b_id) == ErrorCode.none  # B leaves while it is being prepared
    clock.now_ms = REBALANCE_MS  # A never rejoined: out, and nobody is left
    c.advance_clock()
    group = c.groups["g"]
    assert (group.state, group.members, group.generation_id) == (EMPTY, {}, 2)
    third = []
    join(c, "", third)  # C: the generation after the empty one
    assert (third[-1].error, third[-1].generation_id) == (ErrorCode.none, 3)
