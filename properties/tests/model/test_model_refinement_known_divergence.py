"""The refinement checker's one excuse, "known-divergence", covers only what it names.

An ISR shrink the spec cannot take is excused when the controller dropped a follower whose log is
in fact as long as the leader's (Kafka judges a follower by its last fetch, the spec by its log:
MODEL.md). The same step dropping a follower that really lags must not be excused: the spec takes
such a shrink, so a model step that still fails to refine is a model bug, reported "unmatched".
Found by mutation testing (docs/mutation.md, sample 79fa682): the excuse read `>=` as `<=`, and
excused every shrink of a lagging follower."""

from __future__ import annotations

import attrs

from kafkaref.model import events as ev
from kafkaref.model.config import ClusterConfig
from kafkaref.model.refinement import image, refine_step
from kafkaref.model.step import step
from kafkaref.model.values import initial_state


def walk(config, events):
    """The model state before the last event, the abstract state there, and the last event."""
    state, abstract = initial_state(config), image(initial_state(config), 0)
    for event in events[:-1]:
        after, _ = step(state, event)
        abstract, mapping = refine_step(abstract, state, event, after)
        assert mapping.kind in ("spec", "stutter"), mapping
        state = after
    return state, abstract, events[-1]


def lagging_follower_dropped():
    """b1 leads with one record, b2 caught up, b3 never fetched; after the lag time the
    controller commits the shrink that drops b3 (log 0, the leader's 1)."""
    config = ClusterConfig(brokers=3, replica_lag_time_max_ms=100)
    events = [ev.Elect(0, 0), ev.Produce(1, 0, 0, (b"a",), acks=1),
              ev.ReplicaFetch(0, 1, 0, 0, -1, 0), ev.ReplicaFetch(0, 1, 0, 1, 0, 0),
              ev.Tick(200), ev.CommitIsrChange(0)]
    return walk(config, events)


def test_dropping_a_lagging_follower_refines():
    before, abstract, event = lagging_follower_dropped()
    after, _ = step(before, event)
    assert before.partitions[0].control.isr - after.partitions[0].control.isr == {2}
    _, mapping = refine_step(abstract, before, event, after)
    assert mapping.kind == "spec", mapping


def test_a_broken_shrink_of_a_lagging_follower_is_not_excused():
    before, abstract, event = lagging_follower_dropped()
    after, _ = step(before, event)
    # the same shrink with a record id spent that no record holds: no spec step does that
    part = after.partitions[0]
    broken = attrs.evolve(after, partitions=(attrs.evolve(part, next_record_id=part.next_record_id + 1),
                                             *after.partitions[1:]))
    _, mapping = refine_step(abstract, before, event, broken)
    assert mapping.kind == "unmatched", mapping
