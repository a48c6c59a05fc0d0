"""Breadth-first exhaustive exploration of any pure state machine.

A machine is given as initial states, a successor function yielding (action label, next state)
pairs, and named invariants (predicates on states). States must be hashable. Because the search
is breadth-first, the first violation found has a shortest trace from an initial state, which is
what a person wants to read.

Memory: each distinct state is kept once, with a pointer to the state it was first reached from
and the action that reached it (enough to rebuild shortest traces). The full state graph, every
edge included, is kept only on request (keep_graph=True) as a networkx.DiGraph: that is what
gives strongly connected components, deadlocks and GraphML/DOT export, and it costs several times
the memory of the parent map, so large explorations leave it off.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import attrs
import networkx as nx

State = Hashable
Successors = Callable[[Any], Iterable[tuple[str, Any]]]
Invariant = Callable[[Any], bool]


@attrs.frozen
class Step:
    """One state of a trace and the action that produced it (None for the initial state)."""

    action: str | None
    state: Any


@attrs.frozen
class Violation:
    invariant: str
    trace: tuple[Step, ...]

    @property
    def length(self) -> int:
        """Number of states in the trace, the initial state included."""
        return len(self.trace)


@attrs.frozen
class ExploreStats:
    """A snapshot of progress, passed to the progress callback."""

    distinct_states: int
    states_generated: int
    depth: int
    wall_seconds: float

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.wall_seconds if self.wall_seconds > 0 else 0.0


@attrs.frozen
class ExploreResult:
    distinct_states: int
    states_generated: int
    depth: int
    wall_seconds: float
    violation: Violation | None
    complete: bool  # False when max_states stopped the search early
    deadlocks: int  # states with no successor at all
    graph: nx.DiGraph | None = None

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def ok(self) -> bool:
        return self.violation is None


_ROOT = object()  # parent marker of initial states


def explore(
    initial_states: Iterable[Any],
    successors: Successors,
    invariants: Mapping[str, Invariant],
    *,
    max_states: int | None = None,
    keep_graph: bool = False,
    progress: Callable[[ExploreStats], None] | None = None,
    progress_every: int = 20_000,
) -> ExploreResult:
    """Explore every reachable state breadth-first, checking each invariant on each new state.

    Stops at the first violated invariant (its trace is a shortest one), when the state space is
    exhausted, or after max_states distinct states.
    """
    started = time.perf_counter()
    parents: dict[Any, tuple[Any, str | None]] = {}
    depth_of: dict[Any, int] = {}
    graph = nx.DiGraph() if keep_graph else None
    frontier: deque[Any] = deque()
    generated = 0
    deadlocks = 0
    depth = 0

    def elapsed() -> float:
        return time.perf_counter() - started

    def check(state: Any) -> str | None:
        for name, predicate in invariants.items():
            if not predicate(state):
                return name
        return None

    def finish(violation: Violation | None, complete: bool) -> ExploreResult:
        return ExploreResult(
            distinct_states=len(parents),
            states_generated=generated,
            depth=depth,
            wall_seconds=elapsed(),
            violation=violation,
            complete=complete,
            deadlocks=deadlocks,
            graph=graph,
        )

    for state in initial_states:
        generated += 1
        if state in parents:
            continue
        parents[state] = (_ROOT, None)
        depth_of[state] = 0
        if graph is not None:
            graph.add_node(state)
        broken = check(state)
        if broken:
            return finish(Violation(broken, _trace(parents, state)), complete=False)
        frontier.append(state)

    while frontier:
        state = frontier.popleft()
        state_depth = depth_of.pop(state)
        any_successor = False
        for action, successor in successors(state):
            any_successor = True
            generated += 1
            if graph is not None:
                graph.add_edge(state, successor, action=action)
            if successor in parents:
                continue
            parents[successor] = (state, action)
            depth_of[successor] = state_depth + 1
            depth = max(depth, state_depth + 1)
            broken = check(successor)
            if broken:
                return finish(Violation(broken, _trace(parents, successor)), complete=False)
            frontier.append(successor)
            if progress is not None and len(parents) % progress_every == 0:
                progress(ExploreStats(len(parents), generated, depth, elapsed()))
            if max_states is not None and len(parents) >= max_states:
                return finish(None, complete=False)
        if not any_successor:
            deadlocks += 1
    return finish(None, complete=True)


def _trace(parents: dict[Any, tuple[Any, str | None]], last: Any) -> tuple[Step, ...]:
    steps = []
    state = last
    while state is not _ROOT:
        parent, action = parents[state]
        steps.append(Step(action, state))
        state = parent
    return tuple(reversed(steps))


def format_trace(
    violation: Violation,
    describe: Callable[[Any], str] = repr,
    diff: Callable[[Any, Any], list[str]] | None = None,
) -> str:
    """Render a counterexample step by step: the initial state in full, then for each step the
    action taken and what it changed (or the whole state when no diff function is given)."""
    lines = [f"Invariant {violation.invariant} violated after {violation.length} states:"]
    previous = None
    for number, step in enumerate(violation.trace, start=1):
        if previous is None:
            lines.append(f"  state {number} (initial)")
            lines.extend("    " + line for line in describe(step.state).splitlines())
        else:
            lines.append(f"  state {number}: {step.action}")
            changes = diff(previous, step.state) if diff else describe(step.state).splitlines()
            lines.extend("    " + line for line in changes)
        previous = step.state
    return "\n".join(lines)


def strongly_connected_components(graph: nx.DiGraph) -> list[set[Any]]:
    """Non-trivial strongly connected components: sets of states a run can cycle through forever
    (livelocks when none of them makes progress)."""
    return [c for c in nx.strongly_connected_components(graph) if len(c) > 1]


def terminal_states(graph: nx.DiGraph) -> list[Any]:
    """States with no outgoing edge: deadlocks, unless the machine is meant to stop there."""
    return [node for node, degree in graph.out_degree() if degree == 0]
