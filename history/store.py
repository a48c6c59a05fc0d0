"""Histories on disk: the Parquet writer and reader, and the JSON-lines import and export, of
the format history/format.py defines (schema as columns, validation, anomaly catalogue).

The chaos runner writes histories with HistoryWriter; spark_checks/ reads them (the Spark job
reads the same Parquet files directly; its naive twin and the tests use read_table here).
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

from kafkaref.history import integrity
from kafkaref.history.format import (
    OPS_COLUMNS,
    RECORDS_COLUMNS,
    SCHEMA_VERSION,
    CheckConfig,
    Column,
    HistoryError,
    check_meta,
    check_op,
    check_record,
)


def arrow_schema(table: str, columns: tuple[Column, ...]) -> pa.Schema:
    """The Parquet (Arrow) schema of a history table, from its columns in history/format.py."""
    return pa.schema(
        [pa.field(c.name, getattr(pa, c.type)(), nullable=c.nullable) for c in columns],
        metadata={"kafkaref.history.table": table,
                  "kafkaref.history.version": str(SCHEMA_VERSION),
                  integrity.SEALED_KEY: "1"},
    )


OPS_SCHEMA = arrow_schema("ops", OPS_COLUMNS)
RECORDS_SCHEMA = arrow_schema("records", RECORDS_COLUMNS)
TABLES = {"ops": OPS_SCHEMA, "records": RECORDS_SCHEMA}


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
                    path, self._schema, compression=self._limits.compression,
                    write_page_checksum=True,
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
            pq.write_table(self._schema.empty_table(), self._directory / "part-00000.parquet",
                           write_page_checksum=True)
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
        check_op(index, type, invoke_index)
        self.ops.append((index, time, process, type, f, invoke_index, error, value))

    def record(self, op_index: int, position: int, kind: str, process: int, type: str,
               invoke_time: int, complete_time: int, topic: str, partition: int,
               offset: int | None, value: int | None) -> None:
        check_record(op_index, kind, value)
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
        integrity.seal(self.path, self._meta)

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
    return check_meta(meta, path)


def history_config(path: str | os.PathLike) -> CheckConfig | None:
    raw = read_meta(path).get("config")
    return None if raw is None else CheckConfig.from_dict(raw)


def table_files(path: str | os.PathLike, table: str) -> list[Path]:
    files = sorted((Path(path) / table).glob("part-*.parquet"))
    if not files:
        raise HistoryError(f"{path}: table {table} has no part files")
    return files


def verified_meta(path: str | os.PathLike) -> tuple[dict, integrity.Integrity]:
    """meta.json once the history's files were checked against its manifest (CorruptHistory
    naming the file and what is wrong otherwise), and what that check established."""
    found = integrity.verify(path)
    return read_meta(path), found


def iter_batches(path: str | os.PathLike, table: str, batch_rows: int = 64 * 1024,
                 columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Stream a table in batches (bounded memory), checking each file's schema first and every
    page's checksum as it is read (files written before page checksums have none)."""
    read_meta(path)
    for file in table_files(path, table):
        try:
            parquet = pq.ParquetFile(file, page_checksum_verification=True)
        except (pa.ArrowInvalid, OSError) as error:
            raise integrity.CorruptHistory(file, f"not a readable Parquet file ({error})") \
                from None
        if not parquet.schema_arrow.remove_metadata().equals(TABLES[table].remove_metadata()):
            raise integrity.CorruptHistory(file, f"its schema differs from {table} "
                                                 f"v{SCHEMA_VERSION}")
        try:
            yield from parquet.iter_batches(batch_size=batch_rows, columns=columns)
        except (pa.ArrowInvalid, OSError) as error:
            raise integrity.CorruptHistory(file, str(error)) from None


def read_table(path: str | os.PathLike, table: str) -> pa.Table:
    """A whole table in memory: for small histories (tests, the naive twin, JSON export)."""
    batches = list(iter_batches(path, table))
    return pa.Table.from_batches(batches, schema=TABLES[table])


