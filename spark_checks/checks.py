"""The anomaly catalogue as Spark DataFrame jobs: one small function per anomaly.

Each function takes the shared Frames and returns a DataFrame of cases whose columns are the case
fields of ANOMALIES (history/format.py) in order; the job counts them and samples a few. Nothing here
collects the history to the driver: only the cycle check collects, and only the edges between the
few candidate ops left after contraction, with a bound. The naive twin (twin.py) defines the same
cases in plain Python; a Hypothesis property holds the two equal.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from kafkaref.history.format import (
    CLOCK_FAULT_F,
    EARLY_FETCH_FRACTION,
    HUNG_GRACE_MS,
    NEMESIS_PROCESS,
    POSITION_RESET_FS,
    silenced_windows,
)

READ_KINDS = ("poll", "final_read")
TP = ["topic", "partition"]
# The cycle check gives up (the verdict becomes unknown) rather than pull more to the driver.
CYCLE_CANDIDATES_MAX = 200_000
CYCLE_EDGES_MAX = 2_000_000


class Frames:
    """The history's DataFrames and the derived ones several checks share (lazily built).

    Every check used to rescan and decode the Parquet files; now the records and the aggregates
    several checks share are persisted (memory, spilling to disk at scale) on
    first use and reused by every later check, and release() unpersists them all."""

    def __init__(self, records: DataFrame, ops: DataFrame):
        self._persisted: list[DataFrame] = []
        # One shuffle for everything keyed by partition: hash-partitioned by (topic, partition)
        # and persisted, the records satisfy every later group-by, window and join whose keys
        # include both (see session.base_conf: requireAllClusterKeysForCoPartition), so those
        # run without another exchange.
        partitions = int(records.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        records = self.persist(records.repartition(partitions, *TP))
        self.records = records
        self.ops = ops
        self.sends = records.where(F.col("kind") == "send")
        self.ok_sends = self.sends.where((F.col("type") == "ok") & F.col("offset").isNotNull())
        self.reads = records.where(F.col("kind").isin(*READ_KINDS) & (F.col("type") == "ok"))
        self.polls = self.reads.where(F.col("kind") == "poll")
        self.final = self.reads.where(F.col("kind") == "final_read")
        self.final_end = self.persist(_final_end(records, ops, self.final))
        # One aggregate of the reads by (topic, partition, value) for unseen, lost_write and
        # send_reorder: the lowest offset any read returned the value at, and the lowest the
        # final reads did (null if they never did). Two aggregates used to scan the reads twice.
        self.by_value = self.persist(self.reads.groupBy(*TP, "value").agg(
            F.min("offset").alias("read_offset"),
            F.min(F.when(F.col("kind") == "final_read", F.col("offset"))).alias("final_offset")))
        self.read_offset = self.by_value.select(*TP, "value", "read_offset")
        self.final_offset_of = self.by_value.where(F.col("final_offset").isNotNull()).select(
            *TP, "value", "final_offset")
        columns = [*TP, "offset", "value"]
        # Not persisted: a cheap filter of the persisted records (a copy would double the cache).
        self._observations = self.ok_sends.select(*columns).unionByName(
            self.reads.select(*columns))
        # Partitioned by value: the cycle check joins it on value (twice), and a distinct by
        # (op, value) alone would hash by both and so shuffle it again for every such join.
        self.writers = self.persist(
            self.ok_sends.select(F.col("op_index").alias("op"), "value")
            .repartition(partitions, "value").distinct())
        self._shared: dict[str, DataFrame] = {}

    def persist(self, df: DataFrame) -> DataFrame:
        """Lazily persisted: nothing is computed until a check first uses it."""
        from pyspark import StorageLevel

        self._persisted.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return df

    def shared(self, name: str, build) -> DataFrame:
        """A derived DataFrame several checks use, computed once (it holds only few rows)."""
        if name not in self._shared:
            self._shared[name] = self.persist(build(self))
        return self._shared[name]

    def release(self) -> None:
        for df in self._persisted:
            df.unpersist()
        self._persisted.clear()
        self._shared.clear()

    def observations(self) -> DataFrame:
        """(topic, partition, offset, value) from ok sends and from every read."""
        return self._observations


def _final_end(records: DataFrame, ops: DataFrame, final: DataFrame) -> DataFrame:
    """Per partition the final phase read (covered), where its final log ends (exclusive): past
    its highest final_read record, or at the highest hw an ok final_read op recorded for it (how
    the final read marks a partition it read, even one it found empty: history/format.py). The
    final_read ops are few (one per partition or so), so they are broadcast to the hw records."""
    final_ops = ops.where((F.col("f") == "final_read") & (F.col("type") == "ok")).select(
        F.col("index").alias("op_index"))
    marks = (records.where((F.col("kind") == "hw") & (F.col("type") == "ok")
                           & F.col("offset").isNotNull())
             .join(F.broadcast(final_ops), "op_index", "left_semi")
             .select(*TP, F.col("offset").alias("end")))
    ends = final.select(*TP, (F.col("offset") + 1).alias("end")).unionByName(marks)
    return ends.groupBy(*TP).agg(F.max("end").alias("final_end"))


def _lagged(df: DataFrame, keys: list[str], order: list[str], columns: list[str]) -> DataFrame:
    """Each row with prev_<column> of its predecessor in its group (null for the first)."""
    window = Window.partitionBy(*keys).orderBy(*order)
    return df.select("*", *[F.lag(c).over(window).alias(f"prev_{c}") for c in columns])


BROADCAST_ROWS_MAX = 1_000_000


def _observed(fr: Frames) -> DataFrame:
    """The distinct observations (keyed by partition: no shuffle), shared by the checks."""
    return fr.shared("observed", lambda fr: fr.observations().distinct())


def _spread(fr: Frames, name: str, keys: list[str]) -> DataFrame:
    """The key groups of the observations holding more than one distinct observation: a count
    over the distinct ones (a hash aggregate; a min/max over a struct sorts every row)."""
    return fr.shared(name, lambda fr: _observed(fr).groupBy(*keys).count()
                     .where(F.col("count") > 1).select(*keys))


def _disagreeing(fr: Frames, name: str, keys: list[str]) -> DataFrame:
    """Observations whose key group holds more than one distinct observation. The cheap count
    finds the (rare) groups first, materialised so that an empty result costs nothing more and
    a small one is broadcast instead of shuffling every observation again."""
    df = _observed(fr)
    spread, count = _hinted(_spread(fr, name, keys))
    if count == 0:
        return df.limit(0)
    return df.join(spread, keys, "left_semi")


def _hinted(df: DataFrame) -> tuple[DataFrame, int]:
    """df (persisted by the caller) and its row count, hinted for broadcast when small."""
    count = df.count()
    return (F.broadcast(df) if count <= BROADCAST_ROWS_MAX else df), count


def inconsistent_offsets(fr: Frames) -> DataFrame:
    return (_disagreeing(fr, "spread_by_offset", [*TP, "offset"])
            .groupBy(*TP, "offset").agg(F.array_sort(F.collect_set("value")).alias("values")))


def _position():
    return F.struct(*TP, "offset")


def duplicate(fr: Frames) -> DataFrame:
    return (_disagreeing(fr, "spread_by_value", ["value"]).groupBy("value")
            .agg(F.array_sort(F.collect_set(_position())).alias("positions")))


def _acknowledged(fr: Frames) -> DataFrame:
    """Sends known to have taken effect: ok ones, and info ones some read returned; offset is the
    acknowledged one, else the lowest offset a read returned the value at. final_offset is the
    lowest offset the final reads returned the value at in its partition (null if none did)."""
    sends = fr.sends.where(F.col("type").isin("ok", "info")).join(fr.by_value, [*TP, "value"],
                                                                   "left")
    offset = F.when((F.col("type") == "ok") & F.col("offset").isNotNull(), F.col("offset")) \
        .otherwise(F.col("read_offset"))
    return (sends.select(*TP, offset.alias("offset"), "value", "type", "read_offset",
                         "final_offset")
            .where(F.col("offset").isNotNull()
                   & ((F.col("type") == "ok") | F.col("read_offset").isNotNull()))
            .select(*TP, "offset", "value", "final_offset"))


def lost_write(fr: Frames) -> DataFrame:
    # One join of the sends with the reads' aggregate gives both whether a read returned the
    # value and whether the final log holds it; the partitions' final maxima are few (broadcast).
    return (_acknowledged(fr).where(F.col("final_offset").isNull())
            .join(F.broadcast(fr.final_end), TP)
            .where(F.col("final_end") > F.col("offset") + 1)
            .select(*TP, "offset", "value").distinct())


def unseen(fr: Frames) -> DataFrame:
    # read_offset holds every (topic, partition, value) some read returned: its values are the
    # seen ones (an anti join needs no distinct), and it is persisted for lost_write anyway.
    # First the ok sends not read in their own partition (a join inside each partition, no
    # shuffle); only those few are then looked for in every partition's reads.
    seen = fr.read_offset.select("value")
    ok = fr.sends.where(F.col("type") == "ok")
    maybe, count = _small(fr, "not_read_in_partition", lambda fr: ok.join(
        fr.read_offset, [*TP, "value"], "left_anti").select(*TP, "offset", "value"))
    if count <= BROADCAST_ROWS_MAX:
        seen = seen.join(maybe.select("value"), "value", "left_semi")
        ok = maybe
    return (ok.join(seen, "value", "left_anti")
            .select(*TP, F.coalesce("offset", F.lit(-1)).alias("offset"), "value").distinct())


def offset_mismatch(fr: Frames) -> DataFrame:
    # A send and a read disagreeing at an offset make its observations spread (the small set
    # inconsistent_offsets found already): only those offsets are joined, not every read.
    spread, _ = _hinted(_spread(fr, "spread_by_offset", [*TP, "offset"]))
    sends = fr.ok_sends.select(*TP, "offset", "value").join(spread, [*TP, "offset"], "left_semi")
    observed = (fr.reads.join(spread, [*TP, "offset"], "left_semi")
                .select(*TP, "offset", F.col("value").alias("observed_value")))
    return (sends.join(observed, [*TP, "offset"])
            .where(F.col("value") != F.col("observed_value")).distinct())


_PROCESS_TP = ["process", *TP]
_IN_OP_ORDER = ["op_index", "position"]


def _backwards(df: DataFrame) -> DataFrame:
    """Successive records of a process and partition whose offset does not increase."""
    return (_lagged(df, _PROCESS_TP, _IN_OP_ORDER, ["value", "offset"])
            .where(F.col("offset") <= F.col("prev_offset"))
            .select(*_PROCESS_TP, "prev_value", "prev_offset", "value", "offset"))


def nonmonotonic_send(fr: Frames) -> DataFrame:
    return _backwards(fr.ok_sends)


def send_reorder(fr: Frames) -> DataFrame:
    in_log = (fr.sends.drop("offset").join(fr.final_offset_of, [*TP, "value"])
              .withColumnRenamed("final_offset", "offset"))
    return _backwards(in_log)


RESETS_BROADCAST_MAX = 200_000


def _log_ranks(fr: Frames) -> DataFrame:
    """(topic, partition, offset, rank): each observed offset's position among its partition's
    observed offsets, so gaps are judged on the log's values, not on offset arithmetic (offsets
    need not be dense). A window inside each partition of the persisted observations."""
    by_offset = Window.partitionBy(*TP).orderBy("offset")
    return (_observed(fr).select(*TP, "offset").distinct()
            .withColumn("rank", F.row_number().over(by_offset)))


def _read_epochs(fr: Frames) -> DataFrame:
    """Each polled record with its rank in the log and its epoch: how many position resets (ops
    of POSITION_RESET_FS, invocations and completions alike) its process made before it. Resets
    are few, so each process's sorted list is broadcast and counted per read, which keeps the
    reads in their partitions; a history with very many resets instead orders all of a
    process's reads and resets in one window. Final reads are not polls."""
    resets = fr.ops.where(F.col("f").isin(*POSITION_RESET_FS)).select(
        "process", F.col("index").alias("op_index"))
    ranks = fr.shared("log_ranks", _log_ranks)
    reads = fr.polls.select(*_PROCESS_TP, "op_index", "position", "offset").join(
        ranks, [*TP, "offset"])
    if resets.count() <= RESETS_BROADCAST_MAX:
        lists = resets.groupBy("process").agg(F.collect_list("op_index").alias("resets"))
        before = F.size(F.filter("resets", lambda index: index < F.col("op_index")))
        return (reads.join(F.broadcast(lists), "process", "left")
                .withColumn("epoch", F.coalesce(before, F.lit(0))).drop("resets"))
    marked = reads.withColumn("reset", F.lit(0)).unionByName(resets.select(
        "*", F.lit(2**31 - 1).alias("position"), F.lit(1).alias("reset")), allowMissingColumns=True)
    by_process = Window.partitionBy("process").orderBy(*_IN_OP_ORDER).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    return (marked.withColumn("epoch", F.sum("reset").over(by_process))
            .where(F.col("reset") == 0).drop("reset"))


