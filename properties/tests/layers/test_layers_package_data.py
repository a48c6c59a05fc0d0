"""Every data file of the layers ships in an installed kafkaref, not only in an editable one.

tox environments install kafkaref as a wheel: a file that pyproject.toml's package-data does not
name is missing there, and what reads it fails or, worse, quietly finds nothing (the kfake peer's
Go main was missing, so `tox -e conform-kfake` could not start kfake; the differential
transcripts were missing, so `tox -e differential` replayed none)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LAYERS = ["spec", "model", "impl", "history", "chaos", "spark_checks", "properties", "commands"]


def _package_of(path: Path, patterns: dict[str, list[str]]) -> tuple[str, Path]:
    """The dotted name and folder of the package holding path: the nearest folder with an
    __init__.py, or a data folder setup.py lists as a package of its own (then package-data
    names it)."""
    folder = path.parent
    while True:
        name = "kafkaref." + ".".join(folder.relative_to(ROOT).parts)
        if (folder / "__init__.py").exists() or name in patterns:
            return name, folder
        folder = folder.parent


def _shipped(path: Path, patterns: dict[str, list[str]]) -> bool:
    package, folder = _package_of(path, patterns)
    relative = path.relative_to(folder).as_posix()
    return any(fnmatch.fnmatch(relative, pattern) and ("/" in pattern) == ("/" in relative)
               for key in ("*", package) for pattern in patterns.get(key, []))


def test_every_data_file_of_the_layers_is_package_data():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    data = [path for layer in LAYERS for path in (ROOT / layer).rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")
            and "tests" not in path.relative_to(ROOT).parts
            and "__pycache__" not in path.parts]
    assert data, "no data files found: the layers moved?"
    missing = [str(path.relative_to(ROOT)) for path in data if not _shipped(path, patterns)]
    assert not missing, f"not in pyproject.toml's package-data: {missing}"
