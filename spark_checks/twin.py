"""The naive twin: the anomaly catalogue in plain Python, over a history held in memory.

Deliberately obvious (dicts, sorted lists, pairwise scans) so it can be trusted by reading; the
Spark job (spark_checks/checks.py) must report exactly the same cases, which a Hypothesis property
checks. Only for small histories: memory is proportional to the history.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable

import attrs
import networkx as nx

from kafkaref.history import integrity
from kafkaref.history.format import (
    CLOCK_FAULT_F,
    NEMESIS_PROCESS,
    POSITION_RESET_FS,
    CheckConfig,
    corrupt_batch,
    early_empty,
    hung,
    observation,
    reordered,
    silenced_windows,
)
from kafkaref.history.store import read_table
from kafkaref.spark_checks import twin_structure
from kafkaref.spark_checks.verdict import DEFAULT_EXAMPLES, Result, build_result, unknown

READ_KINDS = ("poll", "final_read")


class TwinHistory:
    """Rows as dicts, plus the indexes every check shares."""

    def __init__(self, ops: list[dict], records: list[dict]):
        self.ops = ops
        self.records = sorted(records, key=lambda r: (r["op_index"], r["position"]))
        self.sends = [r for r in self.records if r["kind"] == "send"]
        self.ok_sends = [r for r in self.sends if r["type"] == "ok" and r["offset"] is not None]
        self.reads = [r for r in self.records if r["kind"] in READ_KINDS and r["type"] == "ok"]
        self.polls = [r for r in self.reads if r["kind"] == "poll"]
        self.final = [r for r in self.reads if r["kind"] == "final_read"]
        self.final_values_at: dict[tuple, set] = defaultdict(set)
        self.final_offset_of: dict[tuple, int] = {}
        # Per partition the final phase read (covered): where its final log ends (exclusive).
        self.final_end: dict[tuple, int] = {}
        for r in self.final:
            tp = (r["topic"], r["partition"])
            self.final_values_at[(*tp, r["offset"])].add(r["value"])
            key = (*tp, r["value"])
            self.final_offset_of[key] = min(self.final_offset_of.get(key, r["offset"]), r["offset"])
            self.final_end[tp] = max(self.final_end.get(tp, r["offset"] + 1), r["offset"] + 1)
        for r in self.final_marks(ops):
            tp = (r["topic"], r["partition"])
            self.final_end[tp] = max(self.final_end.get(tp, r["offset"]), r["offset"])

    def final_marks(self, ops: list[dict]) -> list[dict]:
        """hw records of ok final_read ops: the end offset the final phase read a partition to
        (history/format.py: how the final read marks a partition as covered, even when empty)."""
        final_ops = {op["index"] for op in ops if op["f"] == "final_read" and op["type"] == "ok"}
        return [r for r in self.records if r["kind"] == "hw" and r["type"] == "ok"
                and r["offset"] is not None and r["op_index"] in final_ops]

    @classmethod
    def load(cls, path: str | os.PathLike) -> TwinHistory:
        return cls(read_table(path, "ops").to_pylist(), read_table(path, "records").to_pylist())


def observations(h: TwinHistory) -> set[tuple]:
    """(topic, partition, offset, value) from ok sends and from every read."""
    return {(r["topic"], r["partition"], r["offset"], r["value"]) for r in h.ok_sends + h.reads}


def inconsistent_offsets(h: TwinHistory) -> list[tuple]:
    values = defaultdict(set)
    for t, p, o, v in observations(h):
        values[(t, p, o)].add(v)
    return [(*k, tuple(sorted(vs))) for k, vs in values.items() if len(vs) > 1]


def duplicate(h: TwinHistory) -> list[tuple]:
    positions = defaultdict(set)
    for t, p, o, v in observations(h):
        positions[v].add((t, p, o))
    return [(v, tuple(sorted(ps))) for v, ps in positions.items() if len(ps) > 1]


def _acknowledged(h: TwinHistory) -> set[tuple]:
    """(topic, partition, offset, value) of sends known to have taken effect: ok ones, and info
    ones some read returned. The offset is the acknowledged one, else the lowest read offset."""
    read_offset: dict[tuple, int] = {}
    for r in h.reads:
        key = (r["topic"], r["partition"], r["value"])
        read_offset[key] = min(read_offset.get(key, r["offset"]), r["offset"])
    acked = set()
    for r in h.sends:
        key = (r["topic"], r["partition"], r["value"])
        offset = r["offset"] if r["type"] == "ok" and r["offset"] is not None else read_offset.get(key)
        if r["type"] in ("ok", "info") and offset is not None:
            if r["type"] == "ok" or key in read_offset:
                acked.add((r["topic"], r["partition"], offset, r["value"]))
    return acked


def lost_write(h: TwinHistory) -> list[tuple]:
    return [
        (t, p, o, v) for t, p, o, v in _acknowledged(h)
        if (t, p) in h.final_end and (t, p, v) not in h.final_offset_of
        and h.final_end[(t, p)] > o + 1
    ]


def unseen(h: TwinHistory) -> list[tuple]:
    seen = {r["value"] for r in h.reads}
    return list({
        (r["topic"], r["partition"], -1 if r["offset"] is None else r["offset"], r["value"])
        for r in h.sends if r["type"] == "ok" and r["value"] not in seen
    })


def offset_mismatch(h: TwinHistory) -> list[tuple]:
    read_values = defaultdict(set)
    for r in h.reads:
        read_values[(r["topic"], r["partition"], r["offset"])].add(r["value"])
    return list({
        (r["topic"], r["partition"], r["offset"], r["value"], w)
        for r in h.ok_sends for w in read_values[(r["topic"], r["partition"], r["offset"])]
        if w != r["value"]
    })


def _consecutive_pairs(rows: Iterable[dict], key: Callable) -> Iterable[tuple[dict, dict]]:
    """Successive rows (in the given order) within each group of key."""
    last: dict = {}
    for r in rows:
        k = key(r)
        if k in last:
            yield last[k], r
        last[k] = r


def _process_partition(r: dict) -> tuple:
    return (r["process"], r["topic"], r["partition"])


def nonmonotonic_send(h: TwinHistory) -> list[tuple]:
    return [
        (*_process_partition(b), a["value"], a["offset"], b["value"], b["offset"])
        for a, b in _consecutive_pairs(h.ok_sends, _process_partition)
        if b["offset"] <= a["offset"]
    ]


def send_reorder(h: TwinHistory) -> list[tuple]:
    in_log = [
        {**r, "offset": h.final_offset_of[(r["topic"], r["partition"], r["value"])]}
        for r in h.sends if (r["topic"], r["partition"], r["value"]) in h.final_offset_of
    ]
    return [
        (*_process_partition(b), a["value"], a["offset"], b["value"], b["offset"])
        for a, b in _consecutive_pairs(in_log, _process_partition)
        if b["offset"] <= a["offset"]
    ]


def log_ranks(h: TwinHistory) -> dict[tuple, int]:
    """(topic, partition, offset) -> its position among the partition's observed offsets: the
    log's order of values, blind to offsets no record is known at (markers, aborted batches)."""
    offsets = defaultdict(set)
    for t, p, o, _v in observations(h):
        offsets[(t, p)].add(o)
    return {(*tp, o): rank for tp, os_ in offsets.items() for rank, o in enumerate(sorted(os_))}


