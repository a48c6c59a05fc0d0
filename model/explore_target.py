"""`kafkaref explore --target model`: exhaustive exploration of the model with spec/explore.py.

build(options) -> (initial_states, successors, invariants, describe). An explored node is the
model state, the ghost history (model/properties.py) and the remaining fault budget. The event
alphabet per node: the first election, acks=all produces of one record (request id = the record
id it will get, so ids add no states), consumer reads from offset 0, replica fetches of every
live follower, ticks of the lag time, ISR change commits, elections, crashes, restarts, flushes
and (when configured) unclean elections. Bounds: records written, leader epochs, ticks, crashes,
consumer reads.

Invariants on every node: the spec's invariants on the refinement image of the partition and the
client-level properties; with refinement=True also RefinesSpec: every step on the way mapped to
spec (kip320) steps or a stutter (model/refinement.py), which makes the refinement check
exhaustive for the bounds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kafkaref.model import events as ev
from kafkaref.model.api import replica_fetch_for
from kafkaref.model.config import Bug, ClusterConfig
from kafkaref.model.properties import CLIENT_PROPERTIES, Ghost, observe
from kafkaref.model.refinement import image, refine_step
from kafkaref.model.render import render_state
from kafkaref.model.step import step
from kafkaref.model.values import ModelState, initial_state
from kafkaref.spec.invariants import INVARIANTS

LAG_MS = 100
FETCH_REQUEST_BASE = 1_000_000  # consumer fetch request ids, apart from produce ids


@attrs.frozen
class Limits:
    """The exploration's bounds; built only by limits_from_options, which holds the defaults."""

    records: int
    max_epoch: int
    ticks: int
    crashes: int
    reads: int
    flushes: bool
    elections: bool  # elections while the leader is alive (leadership moves)
    acks: tuple[int, ...]  # the produce variants tried
    refinement: bool  # also map every explored step onto the spec (slower)


@attrs.frozen(cache_hash=True)
class Node:
    """An explored state. With refinement on, `abstract` is the spec state this node maps to
    (so every explored step is checked to be spec steps or a stutter) and `refines` says whether
    every step on the way mapped."""

    state: ModelState
    ghost: Ghost
    ticks_left: int
    crashes_left: int
    reads_left: int
    abstract: Any = None
    refines: bool = True


def config_from_options(options: Mapping[str, Any]) -> ClusterConfig:
    replicas = int(options.get("replicas", 3))
    bugs = options.get("bugs", ())
    if isinstance(bugs, str):
        bugs = [b for b in bugs.split(",") if b]
    return ClusterConfig(
        brokers=replicas,
        partitions=1,
        replication_factor=replicas,
        min_insync_replicas=int(options.get("min_insync_replicas", min(2, replicas))),
        unclean_leader_election=bool(options.get("unclean", False)),
        replica_lag_time_max_ms=LAG_MS,
        flush_interval_messages=options.get("flush_interval_messages"),
        bugs=frozenset(b if isinstance(b, Bug) else Bug(b) for b in bugs),
    )


def limits_from_options(options: Mapping[str, Any]) -> Limits:
    return Limits(
        records=int(options.get("max_records", 2)),
        max_epoch=int(options.get("max_epoch", 2)),
        ticks=int(options.get("ticks", 1)),
        crashes=int(options.get("crashes", 1)),
        reads=int(options.get("reads", 1)),
        flushes=bool(options.get("flushes", False)),
        elections=bool(options.get("elections", True)),
        acks=tuple(int(a) for a in options.get("acks", (ev.ACKS_ALL,))),
        refinement=bool(options.get("refinement", False)),
    )


