"""A parked acks=all produce is answered as soon as the leader's new ISR lets the hw pass it,
in the core lockstep (the impl and the model alike)."""

from kio.schema.errors import ErrorCode

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig
from kafkaref.properties.lockstep import CoreLockstep


def feed(model, core, event):
    expected = model.feed(event)
    assert core.feed(event) == expected, event
    return expected


def test_a_parked_acks_all_produce_completes_when_the_leaders_new_isr_lets_the_hw_pass_it():
    """The controller fences both followers: the leader learns its ISR is itself alone, its hw
    passes the parked batch at once, and the acks=all produce is answered then, not at its
    timeout (Kafka's makeLeader completes the delayed produces after raising the hw). Found by
    the mutation sample's 00051 (become_leader's wake-up of the produce purgatory dropped)."""
    config = ClusterConfig(brokers=3, min_insync_replicas=1)
    model, core = ReferenceModel(config), CoreLockstep(config)
    feed(model, core, ev.Elect(0, 0))
    assert feed(model, core, ev.Produce(1, 0, 0, (b"a",), acks=ev.ACKS_ALL)) == ()  # parked
    assert feed(model, core, ev.CrashBroker(1)) == ()
    (answer,) = feed(model, core, ev.CrashBroker(2))
    assert (answer.request_id, answer.error, answer.base_offset) == (1, ErrorCode.none, 0)
