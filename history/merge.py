"""Merging recorded histories (the runs of a soak) into one history, judged as one.

The runs of a soak are independent: each had its own cluster, topics, clients and clock. Taken
together they make one history only if nothing of one run can be mistaken for something of
another, so each run is *placed* (Placement) before its rows are copied:

- topics: every topic of run k becomes ``r<k>/<topic>`` (k zero-padded; "/" is not a legal
  Kafka topic character, so no recorded topic looks like one). Partitions keep their numbers.
  Every per-partition check (final log, lost writes, order, high watermarks) stays inside its run.
- op indexes (index, invoke_index, records' op_index): shifted so that run k's come right after
  run k-1's, in the order given.
- processes: shifted by P_k, the same for every process of run k but the nemesis (process -1
  stays -1: fault injection carries no records, and the checks and the report find it by number).
- values: a value v is block v >> 32 and sequence v & 0xFFFFFFFF (the chaos workload writes
  value = process << 32 | sequence: its blocks are its writers' processes, chaos/workload.py).
  The sequence is kept and the block moved: a block inside run k's process range moves with its
  processes (by P_k, so the encoding stays true); a block outside it (a garbage read's stray
  value, a synthetic history's injections) gets the next free block just below or above that
  range, in order. P_k is chosen so that run k's blocks all lie above every earlier run's:
  values stay unique across the merged history (every check relies on it), and in order within
  each run.
- times: shifted so that run k's origin (its time 0) falls 1 ns after run k-1's last event: the
  runs follow one another on one time line, each keeping its own start-up gap.
- op values (free-form): an observation's ``corrupt_batch.topic`` (a check reads it) and a send
  invocation's ``value`` detail are rewritten like the records; everything else is copied as is.

The first run keeps its processes, and its values whose blocks lie in its process range (all of
a chaos run's but stray garbage). Every run must be judged under the same configuration (one
verdict judges them all; a history naming none is judged under the default) and have the
current schema version. A nemesis ``clock``
op switches the latency checks off for the whole history, so merging a run with clock faults
leaves the latency anomalies of the other runs unjudged (the merge says so).

Memory is bounded: one pass reads a few columns of every run (its extent; it also finds corrupt
files before anything is written), a second streams the rows in batches, and at most one row
group per table is buffered. The plan holds per run its distinct value blocks (a chaos run's
writers, plus one per stray value): the only state that grows with the input. The result is written beside OUT and renamed only when complete.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from kafkaref.history import integrity
from kafkaref.history.format import (
    CLOCK_FAULT_F,
    NEMESIS_PROCESS,
    SCHEMA_VERSION,
    CheckConfig,
    HistoryError,
)
from kafkaref.history.store import (
    TABLES,
    HistoryWriter,
    WriterLimits,
    iter_batches,
    read_meta,
)

VALUE_PROCESS_BITS = 32  # value = process << 32 | sequence (chaos/workload.py)
INT64_MAX = 2**63 - 1
BATCH_ROWS = 64 * 1024
DEFAULT_LIMITS = WriterLimits()

# (phase, rows done, rows in all): "measuring" reads the extents, "copying" writes the rows.
Progress = Callable[[str, int, int], None]


# --- finding the runs ----------------------------------------------------------------------


def find_histories(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The histories PATH... name, in order: each PATH is a history (it holds meta.json), a run
    (PATH/history holds one), or a directory of runs or histories (its subdirectories that are
    either, by name: run ids begin with their start time, so that is the order they ran in)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise HistoryError(f"{path}: no such file or directory")
        if not path.is_dir():
            raise HistoryError(f"{path}: not a directory (a history, a run or a directory of runs)")
        own = _history_of(path)
        if own is not None:
            found.append(own)
            continue
        children = [h for child in sorted(path.iterdir()) if child.is_dir()
                    for h in [_history_of(child)] if h is not None]
        if not children:
            raise HistoryError(f"{path}: neither a history (meta.json), a run (history/) nor a "
                               "directory holding runs or histories")
        found.extend(children)
    return found


def is_history_or_run(path: Path) -> bool:
    """A history or a run, rather than a directory of them (find_histories)."""
    return _history_of(path) is not None


def _history_of(path: Path) -> Path | None:
    """path itself if it is a history, path/history if it is a run, else None. A run whose
    history/ lacks meta.json (a crashed run), or a history lacking it, still counts: reading
    it then says what is wrong."""
    if any((path / name).exists() for name in ("meta.json", "ops", "records")):
        return path
    if (path / "history").is_dir():
        return path / "history"
    return None


# --- what each run spans, and where it goes --------------------------------------------------


@attrs.frozen
class Extent:
    """What one history spans: row counts and the ranges its placement depends on (None when
    it has no such value, e.g. no records)."""

    ops: int
    records: int
    index: tuple[int, int] | None
    time: tuple[int, int] | None
    process: tuple[int, int] | None  # the nemesis's excluded
    blocks: tuple[int, ...]  # the distinct value >> 32 of its records, sorted
    clock_faults: bool


class _Range:
    def __init__(self):
        self.low: int | None = None
        self.high: int | None = None

    def add(self, column: pa.Array | pa.ChunkedArray) -> None:
        found = pc.min_max(column)
        low, high = found["min"].as_py(), found["max"].as_py()
        if low is None:
            return
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)

    def pair(self) -> tuple[int, int] | None:
        return None if self.low is None else (self.low, self.high)


def measure(path: Path, progress: Callable[[int], None] = lambda rows: None) -> Extent:
    """One pass over the columns placement needs (reading every page: a corrupt file fails
    here, before anything is written)."""
    index, times, processes = _Range(), _Range(), _Range()
    blocks: set[int] = set()
    clock_faults = False
    counts = {}
    for table, columns in (("ops", ["index", "time", "process", "f"]),
                           ("records", ["op_index", "process", "invoke_time", "complete_time",
                                        "value"])):
        rows = 0
        for batch in iter_batches(path, table, BATCH_ROWS, columns=columns):
            rows += batch.num_rows
            progress(batch.num_rows)
            clients = batch.filter(pc.not_equal(batch["process"], NEMESIS_PROCESS))
            processes.add(clients["process"])
            if table == "ops":
                index.add(batch["index"])
                times.add(batch["time"])
                nemesis = pc.equal(batch["process"], NEMESIS_PROCESS)
                clock_faults |= pc.any(pc.and_(nemesis, pc.equal(batch["f"], CLOCK_FAULT_F))
                                       ).as_py() or False
            else:
                times.add(batch["invoke_time"])
                times.add(batch["complete_time"])
                blocks.update(pc.unique(_block(batch["value"])).drop_null().to_pylist())
        counts[table] = rows
    return Extent(counts["ops"], counts["records"], index.pair(), times.pair(), processes.pair(),
                  tuple(sorted(blocks)), clock_faults)


BLOCK = 1 << VALUE_PROCESS_BITS
BLOCK_MIN, BLOCK_MAX = -(2**31), 2**31 - 1  # blocks whose values fit int64


def _block(values):
    """value >> 32 (an arithmetic shift: rounding down, negative values too)."""
    return pc.shift_right(values, VALUE_PROCESS_BITS)


@attrs.frozen
class Placement:
    """Where one run goes in the merged history (module docstring): add these to its columns;
    a value's block moves by process_shift, unless moved_blocks names it (old -> new)."""

    label: str  # r<k>: its topics' prefix
    source: str
    index_shift: int
    time_shift: int
    process_shift: int
    moved_blocks: tuple[tuple[int, int], ...] = ()

    @property
    def value_shift(self) -> int:
        """What a value whose block lies in the run's process range moves by."""
        return self.process_shift << VALUE_PROCESS_BITS

    @property
    def prefix(self) -> str:
        return f"{self.label}/"

    def value(self, value: int) -> int:
        """One value as placed (the column form is _values)."""
        block = dict(self.moved_blocks).get(value >> VALUE_PROCESS_BITS)
        if block is None:
            return value + self.value_shift
        return (block << VALUE_PROCESS_BITS) | (value & (BLOCK - 1))

    def as_dict(self) -> dict:
        return {"label": self.label, "source": self.source, "index_shift": self.index_shift,
                "time_shift": self.time_shift, "process_shift": self.process_shift,
                "value_shift": self.value_shift,
                "moved_value_blocks": [list(pair) for pair in self.moved_blocks]}


