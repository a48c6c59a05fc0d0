"""Spark's failures as one line: the root cause, and where Spark's log holds the rest.

A Java exception reaches Python as a Py4JJavaError (or a pyspark.errors exception) whose text is
the whole JVM stack trace, hundreds of lines for a truncated Parquet file; and Spark's own
loggers print their stack traces too. Those go to a log file (session.py configures log4j2 to
write there), and the verdict's error is the innermost cause, on one line.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from kafkaref.history.format import HistoryError

LOG_ENV = "KAFKAREF_SPARK_LOG"
LINE_MAX = 400
_EXCEPTION_LINE = re.compile(r"^(?:Caused by: )?([\w$.]+(?:Exception|Error)\b.*)$")


def log_path() -> Path:
    """This process's Spark log (log4j2 writes it only once something is logged): set in the
    environment before the JVM starts, so the JVM and this module agree on it."""
    if LOG_ENV not in os.environ:
        directory = Path(tempfile.gettempdir()) / "kafkaref-spark-logs"
        directory.mkdir(exist_ok=True)
        os.environ[LOG_ENV] = str(directory / f"spark-{os.getpid()}.log")
    return Path(os.environ[LOG_ENV])


def one_line(error: BaseException) -> BaseException | str:
    """A HistoryError as it is (its message is one line already); anything else as one line
    naming its innermost cause, and Spark's log when Spark failed."""
    if isinstance(error, HistoryError):
        return error
    text = str(error)
    line = root_cause(text) or f"{type(error).__name__}: {_first_line(text)}"
    if len(line) > LINE_MAX:
        line = line[:LINE_MAX - 3] + "..."
    if _from_spark(error):
        line = f"Spark failed: {line}"
        log = log_path()
        if log.exists() and log.stat().st_size:
            line += f" (stack traces in {log})"
    return line


def root_cause(text: str) -> str | None:
    """The innermost exception of a Java stack trace ('Caused by: ...' lines come innermost
    last) that names a file, else the innermost one; None when the text holds none."""
    exceptions = [m.group(1) for m in map(_EXCEPTION_LINE.match,
                                          (line.strip().removeprefix(": ")
                                           for line in text.splitlines())) if m]
    naming = [line for line in exceptions if "file:" in line or ".parquet" in line]
    return (naming or exceptions or [None])[-1]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _from_spark(error: BaseException) -> bool:
    module = type(error).__module__ or ""
    return module.startswith(("py4j", "pyspark"))
