"""Refinement across a step the spec does not model: after it the abstract state is re-anchored
on the model's image, except that a follower which has not reconciled its log in the new epoch
keeps its older spec view, so that its truncation, when it comes, is still a spec step (the
spec's FencedBecomeFollowerAndTruncate needs an epoch below the quorum's). Found by mutation
testing (the fresh sample's 00176: re-anchoring such a follower in the new epoch passed the
model layer; the random walks never elect uncleanly)."""

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig
from kafkaref.model.refinement import check_trace


def test_a_follower_truncating_after_an_unclean_election_refines_the_spec():
    config = ClusterConfig(brokers=3, replica_lag_time_max_ms=100, unclean_leader_election=True,
                           min_insync_replicas=1)
    model = ReferenceModel(config)
    model.feed(ev.Elect(0, 0))
    model.feed(ev.Tick(300))
    model.feed(ev.CommitIsrChange(0))  # the ISR is the leader alone
    model.feed(ev.Produce(1, 0, 0, (b"a",), ev.ACKS_LEADER))
    model.replicate(1)  # 1 holds the record, outside the ISR
    model.replicate(1)
    model.feed(ev.CrashBroker(0))
    model.feed(ev.Elect(0, 2, unclean=True))  # 2, empty, leads: beyond the spec
    for _ in range(3):
        model.replicate(1)  # 1 truncates the record away and follows 2
    assert [r.leo for r in model.state.partitions[0].replicas[1:]] == [0, 0]
    report = check_trace(config, model.events)
    assert report.ok, (report.unmatched, report.invariant_failures)
    assert report.counts() == {"spec": 5, "stutter": 4, "beyond": 2}
    assert any(step.kind == "spec" and any("Truncate" in label for label in step.spec_actions)
               for step in report.steps[8:])