def poll_steps(fr: Frames) -> DataFrame:
    """Successive polled records of a partition by one process with no assign/subscribe/seek
    between, kept only where the log rank does not advance by exactly one (the only
    interesting steps)."""
    steps = _lagged(_read_epochs(fr), [*_PROCESS_TP, "epoch"], _IN_OP_ORDER,
                    ["op_index", "offset", "rank"])
    return (steps.where(F.col("prev_rank").isNotNull()
                        & (F.col("rank") != F.col("prev_rank") + 1))
            .select(*_PROCESS_TP, "prev_op_index", "prev_offset", "op_index", "offset",
                    "prev_rank", "rank",
                    (F.col("op_index") == F.col("prev_op_index")).alias("same_op")))


def _poll_cases(steps: DataFrame, same_op: bool, skip: bool) -> DataFrame:
    moved = F.col("rank") > F.col("prev_rank") + 1 if skip else F.col("rank") <= F.col(
        "prev_rank")
    return steps.where((F.col("same_op") == same_op) & moved).drop("same_op", "prev_rank", "rank")


def poll_skip(fr: Frames) -> DataFrame:
    return _poll_cases(fr.shared("poll_steps", poll_steps), same_op=False, skip=True)


def nonmonotonic_poll(fr: Frames) -> DataFrame:
    return _poll_cases(fr.shared("poll_steps", poll_steps), same_op=False, skip=False)


