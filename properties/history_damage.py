"""Damage done to a history on disk, for the tests that show no damaged history is judged
(properties/tests/history/test_history_integrity.py): bytes flipped or overwritten, files cut
short, deleted or added, rows dropped or duplicated (the Parquet file rewritten as a careless
copy would); and unsealed(), a history as kafkaref wrote them before manifests existed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from kafkaref.history import integrity

KINDS = ("flip", "overwrite", "truncate", "drop_row", "duplicate_row", "delete", "extra")


def files(path: Path) -> list[str]:
    """meta.json and every data file, relative to the history."""
    return ["meta.json", *integrity.data_files(path)]


@st.composite
def damage(draw, path: Path) -> str:
    """Damage the history at path in one of KINDS; returns what was done, in words."""
    names = files(path)
    kind = draw(st.sampled_from(KINDS))
    if kind in ("drop_row", "duplicate_row"):
        with_rows = [n for n in names[1:] if pq.ParquetFile(path / n).metadata.num_rows]
        name = draw(st.sampled_from(with_rows))
        table = pq.read_table(path / name)
        row = draw(st.integers(0, table.num_rows - 1))
        keep = [i for i in range(table.num_rows) if i != row] if kind == "drop_row" else \
            sorted([*range(table.num_rows), row])
        pq.write_table(table.take(pa.array(keep, pa.int64())), path / name,
                       write_page_checksum=True)
        return f"{kind} {row} of {name}"
    if kind == "delete":
        name = draw(st.sampled_from(names[1:]))
        (path / name).unlink()
        return f"deleted {name}"
    if kind == "extra":
        name = draw(st.sampled_from(names[1:]))
        copy = path / name.replace("part-", "part-9")
        shutil.copyfile(path / name, copy)
        return f"copied {name} to {copy.name}"
    name = draw(st.sampled_from(names))
    data = bytearray((path / name).read_bytes())
    if kind == "truncate":
        size = draw(st.integers(0, len(data) - 1))
        (path / name).write_bytes(data[:size])
        return f"cut {name} from {len(data)} to {size} bytes"
    at = draw(st.integers(0, len(data) - 1))
    if kind == "flip":
        data[at] ^= draw(st.integers(1, 255))
        (path / name).write_bytes(bytes(data))
        return f"flipped byte {at} of {name}"
    length = draw(st.integers(1, min(200, len(data) - at)))
    new = draw(st.binary(min_size=length, max_size=length).filter(
        lambda b: b != bytes(data[at:at + length])))
    data[at:at + length] = new
    (path / name).write_bytes(bytes(data))
    return f"overwrote {length} bytes at {at} of {name}"


def unsealed(path: Path) -> None:
    """The history at path as kafkaref wrote histories before manifests: meta.json without a
    manifest, Parquet files without page checksums nor the sealed mark."""
    meta = json.loads((path / "meta.json").read_text())
    meta.pop(integrity.MANIFEST, None)
    (path / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    for name in integrity.data_files(path):
        table = pq.read_table(path / name)
        kept = {k: v for k, v in (table.schema.metadata or {}).items()
                if k != integrity.SEALED_KEY.encode()}
        pq.write_table(table.replace_schema_metadata(kept), path / name, compression="zstd")