def place(extents: Sequence[Extent], sources: Sequence[str]) -> list[Placement]:
    """Each run after the one before it (module docstring); pure arithmetic on the extents.
    Raises HistoryError when a run cannot be moved clear of the others inside int64."""
    width = max(3, len(str(len(extents) - 1)))
    placements = []
    next_index, next_time = 0, 0
    next_process, next_block = 0, None  # the lowest free process (not -1) and value block
    for k, (extent, source) in enumerate(zip(extents, sources, strict=True)):
        # Blocks below, inside and above the process range (an empty range without processes).
        low_p, high_p = extent.process or (0, -1)
        below = [b for b in extent.blocks if b < low_p]
        above = [b for b in extent.blocks if b > high_p]
        shift = max(0, next_process - low_p)
        if next_block is not None and extent.blocks:
            shift = max(shift, next_block + len(below) - low_p)
        start, end = low_p + shift - len(below), high_p + shift + 1
        moved = tuple(zip(below, range(start, start + len(below)), strict=True)) + tuple(
            zip(above, range(end, end + len(above)), strict=True))
        index_shift = next_index - extent.index[0] if extent.index else next_index
        time_shift = next_time - min(0, extent.time[0]) if extent.time else next_time
        placement = Placement(f"r{k:0{width}d}", source, index_shift, time_shift, shift, moved)
        _check_fits(placement, extent)
        placements.append(placement)
        if extent.index:
            next_index = extent.index[1] + index_shift + 1
        if extent.time:
            next_time = extent.time[1] + time_shift + 1
        if extent.process:
            next_process = max(next_process, extent.process[1] + shift + 1)
        if extent.blocks:  # every block of the run now lies below end + len(above)
            top = end + len(above)
            next_block = top if next_block is None else max(next_block, top)
    return placements


