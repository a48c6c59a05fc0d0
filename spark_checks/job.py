"""The Spark check job: read a history, run every check, build the verdict.

The same function runs in local mode (`kafkaref check`) and under spark-submit on a cluster
(spark_checks/submit.py); only the SparkSession differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from kafkaref.history.format import (
    ANOMALIES,
    TABLE_COLUMNS,
    CheckConfig,
    HistoryError,
    check_meta,
)
from kafkaref.spark_checks.checks import CHECKS, Frames
from kafkaref.spark_checks.verdict import DEFAULT_EXAMPLES, Result, build_result, unknown

Progress = Callable[[str, int, int], None]  # (check name, checks done, checks in all)


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def read_meta(spark, path: str) -> dict:
    """meta.json, from the local disk or, for hdfs:// s3a:// ... paths, through Spark."""
    if _is_local(path):
        from kafkaref.history.store import read_meta as read_local

        return read_local(path.removeprefix("file://"))
    text = "\n".join(row.value for row in spark.read.text(f"{path}/meta.json").collect())
    return check_meta(json.loads(text), path)


def load_frames(spark, path: str) -> Frames:
    records = spark.read.parquet(f"{path}/records")
    ops = spark.read.parquet(f"{path}/ops")
    for name, df in (("records", records), ("ops", ops)):
        missing = {c.name for c in TABLE_COLUMNS[name]} - set(df.columns)
        if missing:
            raise HistoryError(f"{path}/{name} lacks columns {sorted(missing)}")
    return Frames(records, ops)


def plain(value):
    """Spark Rows and lists to tuples, so cases compare equal to the twin's."""
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    return value


def run_check(fr: Frames, name: str, examples: int | None) -> tuple[int, list[tuple]]:
    found = CHECKS[name](fr)
    if isinstance(found, list):
        ordered = sorted(found)
        return len(ordered), ordered if examples is None else ordered[:examples]
    fields = list(found.columns)
    cases = found.cache()
    try:
        count = cases.count()
        if count == 0:
            return 0, []
        ordered = cases.orderBy(*fields)
        rows = ordered.collect() if examples is None else ordered.limit(examples).collect()
        return count, sorted(plain(tuple(row)) for row in rows)
    finally:
        cases.unpersist()


def info(fr: Frames) -> dict:
    by_f_type = {f"{row['f']}:{row['type']}": row["count"]
                 for row in fr.ops.groupBy("f", "type").count().collect()}
    return {"ops": sum(by_f_type.values()), "records": fr.records.count(),
            "ops_by_f_type": dict(sorted(by_f_type.items()))}


def check(spark, path: str | Path, config: CheckConfig | None = None,
          examples: int | None = DEFAULT_EXAMPLES, progress: Progress | None = None) -> Result:
    """Every anomaly over the history at path. config defaults to the one in meta.json.
    Any failure (unreadable history, Spark error, a bound exceeded) makes the verdict unknown."""
    path = str(path)
    fallback = config or CheckConfig()
    try:
        meta = read_meta(spark, path)
        if config is None and meta.get("config") is not None:
            config = CheckConfig.from_dict(meta["config"])
        config = config or CheckConfig()
        fr = load_frames(spark, path)
        cases = {}
        try:
            for done, name in enumerate(ANOMALIES):
                if progress:
                    progress(name, done, len(ANOMALIES))
                cases[name] = run_check(fr, name, examples)
            if progress:
                progress("summary", len(ANOMALIES), len(ANOMALIES))
            return build_result(config, cases, info(fr))
        finally:
            fr.release()
    except Exception as error:  # noqa: BLE001 -- STYLE.md 10: exceptions become "unknown"
        return unknown(config or fallback, error)
