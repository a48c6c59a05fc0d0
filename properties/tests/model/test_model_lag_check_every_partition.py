"""Kafka's isr-expiration task runs every replica.lag.time.max.ms / 2 and checks every partition
a broker leads: one without a live leader (never elected, or its leader down) is skipped and the
check goes on to the next. Here the
first partition has no leader and the second a follower that never fetched: the lag check must
still propose to drop it. ModelMachine checks the same after every Tick
(model_machine.assert_every_leader_checked_its_lag), but its walks did not reach this case, so
this fixes the case. Found by mutation testing (the fresh sample's 00266: the skip read as
`break`, ending the check at the first leaderless partition, passed the model layer)."""

from hypothesis import example, given
from hypothesis import strategies as st

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig
from kafkaref.model.step import isr_check_times
from kafkaref.properties.model_machine import assert_every_leader_checked_its_lag


def test_a_leaderless_partition_does_not_stop_the_lag_check_of_the_next():
    config = ClusterConfig(brokers=3, partitions=2, replica_lag_time_max_ms=100)
    model = ReferenceModel(config)
    leader, silent, fetching = config.assignment(1)
    model.feed(ev.Elect(1, leader))  # partition 0 stays without a leader
    model.feed(ev.Produce(1, leader, 1, (b"v",), ev.ACKS_LEADER))
    model.replicate(fetching, 1)
    model.replicate(fetching, 1)
    before = model.state
    model.feed(ev.Tick(300))
    assert_every_leader_checked_its_lag(ev.Tick(300), before, model.state)
    pending = model.state.partitions[1].replicas[leader].pending_isr
    assert pending is not None and silent not in pending and fetching in pending


@given(st.integers(1, 1_000), st.integers(0, 2_000), st.integers(0, 2_000))
@example(100, 0, 50)  # a Tick ending on a check
def test_a_tick_runs_every_lag_check_it_passes_over(lag, after, ms):
    """The lag checks a Tick from `after` to `after + ms` runs: every multiple of the interval
    (replica.lag.time.max.ms / 2) in (after, after + ms], the one at the Tick's end included
    (the fresh sample's 00312: the range stopping two short passed the model layer)."""
    config = ClusterConfig(brokers=3, replica_lag_time_max_ms=lag)
    interval = max(1, lag // 2)
    expected = [t for t in range(after + 1, after + ms + 1) if t % interval == 0]
    assert list(isr_check_times(config, after, after + ms)) == expected