def _check_fits(placement: Placement, extent: Extent) -> None:
    blocks = [placement.value(b << VALUE_PROCESS_BITS) >> VALUE_PROCESS_BITS
              for b in (extent.blocks[0], extent.blocks[-1])] if extent.blocks else None
    for name, span, shift in (("op indexes", extent.index, placement.index_shift),
                              ("times", extent.time, placement.time_shift),
                              ("processes", extent.process, placement.process_shift)):
        if span is not None and span[1] + shift > INT64_MAX:
            raise HistoryError(
                f"{placement.source}: its {name} span {span[0]}..{span[1]}; moved clear of the "
                f"runs before it (by {shift}) they would pass int64: merge fewer runs at once")
    if blocks and not BLOCK_MIN <= blocks[0] <= blocks[1] <= BLOCK_MAX:
        raise HistoryError(f"{placement.source}: its values moved clear of the runs before it "
                           "would pass int64: merge fewer runs at once")


# --- copying the rows ------------------------------------------------------------------------


def _shifted(column: pa.ChunkedArray | pa.Array, shift: int) -> pa.Array:
    return column if shift == 0 else pc.add_checked(column, pa.scalar(shift, pa.int64()))


def _processes(column, shift: int):
    return pc.if_else(pc.equal(column, NEMESIS_PROCESS), column, _shifted(column, shift))


def _rebuilt(table: pa.Table, name: str, placed: dict) -> pa.Table:
    """The table with its placed columns swapped in, in the history format's column order."""
    return pa.table([placed.get(f.name, table[f.name]) for f in TABLES[name]],
                    schema=TABLES[name])


def place_ops(batch: pa.RecordBatch, at: Placement) -> pa.Table:
    table = pa.Table.from_batches([batch])
    columns = {
        "index": _shifted(table["index"], at.index_shift),
        "time": _shifted(table["time"], at.time_shift),
        "process": _processes(table["process"], at.process_shift),
        "invoke_index": _shifted(table["invoke_index"], at.index_shift),
        "value": _op_values(table, at),
    }
    return _rebuilt(table, "ops", columns)


def place_records(batch: pa.RecordBatch, at: Placement) -> pa.Table:
    table = pa.Table.from_batches([batch])
    columns = {
        "op_index": _shifted(table["op_index"], at.index_shift),
        "process": _processes(table["process"], at.process_shift),
        "invoke_time": _shifted(table["invoke_time"], at.time_shift),
        "complete_time": _shifted(table["complete_time"], at.time_shift),
        "topic": pc.binary_join_element_wise(at.prefix, table["topic"], ""),
        "value": _values(table["value"], at),
    }
    return _rebuilt(table, "records", columns)


