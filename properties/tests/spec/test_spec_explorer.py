"""The explorer on small machines whose answers are known: breadth-first search returns a
shortest trace, bounds stop it, and the graph it keeps is a faithful networkx graph."""

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from kafkaref.spec.explore import (
    explore,
    format_trace,
    strongly_connected_components,
    terminal_states,
)


def counter_machine(limit: int):
    """A counter that can add 1 or 2, up to limit."""

    def successors(n):
        for step in (1, 2):
            if n + step <= limit:
                yield f"add {step}", n + step

    return successors


def test_counts_and_depth_of_a_counter():
    result = explore([0], counter_machine(10), {})
    assert result.ok and result.complete
    assert result.distinct_states == 11
    assert result.depth == 5  # 10 = 2 * 5
    assert result.deadlocks == 1  # 10 has no successor


def test_violation_trace_is_shortest():
    result = explore([0], counter_machine(10), {"below 7": lambda n: n < 7})
    assert result.violation.invariant == "below 7"
    assert result.violation.length == 5  # 0 -> 2 -> 4 -> 6 -> 7 (or an equally short one)
    assert result.violation.trace[0].action is None


def test_violation_in_initial_state():
    result = explore([3], counter_machine(5), {"even": lambda n: n % 2 == 0})
    assert result.violation.length == 1


def test_max_states_stops_early():
    result = explore([0], counter_machine(1000), {}, max_states=50)
    assert not result.complete and result.distinct_states == 50


def test_graph_gives_cycles_and_terminal_states():
    def ring(n):
        if n == 10:
            return
        yield "next", (n + 1) % 4
        if n == 2:
            yield "exit", 10

    result = explore([0], ring, {}, keep_graph=True)
    assert [set(c) for c in strongly_connected_components(result.graph)] == [{0, 1, 2, 3}]
    assert terminal_states(result.graph) == [10]


def test_format_trace_shows_actions_and_changes():
    result = explore([0], counter_machine(3), {"small": lambda n: n < 3})
    text = format_trace(result.violation, describe=str, diff=lambda a, b: [f"{a} -> {b}"])
    assert "Invariant small violated after 3 states" in text
    assert "add" in text and "-> 3" in text


@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=40), st.integers(0, 12))
def test_trace_length_equals_networkx_shortest_path(edges, target):
    """On random graphs, the trace to the first state violating `state != target` has exactly the
    length of networkx's shortest path from the initial state."""
    graph = nx.DiGraph()
    graph.add_nodes_from([0, target])
    graph.add_edges_from(edges)

    def successors(n):
        for m in sorted(graph.successors(n)):
            yield f"{n}->{m}", m

    result = explore([0], successors, {"not target": lambda n: n != target})
    if nx.has_path(graph, 0, target):
        assert result.violation.length == nx.shortest_path_length(graph, 0, target) + 1
        trace = [step.state for step in result.violation.trace]
        assert all(graph.has_edge(a, b) for a, b in zip(trace, trace[1:], strict=False))
    else:
        assert result.ok
        assert result.distinct_states == len(nx.descendants(graph, 0)) + 1
