"""Precision and recall of a checker against the ground truth `kafkaref synth` wrote.

A case and an injection are related when they share a token: a value, a (topic, partition,
offset) location, or an op index. Each ground-truth item names the anomaly that must report it
("anomaly") and, in "also", the anomalies the same fault can show up as besides (one real fault
seen several ways: a send acknowledged at a taken offset is also an inconsistent offset and a
duplicate; which of those fire can depend on its neighbours). Recall: the share of injections
whose "anomaly" reported a related case. Precision: the share of reported cases related to an
injection that names the case's anomaly (in "anomaly" or "also"), so a case of an anomaly no
injection explains counts against precision even if it touches an injected value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from kafkaref.spark_checks.verdict import case_dict

_VALUE_FIELDS = ("value", "prev_value", "observed_value", "prior_value")
_OFFSET_FIELDS = ("offset", "prev_offset", "prior_offset")
_OP_FIELDS = ("op", "prev_op")


def case_tokens(name: str, case: tuple) -> set[tuple]:
    fields = case_dict(name, case)
    tokens = {("v", fields[k]) for k in _VALUE_FIELDS if k in fields}
    tokens |= {("v", v) for v in fields.get("values", ())}
    tokens |= {("op", fields[k]) for k in _OP_FIELDS if k in fields}
    tokens |= {("op", op) for op in fields.get("ops", ())}
    if "topic" in fields:
        tokens |= {("loc", fields["topic"], fields["partition"], fields[k])
                   for k in _OFFSET_FIELDS if k in fields}
    tokens |= {("loc", *position) for position in fields.get("positions", ())}
    if name.endswith("poll_skip") and fields["offset"] - fields["prev_offset"] <= 64:
        # A skip is explained by what was skipped.
        tokens |= {("loc", fields["topic"], fields["partition"], o)
                   for o in range(fields["prev_offset"] + 1, fields["offset"])}
    return tokens


def truth_tokens(item: Mapping) -> set[tuple]:
    return ({("v", v) for v in item["values"]} | {("op", op) for op in item["ops"]}
            | {("loc", *loc) for loc in item["locations"]})


def load_truth(path: str | Path) -> list[dict]:
    with open(Path(path) / "ground_truth.jsonl") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def explained_anomalies(item: Mapping) -> set[str]:
    """The anomalies an injection explains cases of (older truth files have no "also")."""
    return {item["anomaly"], *item.get("also", ())}


def score(truth: list[dict], cases: Mapping[str, Iterable[tuple]]) -> dict:
    """cases must be complete (every case, not a sample) for the figures to mean anything.
    Besides the totals: per injection kind, injected and detected (recall per kind), and per
    anomaly the reported cases no injection explains."""
    explaining: dict[str, set[tuple]] = {}  # anomaly -> tokens of the injections explaining it
    for t in truth:
        for name in explained_anomalies(t):
            explaining.setdefault(name, set()).update(truth_tokens(t))
    reported = [(name, case_tokens(name, case)) for name, found in cases.items() for case in found]
    unexplained: dict[str, int] = {}
    for name, tokens in reported:
        if not tokens & explaining.get(name, set()):
            unexplained[name] = unexplained.get(name, 0) + 1
    by_anomaly: dict[str, list[set]] = {}
    for name, tokens in reported:
        by_anomaly.setdefault(name, []).append(tokens)
    by_kind: dict[str, dict[str, int]] = {}
    for t in truth:
        figures = by_kind.setdefault(t["kind"], {"injected": 0, "detected": 0})
        figures["injected"] += 1
        tokens = truth_tokens(t)
        figures["detected"] += any(tokens & c for c in by_anomaly.get(t["anomaly"], ()))
    found = sum(f["detected"] for f in by_kind.values())
    related = len(reported) - sum(unexplained.values())
    return {
        "injected": len(truth),
        "detected": found,
        "reported": len(reported),
        "recall": found / len(truth) if truth else 1.0,
        "precision": related / len(reported) if reported else 1.0,
        "by_kind": by_kind,
        "unexplained": unexplained,
    }
