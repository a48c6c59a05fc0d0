"""Several runs judged as one history on Spark without writing the merged copy: each run's Parquet
files are read where they lie, placed by the same Plan `kafkaref history merge` follows
(chaos/history_merge.py: measured and placed once, in Python) as column arithmetic, and unioned.

The checks see what they would read from the merged copy: the same indexes, processes, times,
topics and values, and an observation's corrupt_batch.topic prefixed (the one op value a check
reads). A send invocation's free-form detail keeps the value it was recorded with (in the copy it
is rewritten for people reading the ops; no check reads it). A test holds the two verdicts equal.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafkaref.chaos.history_merge import VALUE_PROCESS_BITS, Placement, Plan
from kafkaref.spark_checks.checks import Frames
from kafkaref.spark_checks.job import read_tables
from kafkaref.spec.history import NEMESIS_PROCESS, OPS_COLUMNS, RECORDS_COLUMNS

# The corrupt_batch object is flat ({"topic", "partition", "offset"}): its topic string starts
# after the first "topic": inside it.
_CORRUPT_TOPIC = r'("corrupt_batch"\s*:\s*\{[^{}]*"topic"\s*:\s*")'


def _shifted(name: str, shift: int) -> Column:
    return (F.col(name) + F.lit(shift)) if shift else F.col(name)


def _process(shift: int) -> Column:
    return F.when(F.col("process") == NEMESIS_PROCESS, F.col("process")).otherwise(
        _shifted("process", shift))


def _value(at: Placement) -> Column:
    """Placement.value as a column: moved blocks (few: stray values) from a literal map."""
    shifted = _shifted("value", at.value_shift)
    if not at.moved_blocks:
        return shifted
    moved = F.create_map(*[F.lit(x).cast("bigint") for pair in at.moved_blocks for x in pair])
    block = F.try_element_at(moved, F.shiftright(F.col("value"), VALUE_PROCESS_BITS))
    sequence = F.col("value").bitwiseAND(F.lit((1 << VALUE_PROCESS_BITS) - 1).cast("bigint"))
    return F.when(block.isNull(), shifted).otherwise(
        block * F.lit(1 << VALUE_PROCESS_BITS).cast("bigint") + sequence)


def _op_value(at: Placement) -> Column:
    value = F.col("value")
    return F.when(value.contains("corrupt_batch"), F.regexp_replace(
        value, _CORRUPT_TOPIC, "$1" + at.prefix.replace("\\", "\\\\").replace("$", "\\$"))
    ).otherwise(value)


def placed(records: DataFrame, ops: DataFrame, at: Placement) -> tuple[DataFrame, DataFrame]:
    """One run's (records, ops) as placed in the merged history."""
    changed_ops = {"index": _shifted("index", at.index_shift),
                   "time": _shifted("time", at.time_shift),
                   "process": _process(at.process_shift),
                   "invoke_index": _shifted("invoke_index", at.index_shift),
                   "value": _op_value(at)}
    changed_records = {"op_index": _shifted("op_index", at.index_shift),
                       "process": _process(at.process_shift),
                       "invoke_time": _shifted("invoke_time", at.time_shift),
                       "complete_time": _shifted("complete_time", at.time_shift),
                       "topic": F.concat(F.lit(at.prefix), F.col("topic")),
                       "value": _value(at)}
    return (_select(records, RECORDS_COLUMNS, changed_records),
            _select(ops, OPS_COLUMNS, changed_ops))


def _select(df: DataFrame, columns, changed: dict[str, Column]) -> DataFrame:
    return df.select(*[changed.get(c.name, F.col(c.name)).alias(c.name) for c in columns])


def load_merged(spark, plan: Plan) -> tuple[dict, Frames]:
    """(meta, Frames) of the merged history plan describes, for job.judge."""
    records, ops = [], []
    for history, at in zip(plan.histories, plan.placements, strict=True):
        run_records, run_ops = placed(*read_tables(spark, str(history)), at)
        records.append(run_records)
        ops.append(run_ops)
    slots = spark.sparkContext.defaultParallelism
    ops = _union(ops, _partitions(slots, sum(e.ops for e in plan.extents)))
    frames = Frames(_union(records, _partitions(slots, sum(e.records for e in plan.extents))),
                    ops)
    # Frames persists the records; the ops, which several checks scan, would otherwise be read
    # again from every run's file by each of them.
    frames.persist(ops)
    return plan.meta, frames


ROWS_PER_PARTITION = 2_000_000


def _partitions(slots: int, rows: int) -> int:
    return max(slots, -(-rows // ROWS_PER_PARTITION))


def _union(frames: list[DataFrame], partitions: int) -> DataFrame:
    """The runs one after the other, in few partitions: a union keeps one partition per run's
    file at least (one read of many small files would pack them), and every check scanning
    the ops would pay a task per run. coalesce merges them without a shuffle."""
    result = frames[0]
    for df in frames[1:]:
        result = result.unionByName(df)
    return result.coalesce(partitions) if len(frames) > partitions else result