def _values(column, at: Placement):
    """Placement.value over a column: blocks in the process range shifted, moved ones mapped."""
    shifted = _shifted(column, at.value_shift)
    if not at.moved_blocks:
        return shifted
    old = pa.array([pair[0] for pair in at.moved_blocks], pa.int64())
    new = pa.array([pair[1] for pair in at.moved_blocks], pa.int64())
    found = pc.index_in(_block(column), value_set=old)
    sequence = pc.bit_wise_and(column, pa.scalar(BLOCK - 1, pa.int64()))
    moved = pc.add_checked(pc.multiply_checked(pc.take(new, found),
                                               pa.scalar(BLOCK, pa.int64())), sequence)
    return pc.if_else(pc.is_null(found), shifted, moved)


def _op_values(table: pa.Table, at: Placement) -> pa.ChunkedArray:
    """The op values that name a topic a check reads or a value the records hold, rewritten
    (the few such rows in Python; the rest untouched)."""
    values = table["value"]
    corrupt = pc.fill_null(pc.match_substring(values, "corrupt_batch"), False)
    sends = pc.and_(pc.equal(table["f"], "send"), pc.equal(table["type"], "invoke"))
    wanted = pc.and_(pc.or_(corrupt, sends), pc.fill_null(pc.starts_with(values, "{"), False))
    if not pc.any(wanted).as_py():
        return values
    rows = values.to_pylist()
    for i in pc.indices_nonzero(wanted).to_pylist():
        rows[i] = rewrite_op_value(rows[i], at)
    return pa.chunked_array([pa.array(rows, pa.string())])


def rewrite_op_value(value: str, at: Placement) -> str:
    """An op value as placed: corrupt_batch.topic prefixed, an integer "value" shifted; a value
    that is no JSON object, or holds neither, is returned as it was."""
    try:
        found = json.loads(value)
    except ValueError:
        return value
    if not isinstance(found, dict):
        return value
    changed = False
    where = found.get("corrupt_batch")
    if isinstance(where, dict) and isinstance(where.get("topic"), str):
        where["topic"] = at.prefix + where["topic"]
        changed = True
    sent = found.get("value")
    if isinstance(sent, int) and not isinstance(sent, bool):
        found["value"] = at.value(sent)
        changed = True
    return json.dumps(found) if changed else value


class _Buffered:
    """Tables appended until a row group's worth, then written as one (small runs would
    otherwise make one tiny row group each)."""

    def __init__(self, write: Callable[[pa.Table], None], rows: int):
        self._write, self._rows = write, rows
        self._tables: list[pa.Table] = []
        self._buffered = 0

    def add(self, table: pa.Table) -> None:
        self._tables.append(table)
        self._buffered += table.num_rows
        if self._buffered >= self._rows:
            self.flush()

    def flush(self) -> None:
        if self._tables:
            self._write(pa.concat_tables(self._tables))
            self._tables, self._buffered = [], 0


# --- the merge -------------------------------------------------------------------------------


@attrs.frozen
class MergeSummary:
    out: str
    runs: int
    ops: int
    records: int
    span_ns: int  # first to last event of the merged history
    seconds: float
    clock_fault_runs: int
    placements: tuple[Placement, ...]

    def as_dict(self) -> dict:
        return {"out": self.out, "runs": self.runs, "ops": self.ops, "records": self.records,
                "minutes": round(self.span_ns / 60e9, 2), "seconds": round(self.seconds, 2),
                "records_per_s": round(self.records / self.seconds) if self.seconds else None,
                "clock_fault_runs": self.clock_fault_runs}


def common_config(histories: Sequence[Path]) -> tuple[CheckConfig | None, list[dict]]:
    """The one configuration every history is judged under, and their metas. A history that
    names none is judged under the default (as `kafkaref check` judges it); runs judged under
    different ones cannot share one verdict."""
    metas = [read_meta(path) for path in histories]
    named = [None if m.get("config") is None else CheckConfig.from_dict(m["config"])
             for m in metas]
    judged = [config or CheckConfig() for config in named]
    for path, config in zip(histories, judged, strict=True):
        if config != judged[0]:
            raise HistoryError(
                f"{path} is judged under {json.dumps(config.as_dict())} but {histories[0]} "
                f"under {json.dumps(judged[0].as_dict())}: a merged history is judged under one "
                "configuration, so merge such runs separately")
    return next((config for config in named if config is not None), None), metas


def merge(sources: Sequence[str | os.PathLike], out: str | os.PathLike, *,
          progress: Progress | None = None, limits: WriterLimits = DEFAULT_LIMITS
          ) -> MergeSummary:
    """Merge the histories sources name (find_histories) into a new history at out."""
    started = time.monotonic()
    histories = find_histories(sources)
    target = Path(out)
    _check_free(target, [*map(Path, sources), *histories])
    plan = make_plan(histories, progress)
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _copy_all(staging, plan, limits, progress)
        if target.is_dir():
            target.rmdir()  # empty (checked): rename cannot replace a non-empty directory
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return plan.summary(str(target), time.monotonic() - started)


