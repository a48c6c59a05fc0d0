"""The classic group coordinator stepped directly with an injected clock."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.groups import COMPLETING, PREPARING, STABLE, GroupCoordinator
from kafkaref.properties.clock import ManualClock


def join(coordinator, member_id="", answers=None):
    answers = [] if answers is None else answers
    coordinator.join("g", member_id, None, "consumer", [("range", b"meta-" + member_id.encode())],
                     6000, 5000, answers.append)
    return answers


def stable_with_one_member(clock):
    """A coordinator whose group "g" has one member, synced: stable at generation 1."""
    c = GroupCoordinator(clock)
    [member] = join(c)
    c.sync("g", 1, member.member_id, [(member.member_id, b"x")], lambda e, a: None)
    return c, member


def test_single_member_joins_leads_and_syncs():
    c = GroupCoordinator(ManualClock())
    [answer] = join(c)
    assert answer.error == ErrorCode.none and answer.leader == answer.member_id
    assert answer.generation_id == 1 and len(answer.members) == 1
    synced = []
    c.sync("g", 1, answer.member_id, [(answer.member_id, b"all")],
           lambda e, a: synced.append((e, a)))
    assert synced == [(ErrorCode.none, b"all")] and c.groups["g"].state == STABLE


def test_second_member_triggers_rebalance_both_get_their_assignment():
    clock = ManualClock()
    c, first = stable_with_one_member(clock)
    second = join(c)
    assert second == [] and c.groups["g"].state == PREPARING  # waits for the first to rejoin
    assert c.heartbeat("g", 1, first.member_id) == ErrorCode.rebalance_in_progress
    again = join(c, first.member_id)
    assert again[0].error == second[0].error == ErrorCode.none
    assert again[0].generation_id == 2 and len(again[0].members) == 2  # the leader sees all
    assert second[0].members == ()
    assert c.groups["g"].state == COMPLETING
    got = []
    c.sync("g", 2, second[0].member_id, [], lambda e, a: got.append(("second", e, a)))
    assert got == []  # followers wait for the leader's assignment
    c.sync("g", 2, first.member_id, [(first.member_id, b"p0"), (second[0].member_id, b"p1")],
           lambda e, a: got.append(("first", e, a)))
    assert sorted(got) == [("first", ErrorCode.none, b"p0"), ("second", ErrorCode.none, b"p1")]


def test_silent_member_expires_and_stale_generation_is_refused():
    clock = ManualClock()
    c, first = stable_with_one_member(clock)
    clock.now_ms = 6001
    c.advance_clock()
    assert c.groups["g"].members == {}
    assert c.heartbeat("g", 1, first.member_id) == ErrorCode.unknown_member_id
    [fresh] = join(c)
    assert c.heartbeat("g", 1, fresh.member_id) == ErrorCode.illegal_generation


def test_rebalance_deadline_drops_members_that_do_not_rejoin():
    clock = ManualClock()
    c = GroupCoordinator(clock)
    [first] = join(c)
    c.sync("g", 1, first.member_id, [], lambda e, a: None)
    second = join(c)
    clock.now_ms = 900  # first keeps heartbeating but never rejoins
    c.heartbeat("g", 1, first.member_id)
    clock.now_ms = 5000
    c.advance_clock()
    assert second[0].error == ErrorCode.none and len(second[0].members) == 1
    assert c.leave("g", second[0].member_id) == ErrorCode.none


def static_join(coordinator, instance, member_id="", answers=None):
    answers = [] if answers is None else answers
    coordinator.join("g", member_id, instance, "consumer", [("range", b"meta")], 6000, 5000,
                     answers.append)
    return answers


def stable_pair(clock):
    """A static member (instance "i-a", the leader) and a dynamic one, synced: generation 2."""
    c = GroupCoordinator(clock)
    [a] = static_join(c, "i-a")
    c.sync("g", 1, a.member_id, [(a.member_id, b"all")], lambda e, x: None)
    b = join(c)
    [a2] = static_join(c, "i-a", a.member_id)
    c.sync("g", 2, b[0].member_id, [], lambda e, x: None)
    c.sync("g", 2, a.member_id, [(a.member_id, b"p0"), (b[0].member_id, b"p1")],
           lambda e, x: None)
    assert a2.generation_id == 2 and c.groups["g"].state == STABLE
    return c, a.member_id, b[0].member_id


def test_restarted_static_member_takes_its_place_without_a_rebalance():
    clock = ManualClock()
    c, old, other = stable_pair(clock)
    [again] = static_join(c, "i-a")  # restarted: no member id
    assert again.error == ErrorCode.none and again.generation_id == 2
    assert again.member_id != old and again.members == ()  # not asked to reassign
    assert c.groups["g"].state == STABLE and c.groups["g"].leader == again.member_id
    assert c.heartbeat("g", 2, other) == ErrorCode.none  # the other member saw nothing
    got = []
    c.sync("g", 2, again.member_id, [], lambda e, a: got.append((e, a)))
    assert got == [(ErrorCode.none, b"p0")]  # its assignment back
    # the old instance is fenced wherever it still shows up with its instance id
    assert c.heartbeat("g", 2, old, "i-a") == ErrorCode.fenced_instance_id
    assert static_join(c, "i-a", old)[0].error == ErrorCode.fenced_instance_id
    assert c.check_commit("g", 2, old, "i-a") == ErrorCode.fenced_instance_id
    assert c.check_commit("g", 2, again.member_id, "i-a") == ErrorCode.none
    c.sync("g", 2, old, [], lambda e, a: got.append((e, a)), group_instance_id="i-a")
    assert got[-1] == (ErrorCode.fenced_instance_id, b"")


def test_static_rejoin_while_awaiting_assignment_rebalances():
    clock = ManualClock()
    c = GroupCoordinator(clock)
    [a] = static_join(c, "i-a")
    assert c.groups["g"].state == COMPLETING
    answers = static_join(c, "i-a")
    [done] = answers  # alone in the group: the rebalance completes at once
    assert done.error == ErrorCode.none and done.generation_id == 2
    assert done.member_id != a.member_id and done.leader == done.member_id


def test_expired_static_member_frees_its_instance_id():
    clock = ManualClock()
    c, old, other = stable_pair(clock)
    clock.now_ms = 5000
    c.heartbeat("g", 2, other)
    clock.now_ms = 6001
    c.advance_clock()
    assert old not in c.groups["g"].members and c.groups["g"].static_members == {}
    assert static_join(c, "i-a") == []  # a new member: it waits in the rebalance in progress
    assert c.groups["g"].static_members["i-a"] not in (old, None)


# -- group.initial.rebalance.delay.ms (Kafka's InitialDelayedJoin) ---------------------------
def test_initial_delay_puts_members_joining_together_in_one_generation():
    """librdkafka's 0102 and 0113 start two consumers together and expect one rebalance each
    (Kafka's default delay, 3 s); without the delay the first completed a generation alone and
    was revoked at once when the second arrived."""
    clock = ManualClock()
    c = GroupCoordinator(clock, initial_rebalance_delay_ms=3000)
    first = join(c)
    clock.now_ms = 1000
    c.advance_clock()
    assert first == []  # not completed alone
    second = join(c)
    clock.now_ms = 3000
    c.advance_clock()  # a member arrived meanwhile and time is left: wait once more
    assert first == second == []
    clock.now_ms = 5000  # the rebalance timeout (5000) bounds the whole wait
    c.advance_clock()
    assert [a.generation_id for a in first + second] == [1, 1]
    assert len(first[0].members) == 2 and second[0].members == ()


def test_initial_delay_applies_only_to_an_empty_group():
    clock = ManualClock()
    c = GroupCoordinator(clock, initial_rebalance_delay_ms=3000)
    first_answers = join(c)
    clock.advance(3000)
    c.advance_clock()
    [first] = first_answers
    c.sync("g", 1, first.member_id, [(first.member_id, b"x")], lambda e, a: None)
    second = join(c)
    again = join(c, first.member_id)  # a stable group's rebalance: done when all rejoined
    assert again[0].generation_id == second[0].generation_id == 2


# -- a known member joining again (Kafka's doJoinGroup) ----------------------------------------
def test_a_stable_follower_joining_with_the_same_protocols_gets_the_current_generation():
    clock = ManualClock()
    c, a = stable_with_one_member(clock)
    second = join(c)
    join(c, a.member_id)
    b = second[0]
    c.sync("g", 2, b.member_id, [], lambda e, x: None)
    c.sync("g", 2, a.member_id, [(a.member_id, b"p0"), (b.member_id, b"p1")], lambda e, x: None)
    answers = []  # b first joined without a member id, so with this metadata
    c.join("g", b.member_id, None, "consumer", [("range", b"meta-")], 6000, 5000,
           answers.append)
    assert answers[0].error == ErrorCode.none and answers[0].generation_id == 2
    assert c.groups["g"].state == STABLE  # no rebalance: the leader keeps going
    assert c.heartbeat("g", 2, a.member_id) == ErrorCode.none
    changed = []
    c.join("g", b.member_id, None, "consumer", [("range", b"other")], 6000, 5000, changed.append)
    assert changed == [] and c.groups["g"].state == PREPARING  # new metadata: rebalance


def test_the_leader_joining_a_stable_group_rebalances():
    clock = ManualClock()
    c, a = stable_with_one_member(clock)
    [again] = join(c, a.member_id)  # alone: the rebalance completes at once
    assert again.generation_id == 2 and c.groups["g"].state == COMPLETING


def test_a_member_that_lost_its_join_answer_gets_it_again_while_completing():
    c = GroupCoordinator(ManualClock())
    [a] = join(c)
    assert c.groups["g"].state == COMPLETING
    answers = []  # the same protocols as its first join: the same generation, with members
    c.join("g", a.member_id, None, "consumer", [("range", b"meta-")], 6000, 5000,
           answers.append)
    [again] = answers
    assert again.generation_id == 1 and again.leader == a.member_id and len(again.members) == 1


def test_static_members_that_did_not_rejoin_keep_their_place():
    """Kafka's onCompleteJoin drops only dynamic members that did not rejoin: a static one is
    still given to the leader to assign, and only its session timeout removes it."""
    clock = ManualClock()
    c, static, dynamic = stable_pair(clock)  # the static member leads
    third = join(c)  # a new member: a rebalance; the dynamic member rejoins, the static not
    rejoined = join(c, dynamic)
    clock.now_ms = 5000
    c.heartbeat("g", 2, static)
    c.advance_clock()  # the rebalance deadline
    group = c.groups["g"]
    assert group.generation_id == 3 and static in group.members
    assert group.leader == dynamic  # the leader must be among those answered
    assert {m for m, _, _ in rejoined[0].members} == {static, dynamic, third[0].member_id}
    assert c.heartbeat("g", 2, static) == ErrorCode.illegal_generation  # it must rejoin



def test_static_members_that_did_not_rejoin_get_another_rebalance_timeout():
    """A rebalance whose deadline passes with only static members that did not rejoin waits
    another rebalance timeout (Kafka's completeClassicGroupJoin: "all members are not
    rejoining", so it schedules the join again; session timeouts remove them meanwhile): one of
    them rejoining in that time is answered when the others rejoin or the new deadline passes.
    Found by mutation testing (session 2225a175104f's survivor 00112, a line no core test
    ran): the new deadline read `now - timeout`, already past, so the next tick completed the
    join without the others."""
    clock = ManualClock()
    c = GroupCoordinator(clock)
    [a] = static_join(c, "i-a")
    c.sync("g", 1, a.member_id, [(a.member_id, b"all")], lambda e, x: None)
    b_answers = static_join(c, "i-b")
    static_join(c, "i-a", a.member_id)
    a, [b] = a.member_id, b_answers
    c.sync("g", 2, b.member_id, [], lambda e, x: None)
    c.sync("g", 2, a, [(a, b"p0"), (b.member_id, b"p1")], lambda e, x: None)
    group = c.groups["g"]
    assert group.state == STABLE
    join(c)  # a dynamic member joins: a rebalance
    joining = next(m for m in group.members if m not in (a, b.member_id))
    clock.now_ms = 100
    assert c.leave("g", joining) == ErrorCode.none  # only the two static members are left
    clock.now_ms = 4000
    for member in (a, b.member_id):
        c.heartbeat("g", 2, member)
    clock.now_ms = 5000
    c.advance_clock()  # the deadline: neither rejoined, both kept (static)
    assert group.state == PREPARING and set(group.members) == {a, b.member_id}
    clock.now_ms = 5001
    rejoined = static_join(c, "i-a", a)
    for now in (5002, 6000, 9999):
        clock.now_ms = now
        for member in (a, b.member_id):
            c.heartbeat("g", 2, member)
        c.advance_clock()
        assert rejoined == [], now  # waits for "i-b" until the new deadline
    clock.now_ms = 10_000
    c.advance_clock()
    [answer] = rejoined
    assert answer.error == ErrorCode.none and answer.generation_id == 3
    assert set(group.members) == {a, b.member_id}  # "i-b" keeps its place


# -- KIP-394: MEMBER_ID_REQUIRED ---------------------------------------------------------------
def join_v4(coordinator, member_id="", answers=None):
    answers = [] if answers is None else answers
    coordinator.join("g", member_id, None, "consumer", [("range", b"meta")], 6000, 10_000,
                     answers.append, client_id="c", require_known_member_id=True)
    return answers


def test_a_new_dynamic_member_gets_its_id_at_once_and_is_pending_until_it_joins_with_it():
    clock = ManualClock()
    c = GroupCoordinator(clock)
    [required] = join_v4(c)
    assert required.error == ErrorCode.member_id_required and required.member_id.startswith("c-")
    assert c.groups["g"].members == {} and required.member_id in c.groups["g"].pending
    [answer] = join_v4(c, required.member_id)
    assert answer.error == ErrorCode.none and answer.member_id == required.member_id
    assert c.groups["g"].pending == {}


def test_a_pending_member_holds_up_the_rebalance_until_it_joins_or_expires():
    """Kafka's hasAllMembersJoined waits for pending members too; one that never comes back
    (its client gave up on the answer) stops holding anything up at its session timeout."""
    clock = ManualClock()
    c = GroupCoordinator(clock)
    [first] = join_v4(c)
    join_v4(c, first.member_id)
    c.sync("g", 1, first.member_id, [(first.member_id, b"x")], lambda e, a: None)
    [lost] = join_v4(c)  # a second client: its answer is lost, it never joins with the id
    rejoined = []
    c.join("g", first.member_id, None, "consumer", [("range", b"other")], 6000, 10_000,
           rejoined.append, require_known_member_id=True)
    assert rejoined == []  # waits for the pending member (the rebalance timeout is 10 s)
    clock.now_ms = 5999
    c.heartbeat("g", 1, first.member_id)
    c.advance_clock()
    assert rejoined == []
    clock.now_ms = 6000  # the pending member's session timeout
    c.advance_clock()
    assert rejoined[0].error == ErrorCode.none and rejoined[0].generation_id == 2
    assert lost.member_id not in c.groups["g"].members
    assert join_v4(c, lost.member_id)[0].error == ErrorCode.unknown_member_id


def test_a_pending_member_may_leave():
    c = GroupCoordinator(ManualClock())
    [required] = join_v4(c)
    assert c.leave("g", required.member_id) == ErrorCode.none
    assert c.groups["g"].pending == {}
