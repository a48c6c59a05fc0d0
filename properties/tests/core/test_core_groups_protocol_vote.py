"""A classic group's protocol is chosen as Apache Kafka chooses it (ClassicGroup.selectProtocol):
each member votes for the first of its protocols that every member supports, and the protocol
with the most votes wins; a tie goes to the protocol Kafka's vote map (a java.util.HashMap)
iterates first. kafkaref took the first member's first common protocol, which differs whenever
the members prefer different ones.

Found by mutation testing (session 2225a175104f's survivor 00113, a line no core test ran): the
first member's fallback protocol (`members[0]` read `members[1]`) was dead code, since every
member supports a protocol all the others do (the join's INCONSISTENT_GROUP_PROTOCOL check);
reading the rule beside Kafka's showed the vote. The tie orders below are Java 17's HashMap
(checked with javac/java: {"range", "roundrobin"} iterates range first; {"sticky", "range",
"roundrobin", "cooperative-sticky"} in that order), and java_hash_map_order was checked against
java.util.HashMap on 3000 random key sets of 1 to 60 keys."""

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.groups import GroupCoordinator, java_hash_map_order
from kafkaref.properties.clock import ManualClock

POOL = ("range", "roundrobin", "sticky", "cooperative-sticky")


def _chosen(preferences: list[tuple[str, ...]]) -> str:
    """The protocol of the generation in which members with these preferences (in join order)
    all joined."""
    c = GroupCoordinator(ManualClock())
    answers = []
    for names in preferences:
        c.join("g", "", None, "consumer", [(n, b"") for n in names], 6000, 5000, answers.append)
    first = answers[0]
    assert first.error == ErrorCode.none
    if len(preferences) > 1:  # the others joined meanwhile: the first joins again, all are in
        c.join("g", first.member_id, None, "consumer", [(n, b"") for n in preferences[0]],
               6000, 5000, answers.append)
    last = answers[-len(preferences):]
    assert {a.error for a in last} == {ErrorCode.none} and len({a.generation_id for a in last}) == 1
    (protocol,) = {a.protocol_name for a in last}
    return protocol


def test_the_most_voted_protocol_wins():
    assert _chosen([("range", "roundrobin"), ("roundrobin", "range"),
                    ("roundrobin", "range")]) == "roundrobin"
    assert _chosen([("sticky", "range"), ("range", "sticky"), ("cooperative-sticky", "range"),
                    ("range",)]) == "range"  # votes: sticky 1, range 2 (sticky not common)


def test_a_tie_goes_to_the_first_in_kafkas_vote_map():
    assert _chosen([("roundrobin", "range"), ("range", "roundrobin")]) == "range"
    assert _chosen([("range", "roundrobin"), ("roundrobin", "range")]) == "range"
    assert java_hash_map_order(["cooperative-sticky", "roundrobin", "range", "sticky"]) == [
        "sticky", "range", "roundrobin", "cooperative-sticky"]


# java.util.HashMap's order (Java 17) of the keys p0..p{n-1} put in that order: 12 keys fill
# the default 16 buckets to the threshold, 13 double them, 24 and 25 likewise at 32
JAVA_ORDERS = {
    12: "p0,p1,p11,p2,p3,p4,p5,p6,p7,p8,p9,p10",
    13: "p0,p1,p2,p3,p4,p5,p6,p7,p8,p9,p10,p12,p11",
    24: "p0,p1,p2,p3,p4,p5,p6,p7,p8,p9,p10,p21,p20,p12,p23,p11,p22,p14,p13,p16,p15,p18,p17,p19",
    25: "p0,p1,p2,p3,p4,p5,p6,p7,p8,p9,p10,p12,p11,p14,p13,p16,p15,p18,p17,p19,p21,p20,p23,p22,p24",
}


def test_java_hash_map_order_is_javas_as_the_table_grows():
    for count, order in JAVA_ORDERS.items():
        assert java_hash_map_order([f"p{i}" for i in range(count)]) == order.split(","), count


@st.composite
def _preferences(draw):
    common = draw(st.sampled_from(POOL))
    members = []
    for _ in range(draw(st.integers(1, 5))):
        names = draw(st.permutations(POOL))[:draw(st.integers(1, len(POOL)))]
        if common not in names:
            names = (*names, common)
        members.append(tuple(names))
    return members


@given(_preferences())
def test_the_protocol_has_the_most_first_common_votes(preferences):
    common = set(POOL).intersection(*map(set, preferences))
    votes = {}
    for names in preferences:
        vote = next(n for n in names if n in common)
        votes[vote] = votes.get(vote, 0) + 1
    chosen = _chosen(preferences)
    assert votes.get(chosen, 0) == max(votes.values())
    assert chosen == max(java_hash_map_order(votes), key=votes.__getitem__)
