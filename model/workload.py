"""Seeded random event streams over the model: the mixed workload of `kafkaref bench model` and
of the refinement random tests. One random.Random(seed) drives everything (deterministic)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from kafkaref.model import events as ev
from kafkaref.model.api import replica_fetch_for
from kafkaref.model.step import step
from kafkaref.model.values import ModelState

# kind -> weight. Faults are rare, as in a healthy cluster under load.
MIXED = {"produce": 30, "fetch": 20, "replicate": 40, "list": 4, "tick": 4, "isr": 1}
FAULTY = {**MIXED, "crash": 2, "restart": 3, "elect": 2}


class Workload:
    def __init__(self, seed: int, weights: dict[str, int] = MIXED, batch: int = 2):
        self.rng = random.Random(seed)
        self.kinds = list(weights)
        self.weights = list(weights.values())
        self.batch = batch
        self.request_id = 0

    def next_event(self, state: ModelState) -> ev.Event:
        rng = self.rng
        config = state.config
        p = rng.randrange(config.partitions)
        kind = rng.choices(self.kinds, self.weights)[0]
        leader = state.partitions[p].control.leader
        if leader is None:
            live = [b for b in config.assignment(p) if state.alive[b]]
            if live:
                return ev.Elect(p, rng.choice(live))
            return ev.RestartBroker(rng.choice(config.assignment(p)))
        self.request_id += 1
        if kind == "produce":
            values = tuple(b"value-%d" % (self.request_id * 8 + i) for i in range(self.batch))
            acks = rng.choice((ev.ACKS_ALL, ev.ACKS_ALL, 1))
            return ev.Produce(self.request_id, leader, p, values, acks, 30_000)
        if kind == "fetch":
            replica = state.partitions[p].replicas[leader]
            offset = max(0, replica.hw - rng.randrange(4))
            return ev.Fetch(self.request_id, leader, p, offset, 1 << 16, 1, rng.choice((0, 0, 100)))
        if kind == "replicate":
            for follower in rng.sample(config.assignment(p), config.replication_factor):
                event = replica_fetch_for(state, follower, p)
                if event is not None and state.alive[follower]:
                    return event
            return ev.Tick(1)
        if kind == "list":
            return ev.ListOffsets(self.request_id, leader, p, ev.LATEST)
        if kind == "isr":
            return ev.CommitIsrChange(p)
        if kind == "crash":
            return ev.CrashBroker(rng.randrange(config.brokers))
        if kind == "restart":
            return ev.RestartBroker(rng.randrange(config.brokers))
        if kind == "elect":
            return ev.Elect(p, rng.choice(config.assignment(p)))
        return ev.Tick(rng.choice((1, 10, 100)))

    def events(self, state: ModelState, count: int) -> Iterator[ev.Event]:
        """`count` events, each drawn against the state the previous ones led to."""
        for _ in range(count):
            event = self.next_event(state)
            state, _ = step(state, event)
            yield event
