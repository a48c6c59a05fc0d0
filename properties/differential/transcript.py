"""Differential transcripts: a run's steps and answers in etcd's datadriven layout (the format of
properties/transcripts.py): a step's command line, `----`, its answer, a blank line.

    # apache-kafka 4.3.1 against kafkaref 0.1.0
    create_topics v4 {"topics": [{"name": "t0", "partitions": 1, "rf": 1}]}
    ----
    both: {"topics": [{"error_code": "none", "name": "t0"}]}

    produce v8 {...}
    ----
    apache-kafka: {...}
    kafkaref: {...}
    differs at: responses[0].partition_responses[0].log_start_offset: -1 against 0

A step both brokers answered alike has a `both:` line; the step where they diverged has one line
per broker and where they differ. `replay` sends the steps again, in order, to both brokers
(`live`), or to kafkaref alone and compares with the answers Apache Kafka gave when the file was
written (`recorded`: a regression test that needs no Kafka). The answers are normalised ones:
a change to normalise.py or kept.py means recording the committed transcripts again
(`python -m kafkaref.properties.differential record FILE`).
"""

from __future__ import annotations

import json
import os

import attrs

from kafkaref.properties.differential.steps import Names, Step, run_step
from kafkaref.properties.transcripts import SEPARATOR, format_file, parse

REFERENCE, CANDIDATE = "apache-kafka", "kafkaref"
BOTH = "both"


@attrs.define
class Entry:
    step: Step
    answers: dict[str, object]  # broker name -> normalised answer

    def output(self) -> str:
        values = list(self.answers.values())
        if len(values) == 2 and values[0] == values[1]:
            return f"{BOTH}: {dump(values[0])}"
        lines = [f"{name}: {dump(answer)}" for name, answer in self.answers.items()]
        if len(values) == 2:
            lines += [f"differs at: {d}" for d in differences(values[0], values[1])[:8]]
        return "\n".join(lines)


def dump(answer) -> str:
    return json.dumps(answer, sort_keys=True)


def differences(a, b, path: str = "") -> list[str]:
    """Where two normalised answers differ, as paths: `topics[0].error_code: x against y`."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(a.keys() | b.keys(), key=str):
            if key not in a or key not in b:
                out.append(f"{path}.{key}: only in {'the first' if key in a else 'the second'}")
            else:
                out += differences(a[key], b[key], f"{path}.{key}" if path else str(key))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    if a != b:
        return [f"{path or 'answer'}: {dump(a)[:120]} against {dump(b)[:120]}"]
    return []


def render(header: list[str], entries: list[Entry]) -> str:
    return format_file([f"# {line}" if line else "#" for line in header],
                       [(e.step.command(), e.output()) for e in entries])


def write(path: str, header: list[str], entries: list[Entry]) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(render(header, entries))
    return path


def read(path: str) -> list[tuple[Step, dict[str, object]]]:
    """The steps of a transcript with the answers it recorded (broker name -> answer)."""
    with open(path) as f:
        _, blocks = parse(f.read())
    out = []
    for block in blocks:
        recorded = {}
        for line in block.expected.splitlines():
            name, _, text = line.partition(": ")
            if name == BOTH:
                recorded = {REFERENCE: json.loads(text), CANDIDATE: json.loads(text)}
            elif name in (REFERENCE, CANDIDATE):
                recorded[name] = json.loads(text)
        out.append((Step.parse(block.command), recorded))
    return out


@attrs.frozen
class Replay:
    entries: list[Entry]
    diverged_at: int | None  # index of the first step whose answers differ

    @property
    def verdict(self) -> str:
        return "same" if self.diverged_at is None else "diverged"


def replay_live(path: str, reference: Names, candidate: Names) -> Replay:
    """Every step to both brokers; stops at the first divergence (CouldNotCompare propagates)."""
    entries = []
    for index, (step, _) in enumerate(read(path)):
        answers = {REFERENCE: run_step(step, reference), CANDIDATE: run_step(step, candidate)}
        entries.append(Entry(step, answers))
        if answers[REFERENCE] != answers[CANDIDATE]:
            return Replay(entries, index)
    return Replay(entries, None)


def replay_recorded(path: str, candidate: Names) -> Replay:
    """Every step to kafkaref, compared with the answer Apache Kafka gave when recorded."""
    entries = []
    for index, (step, recorded) in enumerate(read(path)):
        if REFERENCE not in recorded:
            raise ValueError(f"{path}: step {index + 1} has no recorded {REFERENCE} answer")
        answers = {REFERENCE: recorded[REFERENCE], CANDIDATE: run_step(step, candidate)}
        entries.append(Entry(step, answers))
        if answers[REFERENCE] != answers[CANDIDATE]:
            return Replay(entries, index)
    return Replay(entries, None)


__all__ = ["SEPARATOR", "Entry", "Replay", "differences", "read", "render", "replay_live",
           "replay_recorded", "write"]
