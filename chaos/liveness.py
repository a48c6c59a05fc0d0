"""Liveness from a recorded history: how long after a fault the cluster took writes again.

Two figures, for broker against broker under the same schedules (docs/chaos-kafka.md):

    heal -> write         a fault undone (a partition healed, a paused node resumed, a killed
                          node back serving): until every partition of the topic has taken an
                          acks=all write invoked after that moment
    leader kill -> write  a partition's leader SIGKILLed: until every partition has taken a
                          write invoked after the kill (the killed node's partitions need a new
                          leader first)

"Every partition" because a fault touches some partitions only: the slowest one is when the
cluster as a whole was writable again. A write is a send op completed ok (acknowledged); only
writes invoked after the moment count, so a request that waited through the fault does not.
The window is until the next fault starts (a killed leader's own restart may come within it: a
broker that elects no new leader before that is measured up to the restart that brings the old
one back). When the next fault (or the end of the run) comes first, the time is censored: more
than the window it had, counted apart, never averaged in.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import attrs

from kafkaref.history.format import NEMESIS_PROCESS
from kafkaref.history.store import read_table

# The undo op that ends each fault kind's window, and the kill roles measured from the kill.
UNDO_OF = {"partition": "heal", "pause": "resume", "kill": "restart"}
# Nemesis ops that end a fault rather than start one: they do not end a measuring window.
ENDS = frozenset({*UNDO_OF.values(), "clock-reset"})
LEADER_ROLES = ("leader",)


@attrs.frozen
class Measure:
    """One event: its kind ("heal", "resume", "restart", "leader-kill"), when (ns since the run
    started), how long until every partition took a write (ns; None when censored) and the
    window it had (ns until the next fault or the last write)."""

    kind: str
    at: int
    recovery_ns: int | None
    window_ns: int
    mode: str = ""  # a heal's partition mode (isolate, halves, one-way, ...): what was cut


def measure(history: str | Path) -> list[Measure]:
    """Every heal and leader kill of one history, with its recovery time."""
    ops = read_table(history, "ops").select(
        ["index", "time", "process", "type", "f", "invoke_index", "value"])
    nemesis = [row for row in ops.to_pylist() if row["process"] == NEMESIS_PROCESS]
    records = read_table(history, "records")
    sends = records.filter(_sends_ok(records)).select(
        ["partition", "invoke_time", "complete_time"]).to_pylist()
    partitions = sorted({s["partition"] for s in sends})
    end = max((s["complete_time"] for s in sends), default=0)
    invokes = sorted(row["time"] for row in nemesis
                     if row["type"] == "invoke" and row["f"] not in ENDS)
    out = []
    for moment, kind, mode in _moments(nemesis):
        window_end = next((t for t in invokes if t > moment), end)
        out.append(Measure(kind, moment, _recovery(sends, partitions, moment, window_end),
                           window_end - moment, mode))
    return out


def _sends_ok(table):
    import pyarrow.compute as pc

    return pc.and_(pc.equal(table["kind"], "send"), pc.equal(table["type"], "ok"))


def _moments(nemesis: list[dict]) -> list[tuple[int, str, str]]:
    """(time, kind, partition mode) of each fault's end and each leader kill, from the nemesis's completions:
    an undo op completes when the fault is gone (a restarted node serves again), a kill when
    the process is dead. The final heal-everything op is not a fault's end. What was aimed at
    is in the invocation's value (a completion holds what the action returned)."""
    aimed = {row["index"]: _json(row["value"]) for row in nemesis if row["type"] == "invoke"}
    moments = []
    for row in nemesis:
        if row["type"] != "ok":
            continue
        value = aimed.get(row["invoke_index"], {})
        if row["f"] in UNDO_OF.values() and not value.get("all"):
            moments.append((row["time"], row["f"], str(value.get("mode", ""))))
        elif row["f"] == "kill" and value.get("role") in LEADER_ROLES:
            moments.append((row["time"], "leader-kill", ""))
    return moments


def _recovery(sends: list[dict], partitions: list[int], moment: int, window_end: int):
    """ns from moment until every partition had an ok send invoked after moment (within the
    window), or None."""
    latest = moment
    for partition in partitions:
        done = [s["complete_time"] for s in sends if s["partition"] == partition
                and moment <= s["invoke_time"] and s["complete_time"] <= window_end]
        if not done:
            return None
        latest = max(latest, min(done))
    return latest - moment


def _json(text) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@attrs.frozen
class Summary:
    kind: str
    events: int
    censored: int
    median_ms: float | None
    p90_ms: float | None
    max_ms: float | None


def summarise(measures: list[Measure]) -> list[Summary]:
    """Per kind: events, censored ones, median / p90 / max of the rest in ms; then the heals
    again by partition mode ("heal: isolate", ...), since what a cut leaves writable differs by
    mode and by broker (docs/chaos-kafka.md, "Liveness side by side")."""
    groups = [(kind, [m for m in measures if m.kind == kind])
              for kind in ("heal", "resume", "restart", "leader-kill")]
    modes = sorted({m.mode for m in measures if m.kind == "heal" and m.mode})
    groups += [(f"heal: {mode}", [m for m in measures if m.kind == "heal" and m.mode == mode])
               for mode in modes]
    return [_summary(kind, of_kind) for kind, of_kind in groups if of_kind]


def _summary(kind: str, of_kind: list[Measure]) -> Summary:
    times = sorted(m.recovery_ns / 1e6 for m in of_kind if m.recovery_ns is not None)
    return Summary(kind, len(of_kind), len(of_kind) - len(times),
                   _round(statistics.median(times)) if times else None,
                   _round(_percentile(times, 0.9)) if times else None,
                   _round(times[-1]) if times else None)


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _round(ms: float) -> float:
    return round(ms, 0)


def histories(runs_dir: str | Path) -> list[Path]:
    """The history folders of every run under runs_dir (a soak's --runs-dir, or one run)."""
    root = Path(runs_dir)
    if (root / "history" / "meta.json").exists():
        return [root / "history"]
    return sorted(p.parent for p in root.glob("*/history/meta.json"))
