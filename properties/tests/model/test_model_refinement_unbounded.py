"""The spec's bounds never disable a step of the model in a refinement check.

The spec (spec/) is explored with finite bounds (log size, records, epochs); refinement maps
every model step onto spec steps taken under spec_bounds, which must never bind however long a
model run gets, or a correct step of a long run would read as a model bug ("unmatched"). Here
the record ids and leader epochs start where the finite bounds the checker once used (10**9)
disabled the spec's Produce and Elect. Found by mutation testing (docs/mutation.md, sample
79fa682): a log bound of 10**5 in place of 10**6 went unnoticed, as any finite bound would."""

from __future__ import annotations

import attrs

from kafkaref.model import events as ev
from kafkaref.model.config import ClusterConfig
from kafkaref.model.refinement import image, refine_step
from kafkaref.model.step import step
from kafkaref.model.values import initial_state

FAR = 10**9  # record ids and epochs past any bound a bounded exploration uses


def far_along(config: ClusterConfig):
    """A fresh partition whose record id counter and controller epoch are already FAR."""
    state = initial_state(config)
    part = state.partitions[0]
    part = attrs.evolve(part, next_record_id=FAR,
                        control=attrs.evolve(part.control, leader_epoch=FAR))
    return attrs.evolve(state, partitions=(part,))


def test_an_election_and_a_produce_past_finite_bounds_refine():
    config = ClusterConfig(brokers=3)
    state = far_along(config)
    abstract = image(state, 0)
    for event in (ev.Elect(0, 0), ev.Produce(1, 0, 0, (b"a", b"b"), ev.ACKS_LEADER)):
        after, _ = step(state, event)
        abstract, mapping = refine_step(abstract, state, event, after)
        assert mapping.kind == "spec", (event, mapping)
        state = after
    assert state.partitions[0].control.leader_epoch == FAR + 1
    assert state.partitions[0].next_record_id == FAR + 2
