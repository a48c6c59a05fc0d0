"""The history format: what clients observed, as two Parquet tables. The single source of truth.

chaos/ writes histories with HistoryWriter; spark_checks/ reads them (Spark reads the same Parquet
files directly). See shared design HISTORIES.md for the model (Jepsen's queue workload).

A history is a directory:

    meta.json            {"schema_version": 1, "config": {...}, ...}
    ops/part-NNNNN.parquet      one row per invocation or completion (OPS_SCHEMA)
    records/part-NNNNN.parquet  one row per record inside an op (RECORDS_SCHEMA)

records is denormalised on purpose: each row repeats its op's process, completion type and the
invoke and completion times, so every check is a scan, group-by or window over one table and never
a join of hundreds of millions of records against the ops.

Values are int64 and unique across the whole run (a writer encodes its process and sequence in
them); checks rely on it. Record kinds:

    send        a record a send op wrote; offset is the acknowledged offset (null unless type ok)
    poll        a record a poll returned (type ok), at offset with value, in the order returned
    final_read  a record returned by the final phase, which reads every partition from the start
                after healing; these define "the final log"
    hw          a high watermark observed in a fetch response: offset holds the hw, value is null

How the final phase marks a partition as read (covered): an ok final_read op holds, for every
partition it read, an hw record whose offset is the end offset it read up to (the high watermark
its last fetch of that partition answered, exclusive), besides the final_read records of what it
returned. A partition the final phase read and found empty is therefore an hw record and no
final_read records; a partition absent from every ok final_read op was not read, and records
polled from it cannot be judged (not dirty, not lost: unknown). Older histories without these hw
records count a partition as read only when a final_read record came from it. The final log of
a covered partition ends at max(its highest final_read offset + 1, the highest such hw).

Offsets need not be dense (transaction markers, aborted batches and compaction take offsets), so
the checks judge order and gaps on the log's values: a poll skipped something only if some value
is known (from an ok send or any read) at an offset strictly between two successive ones it read.

The anomaly catalogue (names, what each means, what each configuration allows) is defined here
too, once, and imported by both checkers.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA_VERSION = 1

OP_TYPES = ("invoke", "ok", "fail", "info")
RECORD_KINDS = ("send", "poll", "final_read", "hw")
NEMESIS_PROCESS = -1
# Ops of a process after which its poll positions legitimately restart (see poll checks).
POSITION_RESET_FS = ("assign", "subscribe", "seek")

OPS_SCHEMA = pa.schema(
    [
        pa.field("index", pa.int64(), nullable=False),  # position in the history, unique
        pa.field("time", pa.int64(), nullable=False),  # ns since the run started, one clock
        pa.field("process", pa.int64(), nullable=False),  # NEMESIS_PROCESS for fault injection
        pa.field("type", pa.string(), nullable=False),  # OP_TYPES
        pa.field("f", pa.string(), nullable=False),  # send, poll, final_read, assign, kill, ...
        pa.field("invoke_index", pa.int64()),  # for a completion: index of its invocation
        pa.field("error", pa.string()),  # error name for fail/info completions
        pa.field("value", pa.string()),  # free-form detail (nemesis target, assignment, JSON)
    ],
    metadata={"kafkaref.history.table": "ops", "kafkaref.history.version": str(SCHEMA_VERSION)},
)

RECORDS_SCHEMA = pa.schema(
    [
        pa.field("op_index", pa.int64(), nullable=False),  # the completion op holding it
        pa.field("position", pa.int32(), nullable=False),  # order inside the op
        pa.field("kind", pa.string(), nullable=False),  # RECORD_KINDS
        pa.field("process", pa.int64(), nullable=False),
        pa.field("type", pa.string(), nullable=False),  # the completion's type
        pa.field("invoke_time", pa.int64(), nullable=False),
        pa.field("complete_time", pa.int64(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64()),  # null for a send not acknowledged
        pa.field("value", pa.int64()),  # null only for kind hw
    ],
    metadata={"kafkaref.history.table": "records", "kafkaref.history.version": str(SCHEMA_VERSION)},
)

TABLES = {"ops": OPS_SCHEMA, "records": RECORDS_SCHEMA}


# Kafka spells acks=all as -1 on the wire and in client configs: both mean the same.
_ACKS_SPELLINGS = {"-1": "all"}


class HistoryError(ValueError):
    """A history that does not follow this schema (wrong version, bad rows, corrupt files)."""


# --- the anomaly catalogue -----------------------------------------------------------------


@attrs.frozen
class CheckConfig:
    """The client/broker configuration a history was recorded under; it decides what is allowed."""

    acks: str = attrs.field(default="all", converter=lambda v: _ACKS_SPELLINGS.get(str(v), str(v)),
                            validator=attrs.validators.in_(("0", "1", "all")))
    idempotence: bool = True
    unclean_election: bool = False
    mode: str = attrs.field(default="assign", validator=attrs.validators.in_(("assign", "subscribe")))

    @classmethod
    def from_dict(cls, raw: dict) -> CheckConfig:
        unknown = set(raw) - {a.name for a in attrs.fields(cls)}
        if unknown:
            raise HistoryError(f"unknown config keys: {sorted(unknown)}")
        try:
            return cls(**raw)
        except (TypeError, ValueError) as error:
            raise HistoryError(f"bad config {raw!r}: {error}") from None

    def as_dict(self) -> dict:
        return attrs.asdict(self)


# name -> (what it means, the fields of one case in canonical order).
ANOMALIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "inconsistent_offsets": (
        "one (topic, partition, offset) observed with two different values",
        ("topic", "partition", "offset", "values"),
    ),
    "duplicate": (
        "one value observed at two (topic, partition, offset) positions",
        ("value", "positions"),
    ),
    "lost_write": (
        "an acknowledged send (ok, or info proven by a read) absent from the final log of its "
        "partition although the final log extends past its offset",
        ("topic", "partition", "offset", "value"),
    ),
    "unseen": (
        "an ok send whose value no read (poll or final read) ever returned",
        ("topic", "partition", "offset", "value"),
    ),
    "offset_mismatch": (
        "a send acknowledged at an offset where a read returned another value",
        ("topic", "partition", "offset", "value", "observed_value"),
    ),
    "nonmonotonic_send": (
        "a process's successive ok sends to one partition got non-increasing offsets",
        ("process", "topic", "partition", "prev_value", "prev_offset", "value", "offset"),
    ),
    "send_reorder": (
        "a process's successive sends to one partition appear in the final log out of order",
        ("process", "topic", "partition", "prev_value", "prev_offset", "value", "offset"),
    ),
    "poll_skip": (
        "a process's successive polls of one partition skip a value of the log (a record known at "
        "an offset between; no assign/seek between)",
        ("process", "topic", "partition", "prev_op", "prev_offset", "op", "offset"),
    ),
    "nonmonotonic_poll": (
        "a process's successive polls of one partition go back or repeat an offset",
        ("process", "topic", "partition", "prev_op", "prev_offset", "op", "offset"),
    ),
    "int_poll_skip": (
        "inside one poll, successive records of a partition skip a value of the log",
        ("process", "topic", "partition", "prev_op", "prev_offset", "op", "offset"),
    ),
    "int_nonmonotonic_poll": (
        "inside one poll, successive records of a partition go back or repeat an offset",
        ("process", "topic", "partition", "prev_op", "prev_offset", "op", "offset"),
    ),
    "aborted_read": (
        "a read returned a value whose send failed (type fail)",
        ("topic", "partition", "offset", "value"),
    ),
    "dirty_read": (
        "a poll returned a record that the final log does not hold at that offset, in a "
        "partition the final phase read (also one it found empty or shorter)",
        ("topic", "partition", "offset", "value"),
    ),
    "hw_regression": (
        "a process observed a partition's high watermark go backwards",
        ("process", "topic", "partition", "prev_op", "prev_hw", "op", "hw"),
    ),
    "realtime_order": (
        "a send invoked after another ok send to the partition completed got a lower offset; "
        "the witness is the highest offset acknowledged before it was invoked",
        ("topic", "partition", "value", "offset", "prior_value", "prior_offset"),
    ),
    "cycle": (
        "a cycle of write-write (log order) and write-read edges between ops (G0 / G1c), "
        "found after contracting ops that write one contiguous run of one partition (they "
        "cannot start a cycle); the case is a shortest cycle through the lowest op of each "
        "strongly connected component. Realtime edges are covered by realtime_order",
        ("ops",),
    ),
}

_LOSSY = (
    "lost_write",
    "unseen",
    "offset_mismatch",
    "inconsistent_offsets",
    "dirty_read",
    "hw_regression",
    "nonmonotonic_send",
    "realtime_order",
)


def allowed_anomalies(config: CheckConfig) -> frozenset[str]:
    """What the configuration permits, so the verdict can tell expected loss from a defect.

    acks=0/1 or unclean election: acknowledged records can be truncated away, so loss and
    everything loss causes (offsets reused by other values, reads of truncated records, hw and
    offsets moving back) is expected. Without idempotence, retries duplicate and reorder records.
    In subscribe mode rebalances move positions between polls invisibly to the history.
    """
    allowed: set[str] = set()
    if config.acks != "all" or config.unclean_election:
        allowed.update(_LOSSY)
    if not config.idempotence:
        allowed.update(("duplicate", "send_reorder"))
    if config.mode == "subscribe":
        allowed.update(("poll_skip", "nonmonotonic_poll"))
    return frozenset(allowed)


# --- writing -------------------------------------------------------------------------------


@attrs.frozen
class WriterLimits:
    """Bounds on what the writer buffers: memory is O(row_group_rows) whatever the history size."""

    row_group_rows: int = 256 * 1024
    file_rows: int = 8 * 1024 * 1024
    compression: str = "zstd"


class _TableWriter:
    """Appends rows of one table in row groups, rolling to a new part file every file_rows."""

    def __init__(self, directory: Path, schema: pa.Schema, limits: WriterLimits):
        self._directory = directory
        self._schema = schema
        self._limits = limits
        self._columns: dict[str, list] = {name: [] for name in schema.names}
        self._buffered = 0
        self._writer: pq.ParquetWriter | None = None
        self._file_rows = 0
        self._part = 0
        self.rows = 0
        directory.mkdir(parents=True, exist_ok=True)

    def append(self, row: tuple) -> None:
        for column, cell in zip(self._columns.values(), row, strict=True):
            column.append(cell)
        self._buffered += 1
        if self._buffered >= self._limits.row_group_rows:
            self._flush_rows()

    def append_table(self, table: pa.Table) -> None:
        """Append a whole Arrow table (the vectorised path the synthetic generator uses)."""
        self._flush_rows()
        self._write(_conform(table, self._schema))

    def _flush_rows(self) -> None:
        if not self._buffered:
            return
        table = pa.table(
            [pa.array(self._columns[f.name], f.type) for f in self._schema], schema=self._schema
        )
        self._columns = {name: [] for name in self._schema.names}
        self._buffered = 0
        self._write(table)

    def _write(self, table: pa.Table) -> None:
        start = 0
        while start < table.num_rows:
            if self._writer is None:
                path = self._directory / f"part-{self._part:05d}.parquet"
                self._writer = pq.ParquetWriter(
                    path, self._schema, compression=self._limits.compression
                )
            room = self._limits.file_rows - self._file_rows
            chunk = table.slice(start, room)
            self._writer.write_table(chunk, row_group_size=self._limits.row_group_rows)
            start += chunk.num_rows
            self._file_rows += chunk.num_rows
            self.rows += chunk.num_rows
            if self._file_rows >= self._limits.file_rows:
                self._roll()

    def _roll(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._part += 1
            self._file_rows = 0

    def close(self) -> None:
        self._flush_rows()
        if self._writer is None and self._part == 0:
            # An empty table still gets one (empty) file so readers see its schema.
            pq.write_table(self._schema.empty_table(), self._directory / "part-00000.parquet")
        self._roll()


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    if table.schema.names != schema.names:
        raise HistoryError(f"columns {table.schema.names} differ from {schema.names}")
    return pa.table([table.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema)


class HistoryWriter:
    """Streams a history to a directory of Parquet files with bounded memory.

    Use as a context manager. op() and record() take one row each (rows are validated: a wrong
    type or kind raises HistoryError at once rather than producing a history nobody can check);
    ops_table() and records_table() append whole Arrow tables.
    """

    def __init__(self, path: str | os.PathLike, *, config: CheckConfig | None = None,
                 meta: dict | None = None, limits: WriterLimits = WriterLimits()):
        self.path = Path(path)
        if (self.path / "meta.json").exists():
            raise HistoryError(f"{self.path} already holds a history")
        self.path.mkdir(parents=True, exist_ok=True)
        self._meta = {"schema_version": SCHEMA_VERSION, **(meta or {})}
        if config is not None:
            self._meta["config"] = config.as_dict()
        self.ops = _TableWriter(self.path / "ops", OPS_SCHEMA, limits)
        self.records = _TableWriter(self.path / "records", RECORDS_SCHEMA, limits)

    def op(self, index: int, time: int, process: int, type: str, f: str, *,
           invoke_index: int | None = None, error: str | None = None,
           value: str | None = None) -> None:
        if type not in OP_TYPES:
            raise HistoryError(f"op {index}: type {type!r} is not one of {OP_TYPES}")
        if type != "invoke" and invoke_index is None:
            raise HistoryError(f"op {index}: a completion needs invoke_index")
        self.ops.append((index, time, process, type, f, invoke_index, error, value))

    def record(self, op_index: int, position: int, kind: str, process: int, type: str,
               invoke_time: int, complete_time: int, topic: str, partition: int,
               offset: int | None, value: int | None) -> None:
        if kind not in RECORD_KINDS:
            raise HistoryError(f"op {op_index}: record kind {kind!r} not in {RECORD_KINDS}")
        if (value is None) != (kind == "hw"):
            raise HistoryError(f"op {op_index}: value must be null exactly for kind hw")
        self.records.append((op_index, position, kind, process, type, invoke_time,
                             complete_time, topic, partition, offset, value))

    def ops_table(self, table: pa.Table) -> None:
        self.ops.append_table(table)

    def records_table(self, table: pa.Table) -> None:
        self.records.append_table(table)

    def close(self) -> None:
        self.ops.close()
        self.records.close()
        self._meta["ops"] = self.ops.rows
        self._meta["records"] = self.records.rows
        (self.path / "meta.json").write_text(json.dumps(self._meta, indent=2) + "\n")

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- reading -------------------------------------------------------------------------------


def read_meta(path: str | os.PathLike) -> dict:
    """The history's meta.json, checked for a schema version this code understands."""
    meta_path = Path(path) / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise HistoryError(f"{path} is not a history (no meta.json)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise HistoryError(f"{meta_path} is corrupt: {error}") from None
    if not isinstance(meta, dict) or meta.get("schema_version") != SCHEMA_VERSION:
        version = meta.get("schema_version") if isinstance(meta, dict) else None
        raise HistoryError(f"{path}: schema version {version!r}, expected {SCHEMA_VERSION}")
    return meta


def history_config(path: str | os.PathLike) -> CheckConfig | None:
    raw = read_meta(path).get("config")
    return None if raw is None else CheckConfig.from_dict(raw)


def table_files(path: str | os.PathLike, table: str) -> list[Path]:
    files = sorted((Path(path) / table).glob("part-*.parquet"))
    if not files:
        raise HistoryError(f"{path}: table {table} has no part files")
    return files


def iter_batches(path: str | os.PathLike, table: str, batch_rows: int = 64 * 1024,
                 columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Stream a table in batches (bounded memory), checking each file's schema first."""
    read_meta(path)
    for file in table_files(path, table):
        try:
            parquet = pq.ParquetFile(file)
        except (pa.ArrowInvalid, OSError) as error:
            raise HistoryError(f"{file} is corrupt: {error}") from None
        if not parquet.schema_arrow.remove_metadata().equals(TABLES[table].remove_metadata()):
            raise HistoryError(f"{file}: schema differs from {table} v{SCHEMA_VERSION}")
        try:
            yield from parquet.iter_batches(batch_size=batch_rows, columns=columns)
        except (pa.ArrowInvalid, OSError) as error:
            raise HistoryError(f"{file} is corrupt: {error}") from None


def read_table(path: str | os.PathLike, table: str) -> pa.Table:
    """A whole table in memory: for small histories (tests, the naive twin, JSON export)."""
    batches = list(iter_batches(path, table))
    return pa.Table.from_batches(batches, schema=TABLES[table])


# --- JSON lines ----------------------------------------------------------------------------
# One JSON object per op, in index order. Records sit on their completion op as
# {"kind", "topic", "partition", "offset", "value"} in position order; on import their process,
# type and times are taken from the op and its invocation, so hand-written histories stay short.


def export_jsonl(path: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write the history at path as JSON lines to out; returns the number of ops written."""
    ops = read_table(path, "ops").sort_by("index").to_pylist()
    records: dict[int, list[dict]] = {}
    for row in read_table(path, "records").sort_by([("op_index", "ascending"),
                                                     ("position", "ascending")]).to_pylist():
        records.setdefault(row["op_index"], []).append(
            {k: row[k] for k in ("kind", "topic", "partition", "offset", "value")})
    with open(out, "w") as handle:
        header = {"kafkaref_history": SCHEMA_VERSION, **_meta_without_counts(read_meta(path))}
        handle.write(json.dumps(header) + "\n")
        for op in ops:
            line = {k: v for k, v in op.items() if v is not None}
            if op["index"] in records:
                line["records"] = records[op["index"]]
            handle.write(json.dumps(line) + "\n")
    return len(ops)


def _meta_without_counts(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k not in ("schema_version", "ops", "records")}


def import_jsonl(source: str | os.PathLike, path: str | os.PathLike) -> int:
    """Read JSON lines (as export_jsonl writes, header line optional) into a history at path.
    All or nothing (see write_ops); errors name the line."""
    try:
        with open(source, encoding="utf-8") as handle:
            return write_ops(path, _parse_lines(enumerate(handle, 1)))
    except UnicodeDecodeError as error:
        raise HistoryError(f"{source}: not UTF-8 text: {error}") from None
    except OSError as error:
        raise HistoryError(f"{source}: {error.strerror or error}") from None


def _parse_lines(lines: Iterable[tuple[int, str]]) -> Iterable[dict]:
    for number, line in lines:
        if not line.strip():
            continue
        try:
            op = json.loads(line)
        except json.JSONDecodeError as error:
            raise HistoryError(f"line {number}: not JSON: {error}") from None
        if not isinstance(op, dict):
            raise HistoryError(f"line {number}: expected an object")
        op["_line"] = number
        yield op


def write_ops(path: str | os.PathLike, ops: Iterable[dict]) -> int:
    """Write op dicts (JSON-lines form; a leading {"kafkaref_history": v, ...} is the header).

    All or nothing: the history is written to a sibling directory and renamed to path only once
    every op was accepted, so an import that fails part-way leaves nothing behind (a partial
    history would check as valid) and can simply be run again."""
    target = Path(path)
    _check_free(target)
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        count = _write_ops_to(staging, ops)
        if target.is_dir():
            target.rmdir()  # empty (checked above); rename cannot replace a non-empty one
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return count


def _check_free(target: Path) -> None:
    if (target / "meta.json").exists():
        raise HistoryError(f"{target} already holds a history")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise HistoryError(f"{target} exists and is not an empty directory")


def _write_ops_to(path: Path, ops: Iterable[dict]) -> int:
    ops = iter(ops)
    first = next(ops, None)
    meta: dict = {}
    if first is not None and "kafkaref_history" in first:
        if first["kafkaref_history"] != SCHEMA_VERSION:
            raise HistoryError(f"JSON history version {first['kafkaref_history']!r}, "
                               f"expected {SCHEMA_VERSION}")
        meta = {k: v for k, v in first.items() if k not in ("kafkaref_history", "_line")}
        first = None
    config = CheckConfig.from_dict(meta.pop("config")) if "config" in meta else None
    seen = _SeenOps()
    count = 0
    with HistoryWriter(path, config=config, meta=meta) as writer:
        for op in itertools.chain([first] if first is not None else [], ops):
            _write_json_op(writer, op, seen)
            count += 1
    return count


class _SeenOps:
    """What import checks across lines: op indexes are unique, and each completion names an
    earlier invocation and is not timed before it."""

    def __init__(self):
        self.indexes: dict[int, object] = {}
        self.invoke_times: dict[int, int] = {}

    def add(self, where: str, index: int, time: int, type_: str, invoke_index) -> int:
        """The invocation's time (the op's own for an invocation)."""
        if index in self.indexes:
            raise HistoryError(f"{where}: op index {index} already used at {self.indexes[index]}")
        self.indexes[index] = where
        if type_ == "invoke":
            self.invoke_times[index] = time
            return time
        if invoke_index is None or invoke_index not in self.invoke_times:
            raise HistoryError(f"{where}: completion without a known invoke_index")
        invoke_time = self.invoke_times[invoke_index]
        if time < invoke_time:
            raise HistoryError(f"{where}: completion at time {time} before its invocation "
                               f"(op {invoke_index} at time {invoke_time})")
        return invoke_time


def _write_json_op(writer: HistoryWriter, op: dict, seen: _SeenOps) -> None:
    where = f"line {op.get('_line', '?')}"
    try:
        index, time, process = int(op["index"]), int(op["time"]), int(op["process"])
        type_, f = str(op["type"]), str(op["f"])
        invoke_index = _optional_int(op.get("invoke_index"))
    except (KeyError, TypeError, ValueError) as error:
        raise HistoryError(f"{where}: op needs index, time, process, type, f ({error})") from None
    invoke_time = seen.add(where, index, time, type_, invoke_index)
    try:
        writer.op(index, time, process, type_, f, invoke_index=invoke_index,
                  error=op.get("error"), value=op.get("value"))
    except HistoryError as error:
        raise HistoryError(f"{where}: {error}") from None
    records = op.get("records", ())
    if not isinstance(records, list | tuple):
        raise HistoryError(f"{where}: records must be a list")
    for position, record in enumerate(records):
        try:
            writer.record(index, position, record.get("kind", f), process, type_, invoke_time,
                          time, str(record["topic"]), int(record["partition"]),
                          _optional_int(record.get("offset")), _optional_int(record.get("value")))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise HistoryError(f"{where}: bad record {record!r}: {error}") from None


def _optional_int(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"expected an integer, got {value!r}")
    return int(value)
