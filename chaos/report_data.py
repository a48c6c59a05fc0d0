"""What report.html shows, gathered from a history's Parquet tables in bounded memory.

Every pass streams record batches of a few columns with pyarrow (history/format.py iter_batches) and
keeps only aggregates or samples: latency points are taken every k-th op of each (f, type) so that
at most LATENCY_POINTS per series remain (k from the counts report.json already holds), throughput
is counted in THROUGHPUT_BUCKETS time buckets, poll lag is computed against per-partition minima
over at most LAG_OFFSET_BUCKETS offset buckets (exact when the log is shorter than that) and
sampled the same way. Memory is O(invocations in flight + buckets + samples) at any history size.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from kafkaref.history.format import NEMESIS_PROCESS
from kafkaref.history.store import iter_batches

LATENCY_POINTS = 1500  # per (f, type) series
LAG_POINTS = 3000
THROUGHPUT_BUCKETS = 120
LAG_OFFSET_BUCKETS = 1 << 16  # per partition: above this many offsets, lag is bucketed
NEMESIS_OPS_MAX = 20_000
WINDOW = 3  # ops shown either side of each op an anomaly example names
WINDOW_ROWS_MAX = 60
OPS_PER_VALUE = 6  # ops shown per value an example names (its send, then reads)
RECORDS_PER_OP = 8

# Nemesis ops: a fault starts at an op whose f is not an end, and lasts until an end op that
# ends it (END_OF: end f -> the fault fs it ends; "*" ends every open fault). A fault never
# ended is drawn to the end of the history and labelled so.
END_OF = {
    "restart": ("kill", "crash", "corrupt", "bitflip", "truncate", "lose_unfsynced", "stop"),
    "start": ("kill", "crash", "stop"),
    "resume": ("pause",),
    "cont": ("pause",),
    "heal": ("*",),
    "heal_all": ("*",),
    "clock_reset": ("clock",),
    "reset_clock": ("clock",),
}


def _canonical(f: str) -> str:
    return f.replace("-", "_")


@attrs.define
class Fault:
    f: str
    detail: str
    start: int
    end: int | None  # None: never ended


@attrs.define
class ReportData:
    t_min: int = 0
    t_max: int = 0
    latency: dict = attrs.Factory(dict)  # (f, type) -> [(time, latency)], sampled
    latency_counts: dict = attrs.Factory(dict)  # (f, type) -> completions in all
    throughput: dict = attrs.Factory(dict)  # (f, type) -> [count per bucket]
    bucket_ns: int = 1
    faults: list = attrs.Factory(list)
    lag: list = attrs.Factory(list)  # [(time, lag_ns)], sampled
    lag_max: list = attrs.Factory(list)  # [max lag per bucket or None]
    polls_measured: int = 0
    lag_exact: bool = True
    windows: dict = attrs.Factory(dict)  # (anomaly, example number) -> Window
    errors: list = attrs.Factory(list)  # what could not be read, said on the page


@attrs.define
class Window:
    hits: set  # the op indexes the example names (their rows are highlighted)
    rows: list  # op dicts in index order, each with "records": [summary strings]
    truncated: bool = False


def collect(history: str | os.PathLike, report: dict) -> ReportData:
    data = ReportData()
    for name, step in (("timeline", _timeline), ("ops", _ops_pass), ("lag", _lag_pass),
                       ("examples", _examples_pass)):
        try:
            step(history, report, data)
        except Exception as error:  # noqa: BLE001 -- a page with what could be read beats none
            data.errors.append(f"{name}: {type(error).__name__}: {error}")
    return data


def _timeline(history, report, data: ReportData) -> None:
    lo, hi = None, None
    for batch in iter_batches(history, "ops", columns=["time"]):
        if batch.num_rows:
            bounds = pc.min_max(batch.column(0))
            lo = bounds["min"].as_py() if lo is None else min(lo, bounds["min"].as_py())
            hi = bounds["max"].as_py() if hi is None else max(hi, bounds["max"].as_py())
    data.t_min, data.t_max = lo or 0, hi or 0
    data.bucket_ns = max(1, math.ceil((data.t_max - data.t_min + 1) / THROUGHPUT_BUCKETS))


def _strides(report: dict) -> dict:
    counts = report.get("info", {}).get("ops_by_f_type", {})
    return {tuple(key.split(":", 1)): max(1, math.ceil(n / LATENCY_POINTS))
            for key, n in counts.items()}


def _ops_pass(history, report, data: ReportData) -> None:
    """Latency samples, throughput buckets and the nemesis's fault windows in one stream."""
    strides = _strides(report)
    seen: dict = defaultdict(int)  # (f, type) -> completions so far (for the stride)
    pending = pa.table({"invoke_index": pa.array([], pa.int64()),
                        "invoke_time": pa.array([], pa.int64())})
    counts: dict = defaultdict(lambda: [0] * THROUGHPUT_BUCKETS)
    nemesis: list[dict] = []
    columns = ["index", "time", "process", "type", "f", "invoke_index", "value"]
    for batch in iter_batches(history, "ops", columns=columns):
        table = pa.Table.from_batches([batch])
        is_nemesis = pc.equal(table["process"], NEMESIS_PROCESS)
        if len(nemesis) < NEMESIS_OPS_MAX:
            nemesis.extend(table.filter(is_nemesis).to_pylist()[: NEMESIS_OPS_MAX - len(nemesis)])
        client = table.filter(pc.invert(is_nemesis))
        invokes = client.filter(pc.equal(client["type"], "invoke"))
        pending = pa.concat_tables([pending, pa.table({
            "invoke_index": invokes["index"], "invoke_time": invokes["time"]})])
        done = client.filter(pc.not_equal(client["type"], "invoke"))
        joined = done.join(pending, "invoke_index", join_type="inner").sort_by("index")
        pending = pending.filter(pc.invert(pc.is_in(pending["invoke_index"],
                                                    value_set=joined["invoke_index"])))
        _count(joined, data, counts)
        _sample_latency(joined, data, strides, seen)
    data.throughput = dict(counts)
    data.latency_counts = dict(seen)
    data.faults = _faults(nemesis, data.t_max)


