"""`kafkaref bench spark`: the Spark checks over large synthetic histories, against the naive twin.

Sizes (in sends; the history holds about 3 records per send: the send, a poll of it, the final
read of it) come from KAFKAREF_BENCH_SPARK_SENDS (comma separated; default 3.4M sends, about 10M
records; 34M sends gives about 100M). Each size is generated with every anomaly kind injected at a
small rate, then checked on local[2]; recall and precision are measured against the ground truth.
The twin (quadratic realtime check) runs on KAFKAREF_BENCH_TWIN_SENDS (default 6k) in the same run, as the baseline ratio.
Peak JVM memory is VmHWM of the driver JVM from /proc (the launcher execs java in place); the
Python side's is ru_maxrss of this process, and peak_all_rss_mib adds the two.
Last, `kafkaref history merge` of two copies of the largest history (merge_rows_per_s), against
a plain streamed rewrite of the same rows in the same run (copy_rows_per_s).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from kafkaref.spark_checks.scoring import load_truth, score
from kafkaref.spark_checks.synth import INJECTIONS, SynthSpec, generate

RATE = 2e-5
TWIN_RATE = 2e-3  # the twin's history is small: a higher rate still injects every kind
EXAMPLES = 10_000  # enough to keep every case at these rates, so recall is measured on all


def _log(message: str) -> None:
    print(f"[bench spark {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _sizes(name: str, default: str) -> list[int]:
    return [int(float(s)) for s in os.environ.get(name, default).split(",") if s.strip()]


def _jvm_peak_rss_mib(spark) -> float:
    pid = spark.sparkContext._gateway.proc.pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _driver_peak_rss_mib() -> float:
    """Peak RSS of this Python process (the driver's Python side; the JVM is counted apart)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _synth(sends: int, directory: Path, rate: float = RATE) -> tuple[Path, float, dict]:
    path = directory / f"history-{sends}"
    spec = SynthSpec(sends=sends, partitions=8, producers=8, consumers=4, seed=7,
                     rates={kind: rate for kind in INJECTIONS})
    started = time.monotonic()
    last = [0.0]

    def progress(done, total):
        if time.monotonic() - last[0] > 10:
            last[0] = time.monotonic()
            _log(f"synth {sends:,} sends: {100 * done / total:.0f}%")

    summary = generate(spec, path, progress)
    return path, time.monotonic() - started, summary


def _spark_row(spark, sends: int, directory: Path) -> dict:
    from kafkaref.spark_checks import job

    path, synth_s, summary = _synth(sends, directory)
    _log(f"synth {sends:,} sends -> {summary['records']:,} records in {synth_s:.0f} s; checking")
    started = time.monotonic()
    took: dict[str, float] = {}  # check name -> wall seconds (its shared frames included)
    last = [started, None]

    def progress(name, done, total):
        now = time.monotonic()
        if last[1] is not None:
            took[last[1]] = now - last[0]
        last[:] = [now, name]
        _log(f"check {done}/{total} {name} ({now - started:.0f} s)")

    result = job.check(spark, path, examples=EXAMPLES, progress=progress)
    check_s = time.monotonic() - started
    slowest = sorted(took.items(), key=lambda item: -item[1])[:4]
    figures = score(load_truth(path), result.anomalies)
    return {
        "checker": "spark local[2]", "sends": sends, "records": summary["records"],
        "synth_s": round(synth_s, 1), "check_s": round(check_s, 1),
        "records_per_s": summary["records"] / check_s,
        "peak_jvm_rss_mib": round(_jvm_peak_rss_mib(spark)),
        "peak_driver_rss_mib": round(_driver_peak_rss_mib()),
        "injected": figures["injected"], "recall": figures["recall"],
        "precision": figures["precision"], "valid": str(result.valid),
        "error": result.error or "",
        "slowest_checks": ", ".join(f"{name} {seconds:.0f} s" for name, seconds in slowest),
    }


def _twin_row(sends: int, directory: Path) -> dict:
    from kafkaref.spark_checks import twin

    path, synth_s, summary = _synth(sends, directory, TWIN_RATE)
    _log(f"twin on {summary['records']:,} records")
    started = time.monotonic()
    result = twin.check(path, examples=None)
    check_s = time.monotonic() - started
    figures = score(load_truth(path), result.anomalies)
    return {
        "checker": "twin (python)", "sends": sends, "records": summary["records"],
        "synth_s": round(synth_s, 1), "check_s": round(check_s, 1),
        "records_per_s": summary["records"] / check_s,
        "peak_jvm_rss_mib": 0,  # no JVM: the twin is plain Python
        "peak_driver_rss_mib": round(_driver_peak_rss_mib()),
        "injected": figures["injected"], "recall": figures["recall"],
        "precision": figures["precision"], "valid": str(result.valid),
        "error": result.error or "",
        "slowest_checks": "",
    }


def merge_figures(path: Path, directory: Path, copies: int = 2) -> dict:
    """`kafkaref history merge` of copies of one history, against its baseline in the same run:
    the same rows read and written again unplaced (what any streamed rewrite costs)."""
    from kafkaref.history.merge import BATCH_ROWS, merge
    from kafkaref.history.store import HistoryWriter, iter_batches

    started = time.monotonic()
    with HistoryWriter(directory / "copy") as writer:
        for _ in range(copies):
            for batch in iter_batches(path, "ops", BATCH_ROWS):
                writer.ops_table(_table(batch))
            for batch in iter_batches(path, "records", BATCH_ROWS):
                writer.records_table(_table(batch))
    copy_s = time.monotonic() - started
    summary = merge([path] * copies, directory / "merged")
    rows = summary.ops + summary.records
    _log(f"merge of {copies} copies: {summary.records:,} records in {summary.seconds:.1f} s, "
         f"plain copy {copy_s:.1f} s")
    return {"merge_records": summary.records, "merge_s": round(summary.seconds, 1),
            "merge_rows_per_s": rows / summary.seconds, "copy_rows_per_s": rows / copy_s,
            "merge_over_copy_time": summary.seconds / copy_s}


def _table(batch):
    import pyarrow as pa

    return pa.Table.from_batches([batch])


def _check_rate(spark, path: Path) -> tuple[float, int, str]:
    from kafkaref.history.store import read_meta
    from kafkaref.spark_checks import job

    records = read_meta(path)["records"]
    started = time.monotonic()
    result = job.check(spark, str(path))
    seconds = time.monotonic() - started
    return seconds, records, str(result.valid)


def _synthetic(directory: Path, sends: int, name: str) -> Path:
    path = directory / name
    generate(SynthSpec(sends=sends, partitions=3, producers=3, consumers=2, seed=7), path)
    return path


def check_speed(history: Path, sends: int, directory: Path, hour_sends: int | None) -> dict:
    """`kafkaref bench chaos`'s check figures: the Spark check of a recorded history (records/s)
    against a synthetic history of as many sends checked in the same session, the baseline; with
    hour_sends, also a synthetic history of that many sends (an hour of the workload)."""
    from kafkaref.spark_checks.session import run_session

    _log("Spark check of the recorded history")
    spark = run_session()
    check_s, records, valid = _check_rate(spark, history)
    synthetic = _synthetic(directory, max(sends, 1000), "synthetic")
    _log("Spark check of a synthetic history of the same size")
    synth_s, synth_records, _ = _check_rate(spark, synthetic)
    figures = {"check_s": check_s, "check_records": records,
               "check_records_per_s": records / check_s,
               "synthetic_records_per_s": synth_records / synth_s, "recorded_valid": valid}
    figures["check_rate_vs_synthetic"] = (figures["check_records_per_s"]
                                          / figures["synthetic_records_per_s"])
    if hour_sends is not None:
        _log(f"Spark check of an hour's worth: {hour_sends:,} synthetic sends")
        hour = _synthetic(directory, hour_sends, "hour")
        hour_s, hour_records, _ = _check_rate(spark, hour)
        figures.update(hour_check_s=hour_s, hour_records=hour_records)
    return figures


def bench_spark() -> dict:
    from kafkaref.spark_checks.session import get_session

    rows = []
    with tempfile.TemporaryDirectory(prefix="kafkaref-bench-spark-") as tmp:
        directory = Path(tmp)
        twin_sends = _sizes("KAFKAREF_BENCH_TWIN_SENDS", "6000")[0]
        rows.append(_twin_row(twin_sends, directory))
        # 8 shuffle partitions (4 per core, as `kafkaref check`): fewer, larger tasks; with 16,
        # 100M records took 695 s instead of 584 s (same checks, same 6.8 GiB JVM peak).
        spark = get_session("local[2]", "kafkaref-bench", shuffle_partitions=8,
                            conf={"spark.driver.memory": "6g"})
        try:
            for sends in _sizes("KAFKAREF_BENCH_SPARK_SENDS", "3400000"):
                rows.append(_spark_row(spark, sends, directory))
                _log(f"done: {rows[-1]}")
        finally:
            spark.stop()
        largest_sends = max(_sizes("KAFKAREF_BENCH_SPARK_SENDS", "3400000"))
        merged = merge_figures(directory / f"history-{largest_sends}", directory)
    spark_rows = [r for r in rows if r["checker"].startswith("spark")]
    largest = max(spark_rows, key=lambda r: r["records"])
    return {
        "title": "Spark checks vs the naive twin (local[2])",
        "rows": rows,
        "figures": {
            "spark_records_per_s": largest["records_per_s"],
            "twin_records_per_s": rows[0]["records_per_s"],
            "spark_over_twin_throughput": largest["records_per_s"] / rows[0]["records_per_s"],
            "largest_records": largest["records"],
            "largest_check_s": largest["check_s"],
            "peak_jvm_rss_mib": max(r["peak_jvm_rss_mib"] for r in spark_rows),
            # the "8 GiB in all": JVM plus this Python process (whose peak may be
            # synth's, which runs in it before the check: an upper bound for the check's)
            "peak_all_rss_mib": max(r["peak_jvm_rss_mib"] + r["peak_driver_rss_mib"]
                                    for r in spark_rows),
            "recall_min": min(r["recall"] for r in rows),
            "precision_min": min(r["precision"] for r in rows),
            **merged,
        },
    }
