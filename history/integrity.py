"""A history's files are what its writer wrote, or the history is corrupt: the manifest.

Checks read what a history's files say, so a file damaged on disk or in a copy (a few bytes
overwritten, a file cut short, rows lost) would otherwise be judged as if it had been recorded
that way: 200 overwritten bytes once turned 431 op indexes into others and the verdict was
"valid". Three things stop that, from the cheapest to the deepest:

- the writer seals the history (seal()): meta.json gets a manifest, per data file its row count,
  size and SHA-256, and a digest of meta.json's own content; meta.json is written in one
  canonical layout, so a changed byte anywhere in it either breaks the JSON, changes the content
  (the digest no longer matches) or changes the layout (no longer canonical). Every Parquet file
  also says in its footer that it belongs to a sealed history, so a meta.json that lost its
  manifest key is caught too.
- every Parquet page carries a CRC (history/store.py writes page checksums; pyarrow and Spark
  verify them while reading), which catches a file changed after verification.
- the checkers' structural checks (spark_checks/structure.py, the twin's) run before any anomaly
  check: op indexes unique and dense, completions after their invocation, values in range.

verify() runs before any judging (the checkers, merge, export). A history written before
manifests existed (no manifest, no sealed file) is read as it is and called "unverified": the
verdict says so (report.json "integrity"), the structural checks still apply.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import attrs
import pyarrow as pa
import pyarrow.parquet as pq

from kafkaref.history.format import STRUCTURE, HistoryError, structure_problem

MANIFEST = "manifest"
TABLES = ("ops", "records")
# In the Arrow schema metadata of every Parquet file a sealed history holds (history/store.py).
SEALED_KEY = "kafkaref.history.sealed"
UNVERIFIED_KEY = "unverified"  # meta.json: why a history built from unverified ones is not
_CHUNK = 1 << 20


class CorruptHistory(HistoryError):
    """A history whose files are not what was written, or whose rows break the format."""

    def __init__(self, where: str | os.PathLike, what: str):
        super().__init__(f"corrupt history: {where}: {what}")


@attrs.frozen
class Integrity:
    """What verify() established: verified (the manifest matched every file) or not, and why."""

    verified: bool
    note: str

    def as_dict(self) -> dict:
        return {"verified": self.verified, "note": self.note}


# --- writing -------------------------------------------------------------------------------


def meta_text(meta: dict) -> str:
    """meta.json's one canonical layout (verify() refuses any other)."""
    return json.dumps(meta, indent=2) + "\n"


def seal(path: str | os.PathLike, meta: dict) -> dict:
    """Write meta.json with a manifest of the history's data files; returns what was written."""
    path = Path(path)
    content = {k: v for k, v in meta.items() if k != MANIFEST}
    files = {name: _file_entry(path / name) for name in data_files(path)}
    sealed = {**content, MANIFEST: {"files": files, "meta_sha256": _meta_digest(content)}}
    (path / "meta.json").write_text(meta_text(sealed))
    return sealed


def data_files(path: Path) -> list[str]:
    """Every file a reader of the tables would read (Spark skips names starting with _ or .),
    relative to the history, sorted."""
    found = []
    for table in TABLES:
        directory = path / table
        if directory.is_dir():
            found += [f"{table}/{f.name}" for f in directory.iterdir()
                      if not f.name.startswith(("_", "."))]
    return sorted(found)


def _file_entry(file: Path) -> dict:
    return {"rows": pq.ParquetFile(file).metadata.num_rows, "bytes": file.stat().st_size,
            "sha256": file_digest(file)}


