"""A seeded simulated chaos run: a history shaped like a real one (latencies that vary and spike
during faults, timeouts and errors while a broker is down, consumers falling behind, nemesis ops
with start and end, final reads marking every partition), with an optional lost write. For the
report's tests and the screenshot in docs/chaos.md, where `kafkaref synth` (constant latencies, no faults)
would draw flat plots. Not a model of Kafka: it only has to look like a history.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from kafkaref.history.format import NEMESIS_PROCESS, CheckConfig
from kafkaref.history.store import HistoryWriter

MS = 1_000_000
S = 1_000_000_000
TOPIC = "jepsen"
# (start s, end s, fault f, healing f, target): as fractions of the run's length.
FAULTS = [(0.16, 0.27, "kill", "restart", "broker 2 (leader of 0, 2)"),
          (0.42, 0.52, "pause", "resume", "broker 1"),
          (0.68, 0.80, "partition", "heal", "{1 2} | {3}")]


def simulated_run(path: str | Path, *, seed: int = 1, seconds: float = 60.0,
                  producers: int = 4, consumers: int = 2, partitions: int = 3,
                  think_ms: float = 6.0, lose_writes: int = 1) -> dict:
    """Write the history to path; returns a summary (ops, the lost values)."""
    rng = random.Random(seed)
    end = int(seconds * S)
    faults = [(int(a * end), int(b * end), f, heal, target) for a, b, f, heal, target in FAULTS]
    events: list[tuple] = []  # (time, order, pair id, op dict, records)
    pair = iter(range(1 << 62))

    def add(process, f, start, stop, type_, records=(), error=None, value=None):
        pid = next(pair)
        events.append((start, 0, pid, {"process": process, "type": "invoke", "f": f,
                                       "value": value}, []))
        events.append((stop, 1, pid, {"process": process, "type": type_, "f": f, "error": error,
                                      "value": value}, list(records)))

    def fault_at(t):
        return next((fault for fault in faults if fault[0] <= t < fault[1]), None)

    for start, stop, f, heal, target in faults:
        add(NEMESIS_PROCESS, f, start, start + 40 * MS, "ok", value=target)
        add(NEMESIS_PROCESS, heal, stop, stop + 300 * MS, "ok", value=target)
    log = {p: [] for p in range(partitions)}  # (ack time, value) in offset order, built below
    sends = []
    for process in range(producers):
        t, seq = int(rng.uniform(0, 5) * MS), 0
        while t < end:
            fault = fault_at(t)
            latency = rng.lognormvariate(math.log(2.5 * MS), 0.45)
            outcome, error = "ok", None
            if fault:
                latency *= rng.uniform(3, 120)
                roll = rng.random()
                if roll < 0.08:
                    outcome, error, latency = "info", "timeout", 1.5 * S
                elif roll < 0.11:
                    outcome, error = "fail", "NOT_LEADER_OR_FOLLOWER"
            value = process * 1_000_000 + seq
            sends.append((t, t + int(latency), process, rng.randrange(partitions), value,
                          outcome, error))
            t += int(latency) + int(rng.expovariate(1 / think_ms) * MS)
            seq += 1
    # Offsets in the order the broker acknowledged; info sends landed (or not) at random.
    for start, stop, process, p, value, outcome, error in sorted(sends, key=lambda s: s[1]):
        landed = outcome == "ok" or (outcome == "info" and rng.random() < 0.5)
        offset = None
        if landed:
            offset = len(log[p])
            log[p].append((stop, value))
        records = [{"kind": "send", "topic": TOPIC, "partition": p,
                    "offset": offset if outcome == "ok" else None, "value": value}]
        add(process, "send", start, stop, outcome, records, error)
    lost = _pick_lost(rng, log, faults, lose_writes)
    _polls(rng, add, log, faults, end, producers, consumers, partitions)
    for p in range(partitions):
        kept = [(o, v) for o, (_t, v) in enumerate(log[p]) if v not in lost]
        records = [{"kind": "final_read", "topic": TOPIC, "partition": p, "offset": o, "value": v}
                   for o, v in kept]
        records.append({"kind": "hw", "topic": TOPIC, "partition": p, "offset": len(log[p])})
        add(1000 + p, "final_read", end + 2 * S, end + 2 * S + 80 * MS, "ok", records)
    return _write(path, events, seed, seconds, lost)


def _pick_lost(rng, log, faults, count) -> set[int]:
    """Values acknowledged just before the first fault (a kill), dropped from the final log."""
    start = faults[0][0]
    candidates = [v for p in log for o, (t, v) in enumerate(log[p])
                  if start - 200 * MS <= t < start and o + 1 < len(log[p])]
    return set(rng.sample(sorted(candidates), min(count, len(candidates))))


def _polls(rng, add, log, faults, end, producers, consumers, partitions) -> None:
    """Each consumer polls its partitions; its view lags while a fault lasts."""
    for c in range(consumers):
        process = producers + c
        mine = [p for p in range(partitions) if p % consumers == c]
        position = {p: 0 for p in mine}
        seen_hw = {p: 0 for p in mine}  # a real consumer's view of the hw never goes back
        t = int(rng.uniform(0, 20) * MS)
        add(process, "assign", t, t + 2 * MS, "ok", value=json.dumps(mine))
        t += 3 * MS
        while t < end:
            fault = next((f for f in faults if f[0] <= t < f[1]), None)
            stale = (t - fault[0]) * 0.8 if fault else rng.uniform(0, 30) * MS
            latency = int(rng.lognormvariate(math.log(4 * MS), 0.5) * (8 if fault else 1))
            records = []
            for p in mine:
                visible = [o for o, (ack, _v) in enumerate(log[p]) if ack <= t - stale]
                upto = min(len(visible), position[p] + 40)
                for o in range(position[p], upto):
                    records.append({"kind": "poll", "topic": TOPIC, "partition": p, "offset": o,
                                    "value": log[p][o][1]})
                position[p] = max(position[p], upto)
                seen_hw[p] = max(seen_hw[p], len(visible))
                records.append({"kind": "hw", "topic": TOPIC, "partition": p,
                                "offset": seen_hw[p]})
            add(process, "poll", t, t + latency, "ok", records)
            t += latency + int(rng.uniform(20, 60) * MS)


def _write(path, events, seed, seconds, lost) -> dict:
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    invoke_index: dict[int, int] = {}
    invoke_time: dict[int, int] = {}
    meta = {"generator": "properties/run_histories.py (simulated)", "seed": seed,
            "seconds": seconds, "nemesis": "kill, pause, partition"}
    with HistoryWriter(path, config=CheckConfig(), meta=meta) as writer:
        for index, (time, phase, pid, op, records) in enumerate(events):
            if phase == 0:
                invoke_index[pid], invoke_time[pid] = index, time
            writer.op(index, time, op["process"], op["type"], op["f"],
                      invoke_index=None if phase == 0 else invoke_index[pid],
                      error=op["error"] if phase else None, value=op["value"])
            for position, r in enumerate(records):
                writer.record(index, position, r["kind"], op["process"], op["type"],
                              invoke_time[pid], time, r["topic"], r["partition"], r["offset"],
                              r.get("value"))
    return {"ops": len(events), "lost": sorted(lost)}
