"""The Spark check job: read a history, run every check, build the verdict.

The same function runs in local mode (`kafkaref check`) and under spark-submit on a cluster
(spark_checks/submit.py); only the SparkSession differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import attrs

from kafkaref.history import integrity
from kafkaref.history.format import (
    ANOMALIES,
    TABLE_COLUMNS,
    CheckConfig,
    HistoryError,
    check_meta,
)
from kafkaref.spark_checks import spark_error, structure
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


def verify(spark, path: str) -> dict:
    """The history's files against its manifest (history/integrity.py): on the local disk
    directly; through Spark for hdfs:// s3a:// ... paths (each file's bytes hashed where it
    lies). CorruptHistory names the file and what is wrong."""
    from kafkaref.history import integrity

    if _is_local(path):
        return integrity.verify(path.removeprefix("file://")).as_dict()
    from pyspark.sql import functions as F

    def listing(where: str) -> list:
        try:
            return spark.read.format("binaryFile").load(where).select(
                "path", "length", F.sha2("content", 256).alias("sha256")).collect()
        except Exception:  # noqa: BLE001 -- Spark's AnalysisException: no such path
            return []

    meta = spark.read.format("binaryFile").load(f"{path}/meta.json").first()
    if meta is None:
        raise HistoryError(f"{path} is not a history (no meta.json)")
    files = {}
    for table in integrity.TABLES:
        for row in listing(f"{path}/{table}"):
            name = row["path"].rstrip("/").rsplit("/", 1)[-1]
            if not name.startswith(("_", ".")):
                files[f"{table}/{name}"] = integrity.FileFacts(
                    row["length"], lambda digest=row["sha256"]: digest)
    raw = bytes(meta["content"]).decode("utf-8", errors="replace")
    return integrity.verify_files(path, raw, files).as_dict()


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
    """Every anomaly over the history at path. config defaults to the one in meta.json. First
    the files are verified against their manifest, then the rows against the structural rules
    (spark_checks/structure.py); a history failing either is "corrupt history", never judged.
    Any failure (a corrupt or unreadable history, a Spark error, a bound exceeded) makes the
    verdict unknown, its error one line (Spark's stack traces are in its log file)."""
    path = str(path)
    fallback = config or CheckConfig()
    found_integrity = None
    steps = len(ANOMALIES) + 2  # the files, the structure, then each anomaly

    def step(name: str, done: int) -> None:
        if progress:
            progress(name, done, steps)

    try:
        step("verifying the files", 0)
        found_integrity = verify(spark, path)
        meta = read_meta(spark, path)
        if config is None and meta.get("config") is not None:
            config = CheckConfig.from_dict(meta["config"])
        config = config or CheckConfig()
        fr = load_frames(spark, path)
        cases = {}
        try:
            step("checking the structure", 1)
            broken = structure.problems(fr.ops, fr.records)
            if broken:
                raise integrity.structure_error(path, broken)
            for done, name in enumerate(ANOMALIES, 2):
                step(name, done)
                cases[name] = run_check(fr, name, examples)
            step("summary", steps)
            return attrs.evolve(build_result(config, cases, info(fr)),
                                integrity=found_integrity)
        finally:
            fr.release()
    except Exception as error:  # noqa: BLE001 -- STYLE.md 10: exceptions become "unknown"
        return unknown(config or fallback, spark_error.one_line(error), found_integrity)
