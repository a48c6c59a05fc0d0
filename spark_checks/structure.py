"""The structural rules of a history (history/format.py STRUCTURE) as Spark DataFrame jobs, run
before any anomaly check: a history breaking one is damaged or wrongly written, and the job
refuses it rather than judge it. spark_checks/twin_structure.py states the same rules in plain
Python; a test holds the two equal.

Each rule is a DataFrame of (key, n): n rows breaking the rule whose op index (op_index for a
record) is key. All of them are reduced in one job to (rows, lowest key) per rule.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafkaref.history.format import COMPLETION_TYPES, OP_TYPES, RECORD_KINDS


def problems(ops: DataFrame, records: DataFrame) -> dict[str, tuple[int, int]]:
    """rule -> (rows breaking it, the lowest op index among them), for every rule broken."""
    op_count = ops.count()
    parts = [rule(ops, records, op_count).select(F.lit(name).alias("rule"), "key", "n")
             for name, rule in RULES.items()]
    found = reduce(DataFrame.unionByName, parts).groupBy("rule").agg(
        F.sum("n").alias("rows"), F.min("key").alias("first")).collect()
    return {row["rule"]: (int(row["rows"]), int(row["first"])) for row in found}


def _each(df: DataFrame, key: str) -> DataFrame:
    """Every row of df counts once, under its key column."""
    return df.select(F.col(key).alias("key"), F.lit(1).cast("long").alias("n"))


def _broken(condition) -> F.Column:
    """A rule's condition for a row to be fine, negated; unknown (null: a missing partner row)
    counts as broken."""
    return F.coalesce(~condition, F.lit(True))


def op_index(ops, records, op_count) -> DataFrame:
    uses = ops.groupBy("index").agg(F.count(F.lit(1)).alias("uses"))
    bad = uses.where((F.col("uses") > 1) | (F.col("index") < 0) | (F.col("index") >= op_count))
    return bad.select(F.col("index").alias("key"), F.col("uses").alias("n"))


def op_type(ops, records, op_count) -> DataFrame:
    return _each(ops.where(~F.col("type").isin(*OP_TYPES)), "index")


def op_range(ops, records, op_count) -> DataFrame:
    return _each(ops.where((F.col("time") < 0) | (F.col("process") < -1)), "index")


def _invocations(ops: DataFrame) -> DataFrame:
    """Per invocation index: how many invocations use it, and (if one) its process, f, time."""
    return ops.where(F.col("type") == "invoke").groupBy(F.col("index").alias("inv_index")).agg(
        F.count(F.lit(1)).alias("invocations"), F.first("process").alias("inv_process"),
        F.first("f").alias("inv_f"), F.first("time").alias("inv_time"))


def completion(ops, records, op_count) -> DataFrame:
    completions = ops.where(F.col("type").isin(*COMPLETION_TYPES))
    naming = completions.groupBy(F.col("invoke_index").alias("named")).agg(
        F.count(F.lit(1)).alias("naming"))
    joined = (completions
              .join(_invocations(ops), F.col("invoke_index") == F.col("inv_index"), "left")
              .join(naming, F.col("invoke_index") == F.col("named"), "left"))
    fine = (F.col("invoke_index").isNotNull() & (F.col("invocations") == 1)
            & (F.col("naming") == 1) & (F.col("inv_process") == F.col("process"))
            & (F.col("inv_f") == F.col("f")) & (F.col("inv_index") < F.col("index"))
            & (F.col("inv_time") <= F.col("time")))
    naming_invocations = ops.where((F.col("type") == "invoke") & F.col("invoke_index").isNotNull())
    return _each(joined.where(_broken(fine)), "index").unionByName(
        _each(naming_invocations, "index"))


def record_kind(ops, records, op_count) -> DataFrame:
    bad = (~F.col("kind").isin(*RECORD_KINDS) | ~F.col("type").isin(*COMPLETION_TYPES)
           | (F.col("value").isNull() != (F.col("kind") == "hw")))
    return _each(records.where(bad), "op_index")


def record_range(ops, records, op_count) -> DataFrame:
    bad = ((F.col("partition") < 0) | (F.col("position") < 0)
           | (F.col("offset").isNotNull() & (F.col("offset") < 0))
           | (F.col("invoke_time") > F.col("complete_time")))
    return _each(records.where(bad), "op_index")


def record_op(ops, records, op_count) -> DataFrame:
    """Per op index of the records, compared with the one op of that index and its invocation
    (its time only when the op names exactly one: else the completion rule reports it)."""
    groups = records.groupBy("op_index").agg(
        F.count(F.lit(1)).alias("n"), F.countDistinct("position").alias("positions"),
        F.min("position").alias("low"), F.max("position").alias("high"),
        *[F.min(c).alias(f"{c}_low") for c in _REPEATED],
        *[F.max(c).alias(f"{c}_high") for c in _REPEATED])
    named = ops.groupBy(F.col("index").alias("op_at")).agg(
        F.count(F.lit(1)).alias("ops"), F.first("process").alias("op_process"),
        F.first("type").alias("op_type"), F.first("time").alias("op_time"),
        F.first("invoke_index").alias("op_invoke_index"))
    joined = (groups.join(named, F.col("op_index") == F.col("op_at"), "left")
              .join(_invocations(ops), F.col("op_invoke_index") == F.col("inv_index"), "left"))
    same = [(F.col(f"{c}_low") == F.col(f"{c}_high")) for c in _REPEATED]
    fine = (reduce(lambda a, b: a & b, same) & (F.col("ops") == 1)
            & F.col("op_type").isin(*COMPLETION_TYPES)
            & (F.col("process_low") == F.col("op_process"))
            & (F.col("type_low") == F.col("op_type"))
            & (F.col("complete_time_low") == F.col("op_time"))
            & ((F.coalesce(F.col("invocations"), F.lit(0)) != 1)
               | (F.col("invoke_time_low") == F.col("inv_time")))
            & (F.col("low") == 0) & (F.col("high") == F.col("n") - 1)
            & (F.col("positions") == F.col("n")))
    return joined.where(_broken(fine)).select(F.col("op_index").alias("key"), "n")


_REPEATED = ("process", "type", "invoke_time", "complete_time")

RULES = {"op_index": op_index, "op_type": op_type, "op_range": op_range,
         "completion": completion, "record_kind": record_kind, "record_range": record_range,
         "record_op": record_op}
