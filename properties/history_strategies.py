"""Hypothesis strategies for small histories in the JSON-lines op form (history/store.py;
format: history/format.py).

histories() simulates a tiny log (1-2 partitions, a few processes) with sends that succeed, fail
or end unknown, polls that read from a position, assigns that move it, high watermarks, offsets
taken by no record (transaction markers: offsets are not dense) and a final read that marks the
partitions it read with their end offset (an hw record), even empty ones; with anomalies=True it then mutates records (offsets, values, types, dropped records) so
every check in the catalogue gets cases. Values stay in a small range so mutations collide.
combine() joins several histories into one by renaming topics, processes, op indexes and values,
so one Spark job can check many small random histories at once.
"""

from __future__ import annotations

import copy

from hypothesis import strategies as st

TOPIC = "t"


@st.composite
def histories(draw, max_ops: int = 10, anomalies: bool = False) -> list[dict]:
    partitions = draw(st.integers(1, 2))
    logs: dict[int, list[int]] = {p: [] for p in range(partitions)}
    positions: dict[tuple[int, int], int] = {}
    ops: list[dict] = []
    clock = 0
    next_value = 1

    def op_pair(process, f, records, type_="ok", duration=1, invoke_time=None):
        invoke_time = clock if invoke_time is None else invoke_time
        index = len(ops)
        ops.append({"index": index, "time": invoke_time, "process": process, "type": "invoke",
                    "f": f})
        ops.append({"index": index + 1, "time": invoke_time + duration, "process": process,
                    "type": type_, "f": f, "invoke_index": index, "records": records})

    for _ in range(draw(st.integers(0, max_ops))):
        process = draw(st.integers(0, 2))
        action = draw(st.sampled_from(["send", "send", "poll", "poll", "assign", "marker"]))
        duration = draw(st.integers(0, 3))
        if action == "send":
            outcome = draw(st.sampled_from(["ok", "ok", "ok", "fail", "info"]))
            lands = outcome == "ok" or (outcome == "info" and draw(st.booleans()))
            records = []
            for _ in range(draw(st.integers(1, 2))):
                p = draw(st.integers(0, partitions - 1))
                offset = len(logs[p])
                if lands:
                    logs[p].append(next_value)
                records.append({"kind": "send", "topic": TOPIC, "partition": p,
                                "offset": offset if outcome == "ok" else None,
                                "value": next_value})
                next_value += 1
            op_pair(process, "send", records, outcome, duration)
        elif action == "poll":
            p = draw(st.integers(0, partitions - 1))
            start = positions.get((process, p), 0)
            stop = min(len(logs[p]), start + draw(st.integers(0, 3)))
            records = [{"kind": "poll", "topic": TOPIC, "partition": p, "offset": o,
                        "value": logs[p][o]} for o in range(start, stop) if logs[p][o] is not None]
            records.append({"kind": "hw", "topic": TOPIC, "partition": p, "offset": len(logs[p])})
            positions[(process, p)] = stop
            op_pair(process, "poll", records, "ok", duration)
        elif action == "marker":  # e.g. a transaction marker: takes an offset, holds no value
            logs[draw(st.integers(0, partitions - 1))].append(None)
        else:
            p = draw(st.integers(0, partitions - 1))
            positions[(process, p)] = draw(st.integers(0, len(logs[p])))
            op_pair(process, "assign", [], "ok", duration)
        clock += draw(st.integers(0, 2))
    for p in range(partitions):
        if draw(st.booleans()) or not anomalies:
            records = [{"kind": "final_read", "topic": TOPIC, "partition": p, "offset": o,
                        "value": v} for o, v in enumerate(logs[p]) if v is not None]
            if draw(st.booleans()):  # the end offset read to: marks the partition as read
                records.append({"kind": "hw", "topic": TOPIC, "partition": p,
                                "offset": len(logs[p])})
            op_pair(10 + p, "final_read", records, "ok", 1, invoke_time=clock + 10)
    if anomalies:
        _mutate(draw, ops, next_value)
    return ops


def _mutate(draw, ops: list[dict], next_value: int) -> None:
    with_records = [op for op in ops if op.get("records")]
    if not with_records:
        return
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(with_records))
        if not op["records"]:
            continue
        i = draw(st.integers(0, len(op["records"]) - 1))
        record = op["records"][i]
        change = draw(st.sampled_from(["offset", "value", "drop", "type", "swap", "reorder"]))
        if change == "offset" and record.get("offset") is not None:
            record["offset"] = max(0, record["offset"] + draw(st.integers(-2, 2)))
        elif change == "value" and record["kind"] != "hw":
            record["value"] = draw(st.integers(1, next_value))
        elif change == "drop":
            del op["records"][i]
        elif change == "type" and op["f"] == "send":
            op["type"] = draw(st.sampled_from(["ok", "fail", "info"]))
        elif change == "swap" and i + 1 < len(op["records"]):
            op["records"][i], op["records"][i + 1] = op["records"][i + 1], op["records"][i]
        elif change == "reorder" and i + 1 < len(op["records"]) and record["kind"] != "hw":
            # Two values trade offsets: the observed log order of their writers flips.
            other = op["records"][i + 1]
            if other["kind"] != "hw":
                record["value"], other["value"] = other["value"], record["value"]


def combine(parts: list[list[dict]]) -> list[dict]:
    """One history holding each part under its own topic, processes, op indexes and values."""
    combined = []
    index_base = 0
    for n, part in enumerate(parts):
        for op in copy.deepcopy(part):
            op["index"] += index_base
            if "invoke_index" in op:
                op["invoke_index"] += index_base
            op["process"] += 100 * n
            for record in op.get("records", ()):
                record["topic"] = f"{TOPIC}{n}"
                if record.get("value") is not None:
                    record["value"] += 10_000 * n
            combined.append(op)
        index_base += len(part)
    return combined