def int_poll_skip(fr: Frames) -> DataFrame:
    return _poll_cases(fr.shared("poll_steps", poll_steps), same_op=True, skip=True)


def int_nonmonotonic_poll(fr: Frames) -> DataFrame:
    return _poll_cases(fr.shared("poll_steps", poll_steps), same_op=True, skip=False)


def _small(fr: Frames, name: str, build) -> tuple[DataFrame, int]:
    """A shared derived frame and its row count, hinted for broadcast when it is small."""
    return _hinted(fr.shared(name, build))


def aborted_read(fr: Frames) -> DataFrame:
    failed, count = _small(fr, "failed_values", lambda fr: fr.sends.where(
        F.col("type") == "fail").select("value").distinct())
    if count == 0:
        return fr.reads.select(*TP, "offset", "value").limit(0)
    return fr.reads.join(failed, "value", "left_semi").select(*TP, "offset", "value").distinct()


def dirty_read(fr: Frames) -> DataFrame:
    final_values = fr.final.select(*TP, "offset", "value").distinct()
    return (fr.polls.join(F.broadcast(fr.final_end), TP, "left_semi")
            .join(final_values, [*TP, "offset", "value"], "left_anti")
            .select(*TP, "offset", "value").distinct())


def hw_regression(fr: Frames) -> DataFrame:
    marks = fr.records.where((F.col("kind") == "hw") & F.col("offset").isNotNull())
    return (_lagged(marks, _PROCESS_TP, _IN_OP_ORDER, ["op_index", "offset"])
            .where(F.col("offset") < F.col("prev_offset"))
            .select(*_PROCESS_TP, "prev_op_index", "prev_offset", "op_index", "offset"))