def _poll_steps(h: TwinHistory) -> list[tuple[dict, dict]]:
    """Successive polled records of a partition by one process with no assign/subscribe/seek
    between, each with its rank in the log. Final reads are not polls."""
    resets = defaultdict(list)
    for op in h.ops:
        if op["f"] in POSITION_RESET_FS:
            resets[op["process"]].append(op["index"])

    def epoch(r: dict) -> int:
        return sum(1 for index in resets[r["process"]] if index < r["op_index"])

    ranks = log_ranks(h)
    ranked = [{**r, "rank": ranks[(r["topic"], r["partition"], r["offset"])]} for r in h.polls]
    return list(_consecutive_pairs(ranked, lambda r: (*_process_partition(r), epoch(r))))


def _poll_case(a: dict, b: dict) -> tuple:
    return (*_process_partition(b), a["op_index"], a["offset"], b["op_index"], b["offset"])


def _skipped(a: dict, b: dict) -> bool:
    return b["rank"] > a["rank"] + 1


def _went_back(a: dict, b: dict) -> bool:
    return b["rank"] <= a["rank"]


def poll_skip(h: TwinHistory) -> list[tuple]:
    return [_poll_case(a, b) for a, b in _poll_steps(h)
            if a["op_index"] != b["op_index"] and _skipped(a, b)]


def nonmonotonic_poll(h: TwinHistory) -> list[tuple]:
    return [_poll_case(a, b) for a, b in _poll_steps(h)
            if a["op_index"] != b["op_index"] and _went_back(a, b)]


