"""Kafka's caught-up rule (Replica.updateFetchState): a follower fetching at its leader's log end
is caught up now; one fetching at or past the log end its previous fetch saw is caught up as of
that previous fetch; one still behind that is not caught up at all by this fetch. A follower that
keeps falling behind leaves the ISR once the lag time passed since it was last caught up.

Found by mutation testing (session 79fa682's survivor 00293: `fetch_offset >= last fetch's leader
log end` read as `<=`, so a follower falling further behind counted as caught up and stayed in the
ISR; the walks' followers catch up too soon to show it)."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition, PartitionConfig
from kafkaref.impl.protocol.records import build_batch

LAG_MS = 500


def appended(leader: Partition, count: int) -> None:
    for _ in range(count):
        assert leader.append_as_leader(build_batch([(b"k", b"v", (), 0)]), 1).error == (
            ErrorCode.none)


def test_a_follower_falling_behind_leaves_the_isr_after_the_lag_time():
    now = [0]
    leader = Partition("t", 0, 1, MemoryLog(), clock=lambda: now[0],
                       config=PartitionConfig(replica_lag_time_max_ms=LAG_MS,
                                              min_insync_replicas=1))
    leader.make_leader(1, {1, 2}, (1, 2))
    appended(leader, 5)
    leader.fetch(5, 1 << 20, replica_id=2)  # t=0: at the log end, caught up now
    appended(leader, 5)  # log end 10
    now[0] = 400
    leader.fetch(5, 1 << 20, replica_id=2)  # at the previous fetch's log end: caught up as of 0
    now[0] = 800
    leader.fetch(6, 1 << 20, replica_id=2)  # below the previous fetch's log end (10): not caught up
    leader.maybe_shrink_isr(now=900)  # last caught up at 0: 900 ms ago, past the lag time
    assert leader.isr == {1}