def realtime_order(fr: Frames) -> DataFrame:
    """Per partition, events in time order (invocations before completions at equal times);
    the running maximum of completed (offset, value) at each invocation is the witness."""
    null_struct = F.lit(None).cast("struct<offset:bigint,value:bigint>")
    completions = fr.ok_sends.select(
        *TP, F.col("complete_time").alias("time"), F.lit(1).alias("tag"),
        F.struct("offset", "value").alias("done"), F.lit(None).cast("bigint").alias("b_value"),
        F.lit(None).cast("bigint").alias("b_offset"))
    invocations = fr.ok_sends.select(
        *TP, F.col("invoke_time").alias("time"), F.lit(0).alias("tag"), null_struct.alias("done"),
        F.col("value").alias("b_value"), F.col("offset").alias("b_offset"))
    window = Window.partitionBy(*TP).orderBy("time", "tag").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    return (completions.unionByName(invocations)
            .withColumn("prior", F.max("done").over(window))
            .where((F.col("tag") == 0) & (F.col("prior.offset") > F.col("b_offset")))
            .select(*TP, "b_value", "b_offset", "prior.value", "prior.offset"))


def garbage_read(fr: Frames) -> DataFrame:
    """Reads of a value no send record holds: an anti-join of the reads on the sent values."""
    sent = fr.sends.select(*TP, "value")
    # A corrupt value is read where it was written, so the partition keys keep the join local;
    # a value sent to another partition is caught by the second, by-value-only, anti-join.
    local = fr.reads.join(sent, [*TP, "value"], "left_anti")
    return (local.join(fr.sends.select("value"), "value", "left_anti")
            .select(*TP, "offset", "value").distinct())