# --- JSON lines ----------------------------------------------------------------------------
# One JSON object per op, in index order. Records sit on their completion op as
# {"kind", "topic", "partition", "offset", "value"} in position order; on import their process,
# type and times are taken from the op and its invocation, so hand-written histories stay short.


def export_jsonl(path: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write the history at path as JSON lines to out; returns the number of ops written. A
    corrupt history is refused (CorruptHistory); an unverified one says so in the header, so
    an import of the lines does not pass it off as verified."""
    meta, found = verified_meta(path)
    ops = read_table(path, "ops").sort_by("index").to_pylist()
    records: dict[int, list[dict]] = {}
    for row in read_table(path, "records").sort_by([("op_index", "ascending"),
                                                     ("position", "ascending")]).to_pylist():
        records.setdefault(row["op_index"], []).append(
            {k: row[k] for k in ("kind", "topic", "partition", "offset", "value")})
    with open(out, "w") as handle:
        header = {"kafkaref_history": SCHEMA_VERSION, **_meta_without_counts(meta)}
        if not found.verified:
            header[integrity.UNVERIFIED_KEY] = meta.get(integrity.UNVERIFIED_KEY) or \
                "exported from a history without a manifest"
        handle.write(json.dumps(header) + "\n")
        for op in ops:
            line = {k: v for k, v in op.items() if v is not None}
            if op["index"] in records:
                line["records"] = records[op["index"]]
            handle.write(json.dumps(line) + "\n")
    return len(ops)


def _meta_without_counts(meta: dict) -> dict:
    return {k: v for k, v in meta.items()
            if k not in ("schema_version", "ops", "records", integrity.MANIFEST)}


def import_jsonl(source: str | os.PathLike, path: str | os.PathLike) -> int:
    """Read JSON lines (as export_jsonl writes, header line optional) into a history at path.
    All or nothing (see write_ops); errors name the line."""
    try:
        with open(source, encoding="utf-8") as handle:
            return write_ops(path, _parse_lines(enumerate(handle, 1)), allow_empty=False)
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


def write_ops(path: str | os.PathLike, ops: Iterable[dict], allow_empty: bool = True) -> int:
    """Write op dicts (JSON-lines form; a leading {"kafkaref_history": v, ...} is the header).

    All or nothing: the history is written to a sibling directory and renamed to path only once
    every op was accepted, so an import that fails part-way leaves nothing behind (a partial
    history would check as valid) and can simply be run again. allow_empty=False refuses a
    history of no ops (a file of no lines is no evidence of anything)."""
    target = Path(path)
    _check_free(target)
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        count = _write_ops_to(staging, ops, allow_empty)
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


def _write_ops_to(path: Path, ops: Iterable[dict], allow_empty: bool) -> int:
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
        seen.finish(allow_empty)
    return count


class _SeenOps:
    """What import checks across lines: op indexes are unique, and each completion names an
    earlier invocation and is not timed before it."""

    def __init__(self):
        self.indexes: dict[int, object] = {}
        self.invoke_times: dict[int, int] = {}

    def finish(self, allow_empty: bool) -> None:
        """Every line was accepted: the indexes must be 0..N-1, as the recorder numbers ops (a
        gap is an op lost; the checkers refuse such a history too)."""
        if not self.indexes and not allow_empty:
            raise HistoryError("no ops: an empty history records nothing to judge")
        missing = len(self.indexes) - sum(1 for i in self.indexes if 0 <= i < len(self.indexes))
        if missing:
            first = min(set(range(len(self.indexes))) - set(self.indexes))
            raise HistoryError(f"op indexes must be 0..{len(self.indexes) - 1}, each once: "
                               f"{missing} missing, the first {first}")

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
    value = op.get("value")
    if isinstance(value, dict | list):  # an observation written as JSON (history/format.py)
        value = json.dumps(value, sort_keys=True)
    try:
        writer.op(index, time, process, type_, f, invoke_index=invoke_index,
                  error=op.get("error"), value=value)
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
