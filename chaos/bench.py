"""`kafkaref bench chaos`: the recorder's cost and the check's speed on recorded histories.

One embedded 3-broker cluster (through the proxy mesh, no faults), the workload unthrottled:

- workload ops/s without recording (the recorder only counts) and with recording (every op
  streamed to Parquet), alternating, KAFKAREF_BENCH_CHAOS_SECONDS each (default 15), twice each:
  the recorder's overhead is the ratio, in the same run on the same cluster;
- the recorder alone: invoke + complete pairs per second into a HistoryWriter (its ceiling);
- history bytes per op (Parquet, zstd) of the recorded history;
- the Spark check of that history (records/s) against a synthetic history of the same number of
  sends checked in the same session (`kafkaref bench spark`'s generator): the synthetic rate is
  the baseline. With KAFKAREF_BENCH_CHAOS_HOUR=1 also a synthetic history the size an hour of this
  workload would record, checked the same way (minutes). The check's part is handed in
  (`check_speed`, spark_checks/bench.py's): chaos/ does not import spark_checks/.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from kafkaref.chaos.recorder import Recorder
from kafkaref.chaos.workload import Workload, WorkloadConfig, create_topic
from kafkaref.history.store import HistoryWriter

UNTHROTTLED = WorkloadConfig(rate=100_000.0, confluent_producers=0)


def _log(message: str) -> None:
    print(f"[bench chaos {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _history_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*.parquet"))


def _workload_phase(bootstrap: str, seconds: float, history: Path | None, seed: int,
                    topic: str) -> dict:
    """One phase on a topic of its own: process numbers (and so values) restart with every
    Workload, and a history's final reads must see only its own values."""
    config = attrs.evolve(UNTHROTTLED, topic=topic)
    create_topic(bootstrap, config)
    writer = HistoryWriter(history, config=config.check_config()) if history else None
    recorder = Recorder(writer)
    workload = Workload(bootstrap, recorder, config, seed)
    started = time.monotonic()
    workload.start()
    time.sleep(seconds)
    workload.stop()
    elapsed = time.monotonic() - started
    if history is not None:
        workload.final_reads()
        writer.close()
    return {"ops": recorder.ops(), "sends": recorder.counts.get("send:invoke", 0),
            "ops_per_s": recorder.ops() / elapsed,
            "sends_per_s": recorder.acked_sends / elapsed, "errors": workload.errors}


def _recorder_ceiling(directory: Path, pairs: int = 200_000) -> float:
    with HistoryWriter(directory / "ceiling") as writer:
        recorder = Recorder(writer)
        started = time.monotonic()
        for i in range(pairs):
            invocation = recorder.invoke(1, "send")
            recorder.complete(invocation, "ok", records=[("send", "t", 0, i, i)])
        elapsed = time.monotonic() - started
    return 2 * pairs / elapsed


# (recorded history, its sends, a scratch directory, sends of an hour or None) -> figures
CheckSpeed = Callable[[Path, int, Path, int | None], dict]


def bench_chaos(check_speed: CheckSpeed | None = None) -> dict:
    """The figures above; without check_speed, those of the workload and the recorder only."""
    from kafkaref.chaos.cluster import ProxiedCluster

    seconds = float(os.environ.get("KAFKAREF_BENCH_CHAOS_SECONDS", "15"))
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="kafkaref-bench-chaos-") as tmp:
        directory = Path(tmp)
        _log("starting 3 brokers")
        with ProxiedCluster(3, str(directory / "cluster")) as cluster:
            for round_ in range(2):
                for recorded in (False, True):
                    history = directory / f"history-{round_}" if recorded else None
                    _log(f"workload {'with' if recorded else 'without'} recording, {seconds}s")
                    phase = _workload_phase(cluster.bootstrap, seconds, history, round_,
                                            f"bench-{round_}-{int(recorded)}")
                    rows.append({"phase": f"{'recorded' if recorded else 'unrecorded'} "
                                          f"#{round_ + 1}", **phase,
                                 "history_bytes": _history_bytes(history) if history else 0})
        recorded = [r for r in rows if r["phase"].startswith("recorded")]
        unrecorded = [r for r in rows if r["phase"].startswith("unrecorded")]
        history = directory / "history-1"
        ops = rows[-1]["ops"]
        _log("recorder ceiling")
        ceiling = _recorder_ceiling(directory)
        figures = {
            "recorded_ops_per_s": sum(r["ops_per_s"] for r in recorded) / len(recorded),
            "unrecorded_ops_per_s": sum(r["ops_per_s"] for r in unrecorded) / len(unrecorded),
            "recorder_ceiling_ops_per_s": ceiling,
            "history_bytes_per_op": _history_bytes(history) / ops,
        }
        figures["recorder_overhead"] = 1 - (figures["recorded_ops_per_s"]
                                            / figures["unrecorded_ops_per_s"])
        hour_sends = (int(rows[-1]["sends"] / seconds * 3600)
                      if os.environ.get("KAFKAREF_BENCH_CHAOS_HOUR") == "1" else None)
        if check_speed is not None:
            figures.update(check_speed(history, rows[-1]["sends"], directory, hour_sends))
    for row in rows:
        row["errors"] = "; ".join(row["errors"])
    return {"title": "chaos workload: recording overhead and check speed (3 brokers, no faults)",
            "rows": [attrs.asdict(_Row(**r)) for r in rows], "figures": figures}


@attrs.frozen
class _Row:
    phase: str
    ops: int
    sends: int
    ops_per_s: float
    sends_per_s: float
    history_bytes: int
    errors: str
