"""The structural rules of a history (history/format.py STRUCTURE) in plain Python: the naive
twin's, over rows held in memory, as obvious as the twin's anomaly checks. The Spark job runs
spark_checks/structure.py; a test holds the two equal.

Each rule yields, for every row that breaks it, that row's op index (op_index for a record), so
a rule's verdict is (how many rows, the lowest index), the same pair the Spark rules compute.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator

from kafkaref.history.format import COMPLETION_TYPES, OP_TYPES, RECORD_KINDS


def problems(ops: list[dict], records: list[dict]) -> dict[str, tuple[int, int]]:
    """rule -> (rows breaking it, the lowest op index among them), for every rule broken."""
    found = {}
    for rule, broken in RULES.items():
        keys = list(broken(ops, records))
        if keys:
            found[rule] = (len(keys), min(keys))
    return found


def op_index(ops, records) -> Iterator[int]:
    uses = Counter(op["index"] for op in ops)
    for op in ops:
        if uses[op["index"]] > 1 or not 0 <= op["index"] < len(ops):
            yield op["index"]


def op_type(ops, records) -> Iterator[int]:
    return (op["index"] for op in ops if op["type"] not in OP_TYPES)


def op_range(ops, records) -> Iterator[int]:
    return (op["index"] for op in ops if op["time"] < 0 or op["process"] < -1)


def _invocations(ops) -> dict[int, list[dict]]:
    found = defaultdict(list)
    for op in ops:
        if op["type"] == "invoke":
            found[op["index"]].append(op)
    return found


def completion(ops, records) -> Iterator[int]:
    invocations = _invocations(ops)
    completions = [op for op in ops if op["type"] in COMPLETION_TYPES]
    naming = Counter(op["invoke_index"] for op in completions)
    for op in completions:
        named = invocations.get(op["invoke_index"], [])
        if op["invoke_index"] is None or len(named) != 1 or naming[op["invoke_index"]] > 1:
            yield op["index"]
            continue
        invocation = named[0]
        if (invocation["process"], invocation["f"]) != (op["process"], op["f"]) or \
                invocation["index"] >= op["index"] or invocation["time"] > op["time"]:
            yield op["index"]
    for op in ops:
        if op["type"] == "invoke" and op["invoke_index"] is not None:
            yield op["index"]


def record_kind(ops, records) -> Iterator[int]:
    for r in records:
        if r["kind"] not in RECORD_KINDS or r["type"] not in COMPLETION_TYPES or \
                (r["value"] is None) != (r["kind"] == "hw"):
            yield r["op_index"]


def record_range(ops, records) -> Iterator[int]:
    for r in records:
        if r["partition"] < 0 or r["position"] < 0 or (
                r["offset"] is not None and r["offset"] < 0) or \
                r["invoke_time"] > r["complete_time"]:
            yield r["op_index"]


def record_op(ops, records) -> Iterator[int]:
    by_index = defaultdict(list)
    for op in ops:
        by_index[op["index"]].append(op)
    invocations = _invocations(ops)
    by_op = defaultdict(list)
    for r in records:
        by_op[r["op_index"]].append(r)
    for index, rows in by_op.items():
        if not _records_fit(rows, by_index.get(index, []), invocations):
            yield from (index for _ in rows)


def _records_fit(rows: list[dict], named: list[dict], invocations) -> bool:
    """The records of one op index repeat their one completion and sit at 0..k-1, each once.
    The invocation's time is compared only when the completion names exactly one invocation
    (else the completion rule reports it)."""
    if len(named) != 1 or named[0]["type"] not in COMPLETION_TYPES:
        return False
    op = named[0]
    if any((r["process"], r["type"], r["complete_time"]) != (op["process"], op["type"], op["time"])
           for r in rows):
        return False
    if len({r["invoke_time"] for r in rows}) != 1:
        return False
    invocation = invocations.get(op["invoke_index"], [])
    if len(invocation) == 1 and rows[0]["invoke_time"] != invocation[0]["time"]:
        return False
    return sorted(r["position"] for r in rows) == list(range(len(rows)))


RULES = {"op_index": op_index, "op_type": op_type, "op_range": op_range,
         "completion": completion, "record_kind": record_kind, "record_range": record_range,
         "record_op": record_op}
