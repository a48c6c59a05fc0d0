"""The cycle check contracts the dependency graph to candidate ops before looking for cycles
(spark_checks/twin.py: cycle_candidates). The contraction must keep every cycle: on random
histories, the cyclic strongly connected components of the full write-write + write-read graph,
restricted to candidates, are exactly the cyclic components of the contracted graph."""

import networkx as nx
from hypothesis import given, target

from kafkaref.properties.history_strategies import histories
from kafkaref.spark_checks import twin


def _full_edges(h):
    writers = twin._writers(h)
    edges = set()
    for sequence in twin._writer_runs(h).values():
        edges |= set(zip(sequence, sequence[1:], strict=False))
    for r in h.reads:
        edges |= {(a, r["op_index"]) for a in writers.get(r["value"], ()) if a != r["op_index"]}
    return edges


def _cyclic_components(edges):
    graph = nx.DiGraph(list(edges))
    return [c for c in nx.strongly_connected_components(graph)
            if len(c) > 1 or any(graph.has_edge(n, n) for n in c)]


def _as_history(ops):
    rows, records = [], []
    invoke_time = {}
    for op in ops:
        rows.append({k: op.get(k) for k in ("index", "time", "process", "type", "f")})
        if op["type"] == "invoke":
            invoke_time[op["index"]] = op["time"]
        for position, r in enumerate(op.get("records", ())):
            records.append({"op_index": op["index"], "position": position,
                            "kind": r.get("kind", op["f"]), "process": op["process"],
                            "type": op["type"], "invoke_time": invoke_time.get(
                                op.get("invoke_index"), op["time"]),
                            "complete_time": op["time"], "topic": r["topic"],
                            "partition": r["partition"], "offset": r.get("offset"),
                            "value": r.get("value")})
    return twin.TwinHistory(rows, records)


@given(histories(max_ops=14, anomalies=True))
def test_contraction_keeps_every_cycle(ops):
    h = _as_history(ops)
    candidates = twin.cycle_candidates(h)
    full = {frozenset(c & candidates) for c in _cyclic_components(_full_edges(h))}
    contracted = {frozenset(c) for c in _cyclic_components(twin.contracted_edges(h))}
    target(float(len(full)), label="cyclic components")
    assert full == contracted
    assert frozenset() not in full  # every cycle passes through a candidate