_OBSERVATION = ("struct<sent:array<bigint>,answered:array<bigint>,max_wait_ms:bigint,"
                "empty_fetch_ms:bigint,timeout_ms:bigint,waited_ms:bigint,probe:string,"
                "corrupt_batch:struct<topic:string,partition:int,offset:bigint>>")


def _observations(fr: Frames, types: tuple[str, ...]) -> DataFrame:
    """Completions of the given types whose value is an observation (history/format.py); ops
    are few next to records, and a value that is no JSON object parses to nulls."""
    return (fr.ops.where(F.col("type").isin(*types) & F.col("value").startswith("{"))
            .select(F.col("index").alias("op"),
                    F.from_json("value", _OBSERVATION).alias("o")).select("op", "o.*"))


def _no_clock_faults(fr: Frames, cases: DataFrame) -> DataFrame:
    clock = fr.ops.where((F.col("process") == NEMESIS_PROCESS) & (F.col("f") == CLOCK_FAULT_F))
    return cases.limit(0) if clock.limit(1).count() else cases


def corrupt_read(fr: Frames) -> DataFrame:
    return (_observations(fr, ("ok", "fail", "info"))
            .where(F.col("corrupt_batch.topic").isNotNull()
                   & F.col("corrupt_batch.partition").isNotNull()
                   & F.col("corrupt_batch.offset").isNotNull())
            .select("op", "corrupt_batch.topic", "corrupt_batch.partition",
                    "corrupt_batch.offset"))


def response_reorder(fr: Frames) -> DataFrame:
    return (_observations(fr, ("ok",))
            .where(F.col("sent").isNotNull() & F.col("answered").isNotNull()
                   & (F.col("sent") != F.col("answered")))
            .select("op", "sent", "answered"))


def early_empty_fetch(fr: Frames) -> DataFrame:
    cases = (_observations(fr, ("ok",))
             .where(F.col("empty_fetch_ms") < F.col("max_wait_ms") * EARLY_FETCH_FRACTION)
             .select("op", "max_wait_ms", "empty_fetch_ms"))
    return _no_clock_faults(fr, cases)


def hung_request(fr: Frames) -> DataFrame:
    cases = (_observations(fr, ("ok", "fail", "info"))
             .where((F.col("probe") == "answered")
                    & (F.col("waited_ms") > F.col("timeout_ms") + HUNG_GRACE_MS))
             .select("op", "timeout_ms", "waited_ms"))
    return _no_clock_faults(fr, _not_silenced(fr, cases))


def _not_silenced(fr: Frames, cases: DataFrame) -> DataFrame:
    """The cases whose wait (invocation to completion) overlapped no fault silencing brokers
    towards clients (history/format.py silenced_windows; the nemesis's ops are few)."""
    nemesis = (fr.ops.where(F.col("process") == NEMESIS_PROCESS)
               .select("index", "time", "type", "f", "value").orderBy("index").collect())
    windows = silenced_windows(row.asDict() for row in nemesis)
    if not windows:
        return cases
    invokes = fr.ops.select(F.col("index").alias("invoke_index"), F.col("time").alias("start"))
    waits = (fr.ops.select(F.col("index").alias("op"), F.col("time").alias("end"),
                           "invoke_index").join(invokes, "invoke_index", "left"))
    overlaps = [(F.lit(start) < F.col("end")) & (F.coalesce(F.col("start"), F.lit(0)) < end)
                for start, end in windows]
    silenced = overlaps[0]
    for overlap in overlaps[1:]:
        silenced = silenced | overlap
    return cases.join(waits, "op").where(~silenced).select("op", "timeout_ms", "waited_ms")


def _spread_by_value(fr: Frames) -> DataFrame:
    """Values observed at more than one (topic, partition, offset) (shared with duplicate)."""
    return _spread(fr, "spread_by_value", ["value"])


