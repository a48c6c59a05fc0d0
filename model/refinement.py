"""Refinement: the model seen through an abstraction function is the spec (variant kip320).

image(state, partition, requests) maps one partition of a model state onto a spec State:
    spec replica i             <- the broker assignment(partition)[i]
    logs[i]                    <- Record(id, epoch) of that broker's log entries
    replicas[i]                <- (hw, leader epoch, leader, ISR) as that broker believes them
    quorum                     <- the controller's (leader epoch, leader, ISR) of the partition
    requests                   <- every LeaderAndIsr the controller has sent (an auxiliary history
                                  variable, kept by the checker: the model delivers them at once)
    next_record_id / epoch     <- the partition's record id counter / controller epoch + 1
What the image forgets: time, purgatory, flushed offsets, follower fetch positions and catch-up
times, pending ISR changes, the ELR, other partitions, dead brokers' liveness.

The model is coarser-grained than the spec in places (a produce appends a batch, a fetch copies
many records and moves the hw by several offsets, an election is delivered to every live broker
at once), so one model step maps to a *sequence* of spec steps. The checker finds that sequence
by a bounded best-first search over spec successors, guided by the distance to the model's next
image, and accepts a step when it reaches a spec state related to it:
    logs, quorum, requests and counters equal; the leader's hw in the spec at least the model's;
    the leader's and synced followers' views (epoch, leader) equal; a follower that adopted a new epoch but has not fetched in it yet may still hold an
    older view in the spec (the model truncates lazily, on the first fetch of the epoch, where
    the spec truncates on becoming follower).
Steps outside the spec (a crash that loses unflushed records, KIP-966's restart and ELR rules,
unclean elections) are reported as "beyond" and the abstract state is re-anchored on the image.
See MODEL.md.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import sys
from collections.abc import Iterable

import attrs

from kafkaref.model.config import ClusterConfig
from kafkaref.model.events import CommitIsrChange, CrashBroker, Elect, Event, RestartBroker
from kafkaref.model.step import step
from kafkaref.model.values import ModelState, initial_state
from kafkaref.spec.invariants import INVARIANTS
from kafkaref.spec.machine import successors as spec_successors
from kafkaref.spec.state import Bounds, QuorumState, Record, ReplicaState, State

SPEC_VARIANT = "kip320"
UNBOUNDED = sys.maxsize  # a spec bound that never binds


def outside_spec(event: Event, before: ModelState, partition: int) -> bool:
    """Steps the spec does not model: crashes (unflushed data lost) and restarts (KIP-966's
    rule for the last ISR member), unclean elections and elections from the ELR."""
    if isinstance(event, CrashBroker | RestartBroker):
        return True
    if isinstance(event, Elect) and event.partition == partition:
        return event.unclean or event.leader not in before.partitions[partition].control.isr
    return False


def _index(config: ClusterConfig, partition: int) -> dict[int, int]:
    return {broker: i for i, broker in enumerate(config.assignment(partition))}


def image(state: ModelState, partition: int = 0, requests: frozenset[QuorumState] = frozenset()) -> State:
    """The spec state one partition of the model maps to."""
    config = state.config
    index = _index(config, partition)
    part = state.partitions[partition]

    def name(broker: int | None) -> int | None:
        return None if broker is None else index[broker]

    logs, views = [], []
    for broker in config.assignment(partition):
        replica = part.replicas[broker]
        logs.append(tuple(Record(e.id, e.epoch) for e in replica.log))
        views.append(ReplicaState(replica.hw, replica.leader_epoch, name(replica.leader),
                                  frozenset(index[b] for b in replica.isr)))
    control = part.control
    quorum = QuorumState(control.leader_epoch, name(control.leader), frozenset(index[b] for b in control.isr))
    return State(tuple(logs), tuple(views), quorum, requests, part.next_record_id, control.leader_epoch + 1)


def image_violations(state: ModelState) -> list[str]:
    """Names of spec invariants that fail on the image of any partition. (Invariants need no
    request history, so the image is taken with an empty request set.)"""
    broken = []
    for partition in range(state.config.partitions):
        spec_state = _deleted_cut(image(state, partition), _highest_log_start(state, partition))
        broken.extend(f"{name}@p{partition}" for name, holds in INVARIANTS.items() if not holds(spec_state))
    return broken


def _highest_log_start(state: ModelState, partition: int) -> int:
    replicas = state.partitions[partition].replicas
    return max((replicas[b].log_start for b in state.config.assignment(partition)
                if replicas[b] is not None), default=0)


def _deleted_cut(spec_state: State, cut: int) -> State:
    """The invariants judge the logs above the highest log start (DeleteRecords): below it the
    records are deleted on one replica, and on every other once its hw passes that start. Kafka
    promises nothing there: a leader answers a follower's last fetched epoch that it deleted
    with its log start as that epoch's end (LeaderEpochFileCache.endOffsetFor, "the data has
    already been removed"), so a follower may append after records the leader never had, below
    the log start both then move to. Every replica gets the same placeholder per deleted
    offset (a negative id, epoch -1: distinct per offset, below every real epoch)."""
    if cut <= 0:
        return spec_state
    logs = tuple(tuple(Record(-1 - offset, -1) for offset in range(min(cut, len(log)))) + log[cut:]
                 for log in spec_state.logs)
    return attrs.evolve(spec_state, logs=logs)


def spec_bounds(config: ClusterConfig) -> Bounds:
    """No bounds but the replicas: a spec step the model takes is never disabled, however long
    the run (a finite bound would make a correct step of a long enough run "unmatched")."""
    return Bounds(replicas=config.replication_factor, log_size=UNBOUNDED, max_records=UNBOUNDED,
                  max_epoch=UNBOUNDED)


# ---------------------------------------------------------------------------------------------
# The relation between a spec state and the model's next state, and a distance to guide search.


def _lagging_follower(state: ModelState, broker: int, partition: int) -> bool:
    """A live follower that adopted its epoch but has not reconciled its log in it yet, or one
    told there is no leader (the spec never handles such a request)."""
    replica = state.partitions[partition].replicas[broker]
    if not state.alive[broker]:
        return True
    return replica.leader != broker and (replica.leader is None or replica.synced_epoch < replica.leader_epoch)


def _view_distance(spec_view: ReplicaState, target: ReplicaState, lagging: bool, leads: bool) -> int:
    # Followers' hws are not compared: the model's followers learn the hw from every fetch
    # response (so it may even go down), the spec's only when they copy a record. A leader's hw
    # in the spec may therefore be ahead of the model's (a new leader keeps the hw it had as a
    # follower): the spec claims at least as much committed as the model.
    distance = max(0, target.hw - spec_view.hw) if leads else 0
    same = spec_view.leader_epoch == target.leader_epoch and spec_view.leader == target.leader
    if lagging:
        return distance + (0 if same or spec_view.leader_epoch < target.leader_epoch else 1)
    distance += 0 if same else 1
    if leads and spec_view.isr != target.isr:
        distance += 1
    return distance


def _log_distance(a: tuple, b: tuple) -> int:
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return (len(a) - common) + (len(b) - common)


def distance(spec_state: State, target: State, lagging: tuple[bool, ...]) -> int:
    """0 exactly when spec_state is related to the target image; otherwise a rough count of
    the spec steps still needed."""
    d = 0
    for i in range(len(target.logs)):
        d += _log_distance(spec_state.logs[i], target.logs[i])
        d += _view_distance(spec_state.replicas[i], target.replicas[i], lagging[i],
                            target.replicas[i].leader == i)
    q, t = spec_state.quorum, target.quorum
    d += (q.leader != t.leader) + (q.leader_epoch != t.leader_epoch) + (q.isr != t.isr)
    d += len(spec_state.requests ^ target.requests)
    d += abs(spec_state.next_record_id - target.next_record_id)
    d += abs(spec_state.next_leader_epoch - target.next_leader_epoch)
    return d


# An exhaustive exploration with refinement asks the same question again and again (the same
# spec state and target reached along different model paths): with a tick and a crash, 1,298
# searches in the first two minutes had 380 distinct arguments. Unanswerable ones (a step beyond
# the spec) spend the whole budget, ~0.5 s each, and were >99% of the time, so every answer is
# kept. The search is a pure function of its arguments.
@functools.lru_cache(maxsize=1 << 16)
def find_spec_path(start: State, target: State, lagging: tuple[bool, ...], bounds: Bounds,
                   max_depth: int = 24, budget: int = 4000) -> tuple[tuple[str, ...], State] | None:
    """Best-first search for spec steps from `start` to a state related to `target`. Returns the
    action labels and the reached spec state, or None within the depth and node budget."""
    if distance(start, target, lagging) == 0:
        return (), start
    counter = itertools.count()
    frontier = [(distance(start, target, lagging), 0, next(counter), start, ())]
    seen = {start}
    expanded = 0
    while frontier and expanded < budget:
        _, depth, _, state, path = heapq.heappop(frontier)
        expanded += 1
        if depth >= max_depth:
            continue
        for label, successor in spec_successors(state, bounds, SPEC_VARIANT):
            if successor in seen:
                continue
            seen.add(successor)
            d = distance(successor, target, lagging)
            if d == 0:
                return path + (label,), successor
            heapq.heappush(frontier, (d, depth + 1, next(counter), successor, path + (label,)))
    return None


# ---------------------------------------------------------------------------------------------
# Trace checking.


@attrs.frozen
class StepMapping:
    event: Event
    kind: str  # "stutter" | "spec" | "beyond" | "known-divergence" | "unmatched"
    spec_actions: tuple[str, ...] = ()


@attrs.frozen
class RefinementReport:
    steps: tuple[StepMapping, ...]
    invariant_failures: tuple[tuple[int, str], ...]  # (step number, invariant name)

    @property
    def unmatched(self) -> list[StepMapping]:
        return [s for s in self.steps if s.kind == "unmatched"]

    @property
    def ok(self) -> bool:
        return not self.unmatched and not self.invariant_failures

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.steps:
            out[s.kind] = out.get(s.kind, 0) + 1
        return out


def _re_anchor(previous: State, target: State, lagging: tuple[bool, ...]) -> State:
    """The abstract state after a step outside the spec: the image, except that lagging
    followers keep their older spec view (so they can still become followers in the spec)."""
    views = tuple(
        old if lag and old.leader_epoch < new.leader_epoch else new
        for old, new, lag in zip(previous.replicas, target.replicas, lagging, strict=True)
    )
    views = tuple(ReplicaState(new.hw, v.leader_epoch, v.leader, v.isr)
                  for v, new in zip(views, target.replicas, strict=True))
    return attrs.evolve(target, replicas=views)


def _caught_up_members_dropped(before: ModelState, after: ModelState, partition: int) -> bool:
    """The known divergence: the controller committed an ISR shrink dropping a follower whose log
    is in fact as long as the leader's (Kafka judges by the last fetch; the spec by the log)."""
    old, new = before.partitions[partition].control, after.partitions[partition].control
    dropped = old.isr - new.isr
    if not dropped or new.leader is None or old.leader_epoch != new.leader_epoch:
        return False
    leader_leo = after.partitions[partition].replicas[new.leader].leo
    return any(after.partitions[partition].replicas[b].leo >= leader_leo for b in dropped)