def _bucket_of(times: pa.Array, data: ReportData) -> pa.Array:
    offset = pc.subtract(times, data.t_min)
    return pc.min_element_wise(pc.divide(offset, data.bucket_ns), THROUGHPUT_BUCKETS - 1)


def _count(done: pa.Table, data: ReportData, counts: dict) -> None:
    if not done.num_rows:
        return
    keyed = pa.table({"f": done["f"], "type": done["type"],
                      "bucket": _bucket_of(done["time"], data)})
    for row in keyed.group_by(["f", "type", "bucket"]).aggregate([([], "count_all")]).to_pylist():
        counts[(row["f"], row["type"])][row["bucket"]] += row["count_all"]


def _sample_latency(done: pa.Table, data: ReportData, strides: dict, seen: dict) -> None:
    """Every stride-th completion of each series (strided in history order: even in time)."""
    if not done.num_rows:
        return
    for key in {(r["f"], r["type"]) for r in done.select(["f", "type"]).group_by(
            ["f", "type"]).aggregate([]).to_pylist()}:
        series = done.filter(pc.and_(pc.equal(done["f"], key[0]), pc.equal(done["type"], key[1])))
        stride = strides.get(key, 1)
        first = (-seen[key]) % stride
        seen[key] += series.num_rows
        taken = series.take(pa.array(range(first, series.num_rows, stride), pa.int64()))
        points = data.latency.setdefault(key, [])
        points.extend(zip(taken["time"].to_pylist(), pc.subtract(
            taken["time"], taken["invoke_time"]).to_pylist(), strict=True))


def _faults(nemesis: list[dict], t_max: int) -> list[Fault]:
    """Fault windows from the nemesis's ops: a start is its invocation, an end its completion."""
    open_: list[Fault] = []
    closed: list[Fault] = []
    for op in sorted(nemesis, key=lambda op: op["index"]):
        f = _canonical(op["f"])
        if f in END_OF:
            if op["type"] == "invoke":
                continue
            ends = END_OF[f]
            for fault in [w for w in open_ if "*" in ends or w.f in ends]:
                fault.end = op["time"]
                open_.remove(fault)
                closed.append(fault)
        elif op["type"] == "invoke":
            open_.append(Fault(op["f"], op["value"] or "", op["time"], None))
    return sorted(closed + open_, key=lambda fault: fault.start)


