"""A new leader counts its followers' catch-up times afresh (Kafka's Replica.resetReplicaState):
an ISR member as caught up now, any other replica as caught up at time 0. So a replica that was
out of the ISR when the leader took over, and joins it later without ever reaching the leader's
log end, lags from time 0: the lag check at exactly replica.lag.time.max.ms keeps it (Kafka's
isCaughtUp: `now - lastCaughtUpTimeMs <= replicaMaxLagMs`), the next check drops it. Found by
mutation testing (the sample on 9df4313's 00019: a non-ISR replica's time 0 read as -1 passed
the model layer, though it drops the replica one check early)."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig

LAG = 100  # lag checks at every 50 ms


@given(st.integers(0, LAG // 2 - 1))
def test_a_replica_outside_the_isr_at_the_takeover_lags_from_time_0(crash_at):
    """b2 crashes at `crash_at` (leaving the ISR, a new leader epoch on b1), b1 writes a record
    that b3 does not fetch, b2 returns and fetches at the hw, below the leader's end: it joins
    the ISR never having caught up. It stays in at the check at LAG ms, and the check at 1.5 LAG
    proposes to drop it (b3 too: it is not at the leader's end either)."""
    model = ReferenceModel(ClusterConfig(brokers=3, replica_lag_time_max_ms=LAG))
    leader, late, other = model.config.assignment(0)
    model.feed(ev.Elect(0, leader))
    model.feed(ev.Tick(crash_at))
    model.feed(ev.CrashBroker(late))
    caught_up = model.state.partitions[0].replicas[leader].caught_up_ms
    assert (caught_up[late], caught_up[other]) == (0, crash_at)
    model.feed(ev.Produce(1, leader, 0, (b"v",), ev.ACKS_LEADER))
    model.feed(ev.RestartBroker(late))
    model.replicate(late)
    model.feed(ev.CommitIsrChange(0))
    replica = model.state.partitions[0].replicas[leader]
    assert late in replica.isr and replica.follower_offsets[late] < replica.leo
    model.feed(ev.Tick(LAG - crash_at))  # the checks at LAG / 2 and LAG
    assert model.state.partitions[0].replicas[leader].pending_isr is None
    model.feed(ev.Tick(LAG // 2))
    assert model.state.partitions[0].replicas[leader].pending_isr == frozenset({leader})


@given(st.integers(LAG // 2 + 1, LAG - 1))
def test_a_fetch_at_the_leaders_end_makes_the_follower_caught_up_now(at):
    """Kafka's Replica.updateFetchState: a fetch at (or past) the leader's log end makes the
    follower caught up at that fetch's time, not at its previous fetch's (the second clause,
    for a follower that only reached where the leader's end was then). b2 fetches the record at
    time 0 (its previous fetch), then at the leader's end at `at`; the leader writes again, and
    the check at 1.5 LAG keeps b2 (caught up less than LAG before), dropping only b3. Found by
    mutation testing (`pick --folder model --seed 28`: the end's `>=` read as `>` passed the
    model layer)."""
    model = ReferenceModel(ClusterConfig(brokers=3, replica_lag_time_max_ms=LAG))
    leader, fetching, silent = model.config.assignment(0)
    model.feed(ev.Elect(0, leader))
    model.feed(ev.Produce(1, leader, 0, (b"v",), ev.ACKS_LEADER))
    model.replicate(fetching)  # at 0, below the leader's end 1
    model.feed(ev.Tick(at))
    model.replicate(fetching)  # at 1, the leader's end
    assert model.state.partitions[0].replicas[leader].caught_up_ms[fetching] == at
    model.feed(ev.Produce(2, leader, 0, (b"w",), ev.ACKS_LEADER))
    model.feed(ev.Tick(LAG + LAG // 2 - at))
    assert model.state.partitions[0].replicas[leader].pending_isr == frozenset({leader, fetching})


@given(st.integers(LAG // 2 + 1, LAG - 11))
def test_a_fetch_reaching_the_previous_end_makes_the_follower_caught_up_then(previous):
    """The second clause: a fetch at or past where the leader's end was at the follower's
    previous fetch makes it caught up as of that previous fetch. b2 fetches at 0 at `previous`
    (the leader's end then 1), the leader writes again, b2 fetches at exactly 1 ten ms later
    (below the leader's new end): caught up at `previous`, so the check at 1.5 LAG keeps it."""
    model = ReferenceModel(ClusterConfig(brokers=3, replica_lag_time_max_ms=LAG))
    leader, fetching, silent = model.config.assignment(0)
    model.feed(ev.Elect(0, leader))
    model.feed(ev.Produce(1, leader, 0, (b"v",), ev.ACKS_LEADER))
    model.feed(ev.Tick(previous))
    model.replicate(fetching)  # at 0, the leader's end 1
    model.feed(ev.Produce(2, leader, 0, (b"w",), ev.ACKS_LEADER))
    model.feed(ev.Tick(10))
    model.replicate(fetching)  # at 1: where the leader's end was
    assert model.state.partitions[0].replicas[leader].caught_up_ms[fetching] == previous
    model.feed(ev.Tick(LAG + LAG // 2 - previous - 10))
    assert model.state.partitions[0].replicas[leader].pending_isr == frozenset({leader, fetching})
