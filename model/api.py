"""The library API that properties/ and chaos/ use: feed events, get expected responses and state.

    model = ReferenceModel(ClusterConfig(brokers=3))
    model.feed(Elect(partition=0, leader=0))
    effects = model.feed(Produce(request_id=1, broker=0, partition=0, values=(b"a",)))
    model.check()        # names of violated client-level properties (empty when fine)
    print(model.render())

The wrapper is the only mutable thing in model/: it holds the current pure state and the ghost
history (model/properties.py) and replaces them on every event.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import Effect
from kafkaref.model.events import Event, ReplicaFetch
from kafkaref.model.properties import Ghost, observe, violated_properties
from kafkaref.model.render import render_state
from kafkaref.model.step import step
from kafkaref.model.values import ModelState, initial_state


def replica_fetch_for(state: ModelState, follower: int, partition: int, max_bytes: int = 1 << 20,
                      response_lost: bool = False) -> ReplicaFetch | None:
    """The fetch a follower would send now: from its log end offset, with the latest epoch of its
    epoch cache (as Kafka's fetcher does: an epoch it led without writing counts too) and its
    current leader epoch (KIP-320). None when it has no leader to fetch from."""
    replica = state.partitions[partition].replicas[follower]
    if replica is None or replica.leader is None or replica.leader == follower:
        return None
    return ReplicaFetch(
        leader=replica.leader,
        follower=follower,
        partition=partition,
        fetch_offset=replica.leo,
        last_fetched_epoch=replica.latest_epoch,
        current_leader_epoch=replica.leader_epoch,
        max_bytes=max_bytes,
        response_lost=response_lost,
    )


class ReferenceModel:
    """A convenience driver over the pure step(): keeps state, effects and the ghost history."""

    def __init__(self, config: ClusterConfig | None = None, state: ModelState | None = None):
        self.state = state if state is not None else initial_state(config or ClusterConfig())
        self.ghost = Ghost()
        self.events: list[Event] = []

    @property
    def config(self) -> ClusterConfig:
        return self.state.config

    def feed(self, event: Event) -> tuple[Effect, ...]:
        before = self.state
        self.state, effects = step(before, event)
        self.ghost = observe(self.ghost, event, before, self.state, effects)
        self.events.append(event)
        return effects

    def feed_all(self, events: Iterable[Event]) -> list[Effect]:
        out: list[Effect] = []
        for event in events:
            out.extend(self.feed(event))
        return out

    def replicate(self, follower: int, partition: int = 0) -> tuple[Effect, ...]:
        event = replica_fetch_for(self.state, follower, partition)
        return () if event is None else self.feed(event)

    def check(self) -> list[str]:
        return violated_properties(self.state, self.ghost)

    def render(self) -> str:
        return render_state(self.state)