def _lag_pass(history, report, data: ReportData) -> None:
    """Realtime lag of polls (Jepsen's): for a poll of a partition invoked at t whose highest
    offset read is o, how long before t the earliest ok send at an offset above o completed (0
    if none had): how stale the consumer's view was. Sends first, then polls."""
    columns = ["kind", "type", "topic", "partition", "offset", "op_index", "invoke_time",
               "complete_time"]
    high = -1
    for batch in iter_batches(history, "records", columns=["offset"]):
        if batch.num_rows:
            top = pc.max(batch.column(0)).as_py()
            high = max(high, -1 if top is None else top)
    width = max(1, math.ceil((high + 1) / LAG_OFFSET_BUCKETS))
    data.lag_exact = width == 1
    earliest: dict = defaultdict(dict)  # (topic, partition) -> bucket -> min completion time
    for batch in iter_batches(history, "records", columns=columns):
        t = pa.Table.from_batches([batch])
        sends = t.filter(pc.and_(pc.and_(pc.equal(t["kind"], "send"), pc.equal(t["type"], "ok")),
                                 pc.is_valid(t["offset"])))
        if not sends.num_rows:
            continue
        keyed = pa.table({"topic": sends["topic"], "partition": sends["partition"],
                          "bucket": pc.divide(sends["offset"], width),
                          "time": sends["complete_time"]})
        for row in keyed.group_by(["topic", "partition", "bucket"]).aggregate(
                [("time", "min")]).to_pylist():
            buckets = earliest[(row["topic"], row["partition"])]
            buckets[row["bucket"]] = min(buckets.get(row["bucket"], row["time_min"]),
                                         row["time_min"])
    suffix = {tp: _suffix_min(buckets) for tp, buckets in earliest.items()}
    _poll_lags(history, data, suffix, width, columns)


def _suffix_min(buckets: dict) -> list:
    """suffix[b] = earliest completion over buckets >= b (None past the last)."""
    top = max(buckets)
    out: list = [None] * (top + 2)
    for b in range(top, -1, -1):
        here, after = buckets.get(b), out[b + 1]
        out[b] = here if after is None else (after if here is None else min(here, after))
    return out