def _observed_writers(fr: Frames) -> DataFrame:
    """Distinct observations (topic, partition, offset, value) with each op that wrote the
    value (op), in the records' partitioning. A value observed at a single position was only
    ever acknowledged there, so its writers are found inside its partition; the few values
    observed at several positions take their writers from every partition (broadcast)."""
    observed = _observed(fr)
    spread = _spread_by_value(fr)
    if spread.count() > BROADCAST_ROWS_MAX:
        return observed.join(fr.writers, "value")
    # The local writers are joined row by row, not gathered into sets (an aggregate over every
    # ok send): a row repeated by that join sorts next to its copy in _writer_runs and so is
    # never a run head; what the checks see is the same.
    local = fr.ok_sends.select(*TP, "value", F.col("op_index").alias("local_op"))
    anywhere = (fr.writers.join(F.broadcast(spread), "value", "left_semi")
                .groupBy("value").agg(F.collect_set("op").alias("ops")))
    return (observed.join(local, [*TP, "value"], "left")
            .join(F.broadcast(anywhere), "value", "left")
            .where(F.col("ops").isNotNull() | F.col("local_op").isNotNull())
            .select(*TP, "offset", "value",
                    F.explode(F.coalesce("ops", F.array("local_op"))).alias("op")))


def _writer_runs(fr: Frames) -> DataFrame:
    """Run heads: per partition in version order, where the writer op changes (see twin)."""
    lagged = _lagged(_observed_writers(fr), TP, ["offset", "value", "op"], ["op"])
    return lagged.where(F.col("prev_op").isNull() | (F.col("prev_op") != F.col("op"))).drop(
        "prev_op")


def _read_write_ops(fr: Frames) -> DataFrame:
    """Ops that both wrote (an ok send) and read, and the writers of the values they read.
    Reading ops are few next to records (a poll returns many), and ops that also write fewer
    still, so both are broadcast to the records instead of shuffling the records by op."""
    reading, _ = _small(fr, "reading_ops", lambda fr: fr.reads.select(
        F.col("op_index").alias("op")).distinct())
    read_write, count = _small(fr, "read_write_ops", lambda fr: fr.ok_sends.select(
        F.col("op_index").alias("op")).join(reading, "op", "left_semi").distinct())
    if count == 0:
        return read_write
    read_values = fr.reads.join(read_write.withColumnRenamed("op", "op_index"), "op_index",
                                "left_semi").select("value")
    read_by_rw = fr.writers.join(read_values, "value", "left_semi").select("op")
    return read_write.unionByName(read_by_rw)


def cycle(fr: Frames) -> list[tuple]:
    """Contract the dependency graph to candidate ops in Spark, then find cycles with networkx."""
    from kafkaref.spark_checks.twin import cycles_from_edges

    runs = _writer_runs(fr).cache()
    try:
        writers = fr.writers
        multi_run = runs.groupBy("op").count().where(F.col("count") > 1).select("op")
        candidates = multi_run.unionByName(_read_write_ops(fr)).distinct().cache()
        count = candidates.count()
        if count == 0:
            return []
        if count > CYCLE_CANDIDATES_MAX:
            raise RuntimeError(f"cycle check: {count} candidate ops exceed {CYCLE_CANDIDATES_MAX}")
        kept = runs.join(F.broadcast(candidates), "op", "left_semi")
        ww = (_lagged(kept, TP, ["offset", "value", "op"], ["op"])
              .where(F.col("prev_op").isNotNull()).select(F.col("prev_op").alias("a"),
                                                          F.col("op").alias("b")))
        wr = (fr.reads.join(F.broadcast(candidates.withColumnRenamed("op", "op_index")),
                            "op_index", "left_semi")
              .select(F.col("op_index").alias("b"), "value").join(writers, "value")
              .where(F.col("op") != F.col("b")).select(F.col("op").alias("a"), "b"))
        edges = ww.unionByName(wr).distinct()
        rows = edges.limit(CYCLE_EDGES_MAX + 1).collect()
        if len(rows) > CYCLE_EDGES_MAX:
            raise RuntimeError(f"cycle check: more than {CYCLE_EDGES_MAX} contracted edges")
        candidates.unpersist()
        return cycles_from_edges((row.a, row.b) for row in rows)
    finally:
        runs.unpersist()


CHECKS = {
    f.__name__: f for f in (
        inconsistent_offsets, duplicate, lost_write, unseen, offset_mismatch, nonmonotonic_send,
        send_reorder, poll_skip, nonmonotonic_poll, int_poll_skip, int_nonmonotonic_poll,
        aborted_read, dirty_read, hw_regression, realtime_order, garbage_read,
        corrupt_read, response_reorder, early_empty_fetch, hung_request, cycle,
    )
}