def events_from(node: Node, limits: Limits) -> Iterator[ev.Event]:
    """Every event the explorer tries in this node (some may be stutters)."""
    state = node.state
    config = state.config
    part = state.partitions[0]
    control = part.control
    leader = control.leader
    leading = state.leader_replica(0) is not None
    can_bump = control.leader_epoch < limits.max_epoch
    if leading and part.next_record_id < limits.records:
        for acks in limits.acks:
            yield ev.Produce(part.next_record_id, leader, 0, (b"r%d" % part.next_record_id,), acks,
                             3 * LAG_MS)
    if leading and node.reads_left > 0:
        yield ev.Fetch(FETCH_REQUEST_BASE + node.reads_left, leader, 0, 0)
    for follower in config.assignment(0):
        event = replica_fetch_for(state, follower, 0)
        if event is not None and state.alive[follower] and state.alive[event.leader]:
            yield event
    if node.ticks_left > 0:
        yield ev.Tick(2 * LAG_MS)  # past the lag time at the next lag check, whatever its phase
    if leading and part.replicas[leader].pending_isr is not None:
        yield ev.CommitIsrChange(0)
    if can_bump and (leader is None or limits.elections):
        for candidate in config.assignment(0):
            if candidate != leader:
                yield ev.Elect(0, candidate)
                if config.unclean_leader_election:
                    yield ev.Elect(0, candidate, unclean=True)
    for broker in range(config.brokers):
        if state.alive[broker]:
            if node.crashes_left > 0 and can_bump:
                yield ev.CrashBroker(broker)
            if limits.flushes and any(
                p.replicas[broker] is not None and p.replicas[broker].flushed < p.replicas[broker].leo
                for p in state.partitions
            ):
                yield ev.Flush(broker)
        else:
            yield ev.RestartBroker(broker)


def _label(event: ev.Event) -> str:
    return repr(event)


def make_successors(limits: Limits):
    def successors(node: Node) -> Iterator[tuple[str, Node]]:
        for event in events_from(node, limits):
            state, effects = step(node.state, event)
            if state is node.state and not effects:
                continue  # a stutter with no effect adds nothing
            ghost = observe(node.ghost, event, node.state, state, effects)
            abstract, refines = node.abstract, node.refines
            if limits.refinement:
                abstract, mapping = refine_step(abstract, node.state, event, state, 0, budget=2000)
                refines = refines and mapping.kind != "unmatched"
            yield _label(event), Node(
                state,
                ghost,
                node.ticks_left - isinstance(event, ev.Tick),
                node.crashes_left - isinstance(event, ev.CrashBroker),
                node.reads_left - isinstance(event, ev.Fetch),
                abstract,
                refines,
            )

    return successors


def model_invariants(refinement: bool = False) -> dict[str, Any]:
    """Spec invariants on the image, then the client-level properties, all on a Node."""
    checks: dict[str, Any] = {}
    last: list[Any] = [None, None]  # the image of the node checked last: computed once per node

    def image_of(node: Node):
        if last[0] is not node:
            last[0], last[1] = node, image(node.state, 0)
        return last[1]

    for name, predicate in INVARIANTS.items():
        checks[name] = lambda node, predicate=predicate: predicate(image_of(node))
    for name, predicate in CLIENT_PROPERTIES.items():
        checks[name] = lambda node, predicate=predicate: predicate(node.state, node.ghost)
    if refinement:
        checks["RefinesSpec"] = lambda node: node.refines
    return checks


def describe(node: Node) -> str:
    ghost = node.ghost
    lines = [render_state(node.state)]
    if ghost.acked:
        lines.append("acked: " + " ".join(f"p{p}@{o}=r{r}" for p, o, r in sorted(ghost.acked)))
    if ghost.consumed:
        lines.append("consumed: " + " ".join(f"p{p}@{o}=r{r}" for p, o, r in sorted(ghost.consumed)))
    if ghost.unclean:
        lines.append(f"unclean elections on partitions {sorted(ghost.unclean)}")
    return "\n".join(lines)


def build(options: Mapping[str, Any]):
    """The four things spec/explore.py needs, for the model with these bounds."""
    config = config_from_options(options)
    limits = limits_from_options(options)
    state = initial_state(config)
    abstract = image(state, 0) if limits.refinement else None
    start = Node(state, Ghost(), limits.ticks, limits.crashes, limits.reads, abstract)
    return [start], make_successors(limits), model_invariants(limits.refinement), describe
