"""A follower fenced while the leader's proposal to add it to the ISR is in flight: the leader
drops the proposal, and the hw it held back rises with the image that fenced the follower, in
the core lockstep (the impl and the model alike)."""

from kio.schema.errors import ErrorCode

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.properties.lockstep import CoreLockstep


def feed(model, core, event):
    expected = model.feed(event)
    assert core.feed(event) == expected, event
    return expected


def test_a_parked_acks_all_produce_completes_when_the_pending_followers_broker_is_fenced():
    """Broker 1 rejoins, catches up and is proposed for the ISR; the leader appends while the
    proposal is in flight, so the maximal ISR (with broker 1, which has not fetched the new
    batch) holds the hw and parks the acks=all produce. Broker 1 crashes: its addition is
    dropped (KIP-903: the controller would refuse it by its stale broker epoch) and the
    fencing image hands the leader its ISR again, which raises the hw and answers the produce.
    (Kafka drops the proposal only on the controller's INELIGIBLE_REPLICA answer, and raises
    the hw at its next follower progress or append; kafkaref raises it with the fencing image:
    docs/semantics.md.) The wake in ReplicaManager.follower_fenced was redundant (mutation
    sample 00247 of 2225a17): this holds the image's part of the arrangement."""
    config = ClusterConfig(brokers=2, replication_factor=2, min_insync_replicas=1)
    model, core = ReferenceModel(config), CoreLockstep(config)
    feed(model, core, ev.Elect(0, 0))
    feed(model, core, ev.CrashBroker(1))
    feed(model, core, ev.RestartBroker(1))
    feed(model, core, replica_fetch_for(model.state, 1, 0))
    leader = model.state.partitions[0].replicas[0]
    assert leader.pending_isr == frozenset({0, 1}), leader  # in flight: no CommitIsrChange
    assert feed(model, core, ev.Produce(1, 0, 0, (b"a",), acks=ev.ACKS_ALL)) == ()  # parked
    assert model.state.partitions[0].replicas[0].hw == 0
    (answer,) = feed(model, core, ev.CrashBroker(1))
    assert (answer.request_id, answer.error, answer.base_offset) == (1, ErrorCode.none, 0)
    assert model.state.partitions[0].replicas[0].pending_isr is None
