"""The seeded workloads (model/workload.py) draw every kind of event their weights name, so the
random walks of the refinement tests and `kafkaref bench model` hold what they say they hold:
faults included in FAULTY's, none of the fault kinds in MIXED's.

Found by mutation testing (session 79fa682's survivor 00158): the kind test negated (every tick,
ISR commit, crash, restart and election drawn became a ListOffsets) passed the model layer, its
walks left without faults."""

import pytest

from kafkaref.model import events as ev
from kafkaref.model.config import ClusterConfig
from kafkaref.model.values import initial_state
from kafkaref.model.workload import FAULTY, MIXED, Workload

EVENT_OF = {"produce": ev.Produce, "fetch": ev.Fetch, "replicate": ev.ReplicaFetch,
            "list": ev.ListOffsets, "tick": ev.Tick, "isr": ev.CommitIsrChange,
            "crash": ev.CrashBroker, "restart": ev.RestartBroker, "elect": ev.Elect}
FAULTS = {ev.CrashBroker, ev.RestartBroker}


@pytest.mark.parametrize("weights", [MIXED, FAULTY], ids=["mixed", "faulty"])
def test_a_walk_draws_every_kind_its_weights_name(weights):
    config = ClusterConfig(brokers=3, partitions=2, replica_lag_time_max_ms=50)
    start = initial_state(config)
    drawn = {type(e) for e in Workload(11, weights).events(start, 2_000)}
    named = {EVENT_OF[kind] for kind in weights}
    assert named <= drawn
    assert drawn <= named | {ev.Elect, ev.Tick, ev.RestartBroker}  # leaderless: elect / restart
    if weights is MIXED:
        assert not drawn & FAULTS
