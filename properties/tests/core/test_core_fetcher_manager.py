"""The fetcher manager starts one replica fetcher per live leader its followed partitions name,
and none for a partition without a leader (leader -1, offline; or None, not yet known): Kafka's
ReplicaManager adds no fetcher for a follower whose leader is not available. Broker 0 is a
leader like any other.

Found by mutation testing (session 9df4313ef37b's survivor 00300: `leader_id >= 0` read
`>= -1` started a fetcher for the offline leader -1, which then polled for ever for a broker
that does not exist; no test looked at which fetchers run)."""

import threading
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.replication.fetcher import FetcherManager, ReplicaFetcher


class _OneRound:
    """A stop event that lets the manager's loop run exactly once."""

    def __init__(self):
        self.rounds = 0

    def wait(self, timeout: float) -> bool:
        self.rounds += 1
        return self.rounds > 1


class _Recorded(ReplicaFetcher):
    started: list[int] = []

    def start(self) -> None:
        self.started.append(self.leader_id)

    def join(self, timeout=None) -> None:
        """Never started: nothing to wait for."""


@given(leaders=st.lists(st.sampled_from([None, -1, 0, 1, 2]), max_size=6),
       leading=st.lists(st.booleans(), min_size=6, max_size=6))
def test_a_fetcher_runs_for_each_live_leader_followed(leaders, leading):
    partitions = {("t", i): SimpleNamespace(is_leader=leading[i], leader_id=leader)
                  for i, leader in enumerate(leaders)}
    server = SimpleNamespace(stopping=_OneRound(), lock=threading.Lock(), broker=SimpleNamespace(
        replica_manager=SimpleNamespace(partitions=partitions)))
    manager = FetcherManager(server, 500)
    manager.fetcher_class = _Recorded
    _Recorded.started = []
    manager.run()
    followed = {p.leader_id for p in partitions.values()
                if not p.is_leader and p.leader_id is not None and p.leader_id != -1}
    assert sorted(_Recorded.started) == sorted(followed)
    assert set(manager.fetchers) == followed