def refine_step(abstract: State, before: ModelState, event: Event, after: ModelState,
                partition: int = 0, budget: int = 4000) -> tuple[State, StepMapping]:
    """Map one model step (before --event--> after) from the abstract state `abstract`: the next
    abstract state and how the step mapped."""
    config = after.config
    requests = abstract.requests
    control = after.partitions[partition].control
    if control.leader_epoch != before.partitions[partition].control.leader_epoch:
        index = _index(config, partition)
        requests = requests | {QuorumState(control.leader_epoch,
                                           None if control.leader is None else index[control.leader],
                                           frozenset(index[b] for b in control.isr))}
    target = image(after, partition, requests)
    lagging = tuple(_lagging_follower(after, b, partition) for b in config.assignment(partition))
    found = find_spec_path(abstract, target, lagging, spec_bounds(config), budget=budget)
    if found is not None:
        path, reached = found
        return reached, StepMapping(event, "spec" if path else "stutter", tuple(path))
    if outside_spec(event, before, partition):
        kind = "beyond"
    elif isinstance(event, CommitIsrChange) and _caught_up_members_dropped(before, after, partition):
        kind = "known-divergence"
    else:
        kind = "unmatched"
    return _re_anchor(abstract, target, lagging), StepMapping(event, kind)


def check_trace(config: ClusterConfig, events: Iterable[Event], partition: int = 0,
                state: ModelState | None = None, budget: int = 4000) -> RefinementReport:
    """Run `events` on the model and check every step of `partition` against the spec."""
    state = state if state is not None else initial_state(config)
    abstract = image(state, partition)
    steps, failures = [], []
    for number, event in enumerate(events, start=1):
        after, _ = step(state, event)
        abstract, mapping = refine_step(abstract, state, event, after, partition, budget)
        state = after
        steps.append(mapping)
        failures.extend((number, name) for name, holds in INVARIANTS.items() if not holds(abstract))
    return RefinementReport(tuple(steps), tuple(failures))
