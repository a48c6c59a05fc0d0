"""Precision and recall of a checker against the ground truth `kafkaref synth` wrote.

A case and an injection are related when they share a token: a value, a (topic, partition,
offset) location, or an op index. Recall: the share of injections whose expected anomaly reported
a related case. Precision: the share of reported cases related to some injection.
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


def score(truth: list[dict], cases: Mapping[str, Iterable[tuple]]) -> dict:
    """cases must be complete (every case, not a sample) for the figures to mean anything."""
    injected_tokens = set().union(*(truth_tokens(t) for t in truth)) if truth else set()
    reported = [(name, case_tokens(name, case)) for name, found in cases.items() for case in found]
    related = sum(1 for _, tokens in reported if tokens & injected_tokens)
    by_anomaly: dict[str, list[set]] = {}
    for name, tokens in reported:
        by_anomaly.setdefault(name, []).append(tokens)
    found = sum(1 for t in truth
                if any(truth_tokens(t) & tokens for tokens in by_anomaly.get(t["anomaly"], ())))
    return {
        "injected": len(truth),
        "detected": found,
        "reported": len(reported),
        "recall": found / len(truth) if truth else 1.0,
        "precision": related / len(reported) if reported else 1.0,
    }
