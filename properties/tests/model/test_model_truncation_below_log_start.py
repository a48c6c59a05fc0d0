"""A follower truncated below its own log start: its log start comes down to the cut, as Kafka's
UnifiedLog.truncateTo lowers it (logStartOffset = min(target, logStartOffset), or
truncateFullyAndStartAt when the first segment starts above the target). It happens when an
unclean election leaves a leader whose log ends below records a follower has already deleted:
the follower's fetch at its log end is OFFSET_OUT_OF_RANGE and it truncates to the leader's end.

The model kept the old log start above the log end (log start 5 over an empty log), which
OffsetsDenseAndIncreasing (log start <= hw, <= the flushed point) rejects; and a replica whose
flushed point lay below its log start turned a DeleteRecords at exactly the log start into a
change (the fresh sample's 00145: `offset <= log_start` read as `<` survived the model layer)."""

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig


def test_a_follower_truncated_below_its_log_start_starts_its_log_at_the_cut():
    config = ClusterConfig(brokers=3, replica_lag_time_max_ms=100, unclean_leader_election=True,
                           min_insync_replicas=1)
    model = ReferenceModel(config)

    def feed(event):
        model.feed(event)
        assert model.check() == [], event

    def follower():
        r = model.state.partitions[0].replicas[1]
        return r.log_start, r.leo, r.hw, r.flushed

    feed(ev.Elect(0, 0))
    feed(ev.Tick(300))
    feed(ev.CommitIsrChange(0))  # the ISR is the leader alone
    for request_id in range(5):
        feed(ev.Produce(request_id, 0, 0, (b"old",), ev.ACKS_LEADER))
    for _ in range(3):
        model.replicate(1)
    feed(ev.DeleteRecords(9, 0, 0, 5))
    model.replicate(1)  # the follower takes the leader's log start: 5
    assert follower() == (5, 5, 5, 5)
    feed(ev.CrashBroker(0))
    feed(ev.CrashBroker(1))
    feed(ev.Elect(0, 2, unclean=True))  # 2, empty, leads
    feed(ev.RestartBroker(1))
    for _ in range(2):
        model.replicate(1)  # OFFSET_OUT_OF_RANGE at 5: truncated to the leader's end, 0
    assert follower() == (0, 0, 0, 0)
    for request_id in range(10, 16):
        feed(ev.Produce(request_id, 2, 0, (b"new",), ev.ACKS_LEADER))
    for _ in range(3):
        model.replicate(1)
    assert follower()[:3] == (0, 6, 6) and model.check() == []
    before = model.state.partitions[0].replicas[1]
    feed(ev.Elect(0, 1))
    feed(ev.DeleteRecords(20, 1, 0, 0))  # at the log start: nothing moves
    after = model.state.partitions[0].replicas[1]
    assert (after.log_start, after.flushed, after.epoch_cache) == (
        before.log_start, before.flushed, before.epoch_cache)