def int_poll_skip(h: TwinHistory) -> list[tuple]:
    return [_poll_case(a, b) for a, b in _poll_steps(h)
            if a["op_index"] == b["op_index"] and _skipped(a, b)]


def int_nonmonotonic_poll(h: TwinHistory) -> list[tuple]:
    return [_poll_case(a, b) for a, b in _poll_steps(h)
            if a["op_index"] == b["op_index"] and _went_back(a, b)]


def aborted_read(h: TwinHistory) -> list[tuple]:
    failed = {r["value"] for r in h.sends if r["type"] == "fail"}
    return list({(r["topic"], r["partition"], r["offset"], r["value"])
                 for r in h.reads if r["value"] in failed})


def dirty_read(h: TwinHistory) -> list[tuple]:
    return list({
        (r["topic"], r["partition"], r["offset"], r["value"])
        for r in h.polls
        if (r["topic"], r["partition"]) in h.final_end
        and r["value"] not in h.final_values_at.get((r["topic"], r["partition"], r["offset"]), ())
    })


def hw_regression(h: TwinHistory) -> list[tuple]:
    marks = [r for r in h.records if r["kind"] == "hw" and r["offset"] is not None]
    return [
        (*_process_partition(b), a["op_index"], a["offset"], b["op_index"], b["offset"])
        for a, b in _consecutive_pairs(marks, _process_partition)
        if b["offset"] < a["offset"]
    ]


def garbage_read(h: TwinHistory) -> list[tuple]:
    sent = {r["value"] for r in h.sends}
    return list({(r["topic"], r["partition"], r["offset"], r["value"])
                 for r in h.reads if r["value"] not in sent})


def _observations(h: TwinHistory, types: tuple[str, ...]) -> list[tuple[dict, dict]]:
    """(op, observation) of the completions of the given types that hold one."""
    return [(op, found) for op in h.ops if op["type"] in types
            and (found := observation(op["value"])) is not None]


def _clock_faults(h: TwinHistory) -> bool:
    return any(op["process"] == NEMESIS_PROCESS and op["f"] == CLOCK_FAULT_F for op in h.ops)


def corrupt_read(h: TwinHistory) -> list[tuple]:
    return [(op["index"], *where) for op, found in _observations(h, ("ok", "fail", "info"))
            if (where := corrupt_batch(found)) is not None]


def response_reorder(h: TwinHistory) -> list[tuple]:
    return [(op["index"], tuple(found["sent"]), tuple(found["answered"]))
            for op, found in _observations(h, ("ok",)) if reordered(found)]


def early_empty_fetch(h: TwinHistory) -> list[tuple]:
    if _clock_faults(h):
        return []
    return [(op["index"], found["max_wait_ms"], found["empty_fetch_ms"])
            for op, found in _observations(h, ("ok",)) if early_empty(found)]


def hung_request(h: TwinHistory) -> list[tuple]:
    if _clock_faults(h):
        return []
    windows = silenced_windows(op for op in h.ops if op["process"] == NEMESIS_PROCESS)
    invoked = {op["index"]: op["time"] for op in h.ops if op["type"] == "invoke"}
    return [(op["index"], found["timeout_ms"], found["waited_ms"])
            for op, found in _observations(h, ("ok", "fail", "info")) if hung(found)
            and not any(start < op["time"] and invoked.get(op["invoke_index"], 0) < end
                        for start, end in windows)]


def realtime_order(h: TwinHistory) -> list[tuple]:
    cases = []
    for b in h.ok_sends:
        prior = max(
            ((a["offset"], a["value"]) for a in h.ok_sends
             if (a["topic"], a["partition"]) == (b["topic"], b["partition"])
             and a["complete_time"] < b["invoke_time"]),
            default=None,
        )
        if prior is not None and prior[0] > b["offset"]:
            cases.append((b["topic"], b["partition"], b["value"], b["offset"], prior[1], prior[0]))
    return cases


def _writers(h: TwinHistory) -> dict[int, set[int]]:
    writer: dict[int, set[int]] = defaultdict(set)
    for r in h.ok_sends:
        writer[r["value"]].add(r["op_index"])
    return writer


def _writer_runs(h: TwinHistory) -> dict[tuple, list[int]]:
    """Per partition, the writer ops in version order (observed (offset, value), then op), with
    consecutive records of one op merged into one run."""
    writer = _writers(h)
    runs: dict[tuple, list[int]] = {}
    for t, p, _o, v in sorted(observations(h)):
        for op in sorted(writer.get(v, ())):
            sequence = runs.setdefault((t, p), [])
            if not sequence or sequence[-1] != op:
                sequence.append(op)
    return runs