def file_digest(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _meta_digest(content: dict) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# --- verifying -----------------------------------------------------------------------------


@attrs.frozen
class FileFacts:
    """What a reader can learn of one data file (computed when asked: a digest reads it all).
    rows and sealed are None where they cannot be learnt cheaply (a file Spark reads remotely:
    its digest covers its rows)."""

    size: int
    sha256: Callable[[], str]
    rows: Callable[[], int] | None = None
    sealed: Callable[[], bool] | None = None


def verify(path: str | os.PathLike) -> Integrity:
    """The history's files against its manifest; CorruptHistory (one line: the file and what
    is wrong) at the first difference. A history without a manifest is unverified."""
    path = Path(path)
    try:
        raw = (path / "meta.json").read_text()
    except FileNotFoundError:
        raise HistoryError(f"{path} is not a history (no meta.json)") from None
    except UnicodeDecodeError as error:
        raise CorruptHistory(path / "meta.json", f"not text ({error})") from None
    return verify_files(str(path), raw, {name: _local_facts(path / name)
                                         for name in data_files(path)})


def _local_facts(file: Path) -> FileFacts:
    return FileFacts(file.stat().st_size, lambda: file_digest(file), lambda: _rows(file),
                     lambda: _sealed(file))


def _rows(file: Path) -> int:
    try:
        return pq.ParquetFile(file).metadata.num_rows
    except (pa.ArrowInvalid, OSError) as error:
        raise CorruptHistory(file, f"not a Parquet file ({error})") from None


def _sealed(file: Path) -> bool:
    """The file's footer says it belongs to a sealed history (a file whose footer does not
    read is corrupt: said now, naming it, rather than by whatever reads it later)."""
    try:
        metadata = pq.ParquetFile(file).schema_arrow.metadata or {}
    except (pa.ArrowInvalid, OSError) as error:
        raise CorruptHistory(file, f"not a readable Parquet file ({error})") from None
    return SEALED_KEY.encode() in metadata


def verify_files(where: str, raw: str, files: dict[str, FileFacts]) -> Integrity:
    """verify() over what is known of meta.json (raw, its text) and of the data files (by name
    relative to the history at where)."""
    meta_file = f"{where}/meta.json"
    try:
        meta = json.loads(raw)
    except ValueError as error:
        raise CorruptHistory(meta_file, f"not JSON ({error})") from None
    if not isinstance(meta, dict):
        raise CorruptHistory(meta_file, "not a JSON object")
    manifest = meta.get(MANIFEST)
    if manifest is None:
        return _without_manifest(where, files)
    _check_meta(meta_file, raw, meta, manifest)
    listed = manifest["files"]
    for name in files:
        if name not in listed:
            raise CorruptHistory(f"{where}/{name}", "a file the manifest does not list")
    rows = 0
    for name, entry in sorted(listed.items()):
        if name not in files:
            raise CorruptHistory(f"{where}/{name}", "missing (the manifest lists it)")
        rows += _check_file(f"{where}/{name}", files[name], entry)
    counts = f"{len(listed)} files, {rows:,} rows"
    if meta.get(UNVERIFIED_KEY):
        return Integrity(False, f"unverified: {meta[UNVERIFIED_KEY]} (its own {counts} match "
                                "its manifest)")
    return Integrity(True, f"verified: {counts} match the manifest")


def _check_meta(meta_file: str, raw: str, meta: dict, manifest) -> None:
    if (not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict)
            or not all(isinstance(e, dict) for e in manifest["files"].values())):
        raise CorruptHistory(meta_file, "the manifest is not {files: {name: entry}, ...}")
    if raw != meta_text(meta):
        raise CorruptHistory(meta_file, "not as its writer laid it out (edited or damaged)")
    content = {k: v for k, v in meta.items() if k != MANIFEST}
    if manifest.get("meta_sha256") != _meta_digest(content):
        raise CorruptHistory(meta_file, "its content differs from what was written (the "
                                        "manifest's meta_sha256 does not match)")


def _check_file(file: str, facts: FileFacts, entry: dict) -> int:
    """The file's row count (the manifest's), once its size, digest and rows match the entry."""
    expected = entry.get("bytes")
    if facts.size != expected:
        short = isinstance(expected, int) and facts.size < expected
        raise CorruptHistory(file, f"{facts.size:,} bytes, the manifest says {expected!r}"
                                   + (" (cut short)" if short else ""))
    if facts.sha256() != entry.get("sha256"):
        raise CorruptHistory(file, "its bytes differ from what was written (SHA-256 does not "
                                   "match the manifest)")
    rows = entry.get("rows")
    if not isinstance(rows, int) or (facts.rows is not None and facts.rows() != rows):
        found = "?" if facts.rows is None else f"{facts.rows():,}"
        raise CorruptHistory(file, f"{found} rows, the manifest says {rows!r}")
    return rows


def _without_manifest(where: str, files: dict[str, FileFacts]) -> Integrity:
    """An old history, unless a file says it was sealed (then meta.json lost its manifest)."""
    for name, facts in sorted(files.items()):
        if facts.sealed is not None and facts.sealed():
            raise CorruptHistory(f"{where}/meta.json", f"no manifest, but {name} was written "
                                                       "with one (meta.json edited or damaged)")
    return Integrity(False, "unverified: meta.json has no manifest (written before kafkaref "
                            "sealed histories): its files cannot be checked against one")


def structure_error(where: str | os.PathLike, found: dict[str, tuple[int, int]]) \
        -> CorruptHistory:
    """The checkers' refusal of a history whose rows break structural rules (found: rule ->
    (rows, first op), as spark_checks/structure.py and twin_structure.py report them): the
    first rule of the catalogue broken, in one line."""
    rule = next(name for name in STRUCTURE if name in found)
    more = len(found) - 1
    return CorruptHistory(f"{where}/{STRUCTURE[rule][0]}", structure_problem(rule, *found[rule])
                          + (f"; {more} more rule{'s' if more > 1 else ''} broken" if more else ""))