@attrs.frozen
class Plan:
    """The runs to merge, what each spans and where each goes, and their one configuration."""

    histories: tuple[Path, ...]
    extents: tuple[Extent, ...]
    placements: tuple[Placement, ...]
    config: CheckConfig | None
    meta: dict  # the merged history's meta.json, but for the writer's own keys

    def summary(self, out: str, seconds: float) -> MergeSummary:
        times = [(e.time[0] + p.time_shift, e.time[1] + p.time_shift)
                 for e, p in zip(self.extents, self.placements, strict=True) if e.time]
        span = max(t[1] for t in times) - min(t[0] for t in times) if times else 0
        return MergeSummary(out, len(self.histories), sum(e.ops for e in self.extents),
                            sum(e.records for e in self.extents), span, seconds,
                            sum(e.clock_faults for e in self.extents), self.placements)


def make_plan(histories: Sequence[Path], progress: Progress | None = None) -> Plan:
    """Verify every history's files against its manifest (a corrupt run stops the merge: its
    copy would get a manifest of its own and pass for sound), read its meta and extent (one
    pass over a few columns) and place them. Runs without a manifest make the merged history
    unverified too (meta.json "unverified" says which)."""
    checked = [integrity.verify(path) for path in histories]
    config, metas = common_config(histories)
    extents = _measure_all(histories, progress)
    placements = place(extents, [str(h) for h in histories])
    meta = {"schema_version": SCHEMA_VERSION,
            **({} if config is None else {"config": config.as_dict()}),
            "merged_from": [{**p.as_dict(), **({"seed": m["seed"]} if "seed" in m else {})}
                            for p, m in zip(placements, metas, strict=True)]}
    unverified = [p.label for p, found in zip(placements, checked, strict=True)
                  if not found.verified]
    if unverified:
        meta[integrity.UNVERIFIED_KEY] = (f"merged from {len(unverified)} unverified run(s) "
                                          f"({', '.join(unverified[:5])}"
                                          f"{', ...' if len(unverified) > 5 else ''})")
    return Plan(tuple(histories), tuple(extents), tuple(placements), config, meta)


def _check_free(target: Path, inputs: Sequence[Path]) -> None:
    """OUT must be new (or empty), and outside every input: inside a directory of runs it
    would be taken for one more run by the next merge of that directory."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise HistoryError(f"{target} exists and is not an empty directory")
    resolved = target.resolve()
    for given in inputs:
        if resolved == given.resolve() or given.resolve() in resolved.parents:
            raise HistoryError(f"{target} lies inside the input {given}")


def _measure_all(histories: Sequence[Path], progress: Progress | None) -> list[Extent]:
    total = sum(_rows(h) for h in histories)
    done = 0

    def step(rows):
        nonlocal done
        done += rows
        if progress:
            progress("measuring", done, total)

    return [measure(h, step) for h in histories]


def _rows(path: Path) -> int:
    """Rows of both tables, from the Parquet footers (for progress only)."""
    import pyarrow.parquet as pq

    from kafkaref.history.store import table_files

    try:
        return sum(pq.ParquetFile(f).metadata.num_rows
                   for t in TABLES for f in table_files(path, t))
    except (HistoryError, pa.ArrowInvalid, OSError):
        return 0  # measure() reports what is wrong


def _copy_all(staging: Path, plan: Plan, limits: WriterLimits, progress: Progress | None
              ) -> None:
    histories, placements = plan.histories, plan.placements
    total = sum(e.ops + e.records for e in plan.extents)
    done = 0
    meta = {k: v for k, v in plan.meta.items() if k not in ("schema_version", "config")}
    with HistoryWriter(staging, config=plan.config, meta=meta, limits=limits) as writer:
        for table, place_rows, append in (("ops", place_ops, writer.ops_table),
                                          ("records", place_records, writer.records_table)):
            buffered = _Buffered(append, limits.row_group_rows)
            for history, placement in zip(histories, placements, strict=True):
                for batch in iter_batches(history, table, BATCH_ROWS):
                    buffered.add(place_rows(batch, placement))
                    done += batch.num_rows
                    if progress:
                        progress("copying", done, total)
            buffered.flush()