def cycle_candidates(h: TwinHistory) -> set[int]:
    """Ops that can lie on a write-write / write-read cycle after contraction: writers with more
    than one run (several partitions, or interleaved with another op), ops that both read and
    write, and the writers such ops read from. Every other writer is a pass-through node of one
    partition's chain and readers are sinks, so contracting them keeps cycles and their ops."""
    run_counts: dict[int, int] = defaultdict(int)
    for sequence in _writer_runs(h).values():
        for op in sequence:
            run_counts[op] += 1
    candidates = {op for op, runs in run_counts.items() if runs > 1}
    writers = _writers(h)
    sending = {r["op_index"] for r in h.ok_sends}
    for r in h.reads:
        if r["op_index"] in sending:
            candidates.add(r["op_index"])
            candidates |= writers.get(r["value"], set())
    return candidates


def contracted_edges(h: TwinHistory) -> set[tuple[int, int]]:
    """Edges between candidate ops: consecutive candidate runs in a partition's version order
    (write-write, self-loops included: an op interleaved with another), and writer -> reader for
    reads by candidate ops (write-read)."""
    candidates = cycle_candidates(h)
    edges = set()
    for sequence in _writer_runs(h).values():
        kept = [op for op in sequence if op in candidates]
        edges |= set(zip(kept, kept[1:], strict=False))
    writers = _writers(h)
    for r in h.reads:
        if r["op_index"] in candidates:
            edges |= {(a, r["op_index"]) for a in writers.get(r["value"], ()) if a != r["op_index"]}
    return edges


def cycle(h: TwinHistory) -> list[tuple]:
    return cycles_from_edges(contracted_edges(h))


def cycles_from_edges(edges: Iterable[tuple[int, int]]) -> list[tuple]:
    """One witness per cyclic strongly connected component: a shortest cycle through its lowest
    op, starting there. Shared with the Spark job, which only computes the (small) edge set."""
    graph = nx.DiGraph(sorted(edges))
    cases = []
    for component in nx.strongly_connected_components(graph):
        start = min(component)
        if graph.has_edge(start, start):
            cases.append(((start,),))
            continue
        if len(component) < 2:
            continue
        sub = graph.subgraph(sorted(component))
        back = min((p for p in sub.predecessors(start)),
                   key=lambda p: (nx.shortest_path_length(sub, start, p), p))
        cases.append((tuple(nx.shortest_path(sub, start, back)),))
    return cases


CHECKS: dict[str, Callable[[TwinHistory], list[tuple]]] = {
    f.__name__: f for f in (
        inconsistent_offsets, duplicate, lost_write, unseen, offset_mismatch, nonmonotonic_send,
        send_reorder, poll_skip, nonmonotonic_poll, int_poll_skip, int_nonmonotonic_poll,
        aborted_read, dirty_read, hw_regression, realtime_order, garbage_read,
        corrupt_read, response_reorder, early_empty_fetch, hung_request, cycle,
    )
}


def info(h: TwinHistory) -> dict:
    counts = defaultdict(int)
    for op in h.ops:
        counts[f"{op['f']}:{op['type']}"] += 1
    return {"ops": len(h.ops), "records": len(h.records), "ops_by_f_type": dict(sorted(counts.items()))}


def check(history: str | os.PathLike | TwinHistory, config: CheckConfig | None = None,
          examples: int | None = DEFAULT_EXAMPLES) -> Result:
    """Every anomaly over a history in memory. examples=None keeps every case. A history on disk
    is first verified against its manifest (history/integrity.py); any history is refused as
    corrupt when its rows break a structural rule (twin_structure.py), before any anomaly."""
    config = config or CheckConfig()
    found_integrity = None
    try:
        if isinstance(history, TwinHistory):
            h, where = history, "the history"
        else:
            found_integrity = integrity.verify(history).as_dict()
            h, where = TwinHistory.load(history), str(history)
        broken = twin_structure.problems(h.ops, h.records)
        if broken:
            raise integrity.structure_error(where, broken)
        cases = {}
        for name, function in CHECKS.items():
            found = sorted(function(h))
            cases[name] = (len(found), found if examples is None else found[:examples])
        return attrs.evolve(build_result(config, cases, info(h)), integrity=found_integrity)
    except Exception as error:  # noqa: BLE001 -- STYLE.md 10: exceptions become "unknown"
        return unknown(config, error, found_integrity)
