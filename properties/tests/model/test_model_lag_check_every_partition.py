"""Kafka's isr-expiration task checks every partition a broker leads: one without a live leader
(never elected, or its leader down) is skipped and the check goes on to the next. Here the
first partition has no leader and the second a follower that never fetched: the lag check must
still propose to drop it. ModelMachine checks the same after every Tick
(model_machine.assert_every_leader_checked_its_lag), but its walks did not reach this case, so
this fixes the case. Found by mutation testing (the fresh sample's 00266: the skip read as
`break`, ending the check at the first leaderless partition, passed the model layer)."""

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig
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