def _poll_lags(history, data: ReportData, suffix: dict, width: int, columns: list) -> None:
    polls_total = 0
    for batch in iter_batches(history, "records", columns=["kind", "type"]):
        polls_total += pc.sum(pc.and_(pc.equal(batch.column(0), "poll"),
                                      pc.equal(batch.column(1), "ok"))).as_py() or 0
    stride = max(1, math.ceil(polls_total / (LAG_POINTS * 4)))  # records; polls are fewer
    worst = [None] * THROUGHPUT_BUCKETS
    seen = 0
    for batch in iter_batches(history, "records", columns=columns):
        t = pa.Table.from_batches([batch])
        polls = t.filter(pc.and_(pc.equal(t["kind"], "poll"), pc.equal(t["type"], "ok")))
        if not polls.num_rows:
            continue
        groups = polls.group_by(["op_index", "topic", "partition"]).aggregate(
            [("offset", "max"), ("invoke_time", "min")]).to_pylist()
        for g in groups:
            table = suffix.get((g["topic"], g["partition"]))
            b = g["offset_max"] // width + 1
            done = table[b] if table is not None and b < len(table) else None
            at = g["invoke_time_min"]
            lag = max(0, at - done) if done is not None else 0
            data.polls_measured += 1
            bucket = min(THROUGHPUT_BUCKETS - 1, max(0, (at - data.t_min) // data.bucket_ns))
            worst[bucket] = lag if worst[bucket] is None else max(worst[bucket], lag)
            if seen % stride == 0:
                data.lag.append((at, lag))
            seen += 1
    if len(data.lag) > LAG_POINTS:
        step = math.ceil(len(data.lag) / LAG_POINTS)
        data.lag = data.lag[::step]
    data.lag_max = worst


# --- the ops around each anomaly example ---------------------------------------------------

_OP_FIELDS = ("op", "prev_op", "ops")
_VALUE_FIELDS = ("value", "prev_value", "prior_value", "observed_value", "values")


def _example_refs(report: dict) -> tuple[dict, set]:
    """(anomaly, n) -> (op indexes, values) an example names; and every value named."""
    refs, values = {}, set()
    for name, entry in report.get("anomalies", {}).items():
        for n, example in enumerate(entry.get("examples", ())):
            ops, vals = set(), set()
            for field in _OP_FIELDS:
                ops |= set(_ints(example.get(field)))
            for field in _VALUE_FIELDS:
                vals |= set(_ints(example.get(field)))
            refs[(name, n)] = (ops, vals)
            values |= vals
    return refs, values


def _ints(value) -> list[int]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list | tuple):
        return [v for item in value for v in _ints(item)]
    return []


def _examples_pass(history, report, data: ReportData) -> None:
    refs, values = _example_refs(report)
    if not refs:
        return
    by_value = _ops_of_values(history, values)
    hits = {key: ops | {op for v in vals for op in by_value.get(v, ())}
            for key, (ops, vals) in refs.items()}
    wanted = {i for ops in hits.values() for op in ops
              for i in range(op - WINDOW, op + WINDOW + 1)}
    rows = _ops_at(history, wanted)
    # Pull in the invocations of the ops named, and their neighbours, in a second (small) pass.
    invocations = {rows[op]["invoke_index"] for ops in hits.values() for op in ops
                   if op in rows and rows[op]["invoke_index"] is not None}
    more = {i for op in invocations for i in range(op - 1, op + 2)} - set(rows)
    rows.update(_ops_at(history, more))
    records = _records_of(history, set(rows), values)
    for key, ops in hits.items():
        marked = ops | {rows[op]["invoke_index"] for op in ops
                        if op in rows and rows[op]["invoke_index"] is not None}
        around = sorted({i for op in ops for i in range(op - WINDOW, op + WINDOW + 1)}
                        | {i for op in marked - ops for i in range(op - 1, op + 2)})
        shown = [dict(rows[i], records=records.get(i, [])) for i in around if i in rows]
        data.windows[key] = Window(hits=marked, rows=shown[:WINDOW_ROWS_MAX],
                                   truncated=len(shown) > WINDOW_ROWS_MAX)


def _ops_of_values(history, values: set) -> dict:
    """value -> the first ops whose records hold it (sends first, then reads), a few each."""
    found: dict = defaultdict(set)
    if not values:
        return found
    wanted = pa.array(sorted(values), pa.int64())
    for batch in iter_batches(history, "records", columns=["op_index", "kind", "value"]):
        t = pa.Table.from_batches([batch])
        t = t.filter(pc.is_in(t["value"], value_set=wanted))
        for row in t.to_pylist():
            if len(found[row["value"]]) < 4 * OPS_PER_VALUE:
                found[row["value"]].add((row["kind"] != "send", row["op_index"]))
    out = {}
    for value, pairs in found.items():
        ordered: list[int] = []
        for _, op in sorted(pairs):
            if op not in ordered:
                ordered.append(op)
        out[value] = ordered[:OPS_PER_VALUE]
    return out


def _ops_at(history, indexes: set) -> dict:
    if not indexes:
        return {}
    wanted = pa.array(sorted(indexes), pa.int64())
    rows = {}
    for batch in iter_batches(history, "ops"):
        t = pa.Table.from_batches([batch])
        for row in t.filter(pc.is_in(t["index"], value_set=wanted)).to_pylist():
            rows[row["index"]] = row
    return rows


def _records_of(history, ops: set, named: set) -> dict:
    """op -> summaries of its first records, always including those holding a named value
    (marked), so an example's value shows in a poll of hundreds of records."""
    if not ops:
        return {}
    wanted = pa.array(sorted(ops), pa.int64())
    out: dict = defaultdict(list)
    hidden: dict = defaultdict(int)
    for batch in iter_batches(history, "records"):
        t = pa.Table.from_batches([batch])
        for r in t.filter(pc.is_in(t["op_index"], value_set=wanted)).to_pylist():
            if r["value"] in named:
                out[r["op_index"]].append(_record_text(r) + "  \u25c0")
            elif len(out[r["op_index"]]) < RECORDS_PER_OP:
                out[r["op_index"]].append(_record_text(r))
            else:
                hidden[r["op_index"]] += 1
    for op, n in hidden.items():
        out[op].append(f"... {n} more")
    return out


def _record_text(r: dict) -> str:
    where = f"{r['topic']}/{r['partition']}"
    at = "?" if r["offset"] is None else r["offset"]
    if r["kind"] == "hw":
        return f"hw {where} = {at}"
    return f"{r['kind']} {where}@{at} = {r['value']}"


def meta_summary(meta: dict) -> dict:
    """meta.json without what the page shows elsewhere, values as short strings."""
    out = {}
    for key, value in meta.items():
        if key in ("config",):
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        out[key] = text if len(text) <= 200 else text[:197] + "..."
    return out
