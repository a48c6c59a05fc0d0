"""Every JoinGroup answer a classic group gives carries the generation it names: an error answer
carries -1 (Kafka's JoinGroupResponse default, JoinGroupRequest.UNKNOWN_GENERATION_ID), a
member that joined carries the group's generation, at least 1. Clients read it: a consumer
answered an error with a generation >= 0 could take it for a generation it belongs to.

A property over sequences of joins from dynamic and static members, known, pending, unknown and
fenced ids, protocols that fit or do not, session timeouts inside and outside the bounds, with
the clock moving between them, so every path of GroupCoordinator.join answers at least once.
Found by mutation testing (docs/mutation.md, session 79fa682's 00002): JoinAnswer's default
generation -1 changed to -2 passed every core test."""

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.groups import GroupCoordinator
from kafkaref.properties.clock import ManualClock

SESSION_MS = (6000, 1, 10**9)  # inside the bounds, below them, above them
PROTOCOLS = ([("range", b"r")], [("roundrobin", b"x")], [("range", b"r"), ("sticky", b"s")])

joins = st.lists(st.fixed_dictionaries({
    "member": st.sampled_from(["new", "known", "unknown"]),
    "known_index": st.integers(0, 7),
    "instance": st.sampled_from([None, None, "i1", "i2"]),
    "protocol_type": st.sampled_from(["consumer", "consumer", "connect"]),
    "protocols": st.sampled_from(PROTOCOLS),
    "session_ms": st.sampled_from(SESSION_MS),
    "require_known": st.booleans(),
    "advance_ms": st.sampled_from([0, 0, 1, 3000, 7000]),
}), min_size=1, max_size=12)


@given(joins)
def test_every_join_answer_names_its_generation(steps):
    clock = ManualClock()
    coordinator = GroupCoordinator(clock, initial_rebalance_delay_ms=0)
    answers, ids = [], []
    for step in steps:
        if step["member"] == "known" and ids:
            member_id = ids[step["known_index"] % len(ids)]
        else:
            member_id = "" if step["member"] == "new" else "no-such-member"
        coordinator.join("g", member_id, step["instance"], step["protocol_type"],
                         step["protocols"], step["session_ms"], 5000, answers.append,
                         client_id="c", require_known_member_id=step["require_known"])
        ids.extend(a.member_id for a in answers if a.member_id and a.member_id not in ids)
        clock.now_ms += step["advance_ms"]
        coordinator.advance_clock()
    clock.now_ms += 60_000  # every join still waiting is answered (or its member dropped)
    coordinator.advance_clock()
    assert answers, "no join was answered"
    for answer in answers:
        if answer.error == ErrorCode.none:
            assert answer.generation_id >= 1, answer
        else:
            assert answer.generation_id == -1, answer
            assert (answer.protocol_name, answer.leader, answer.members) == (None, "", ()), answer
