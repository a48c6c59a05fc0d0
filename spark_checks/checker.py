"""A history checker as one callable, history directory -> report (Result.to_json()): what a
chaos run takes to judge what it recorded. chaos/ does not import spark_checks/ (docs/
architecture.md, "Layers"): the commands and the tests build the checker here and hand it in.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafkaref.spark_checks.session import LOCAL_MASTER

HistoryCheck = Callable[[Path], dict]
KINDS = ("spark", "twin", "none")


def history_checker(kind: str = "spark", master: str = LOCAL_MASTER,
                    spark=None, progress=None) -> HistoryCheck | None:
    """kind "spark": the Spark job, in `spark` or in a small session (run_session) started on
    the first history and kept for the next; "twin": the in-memory twin (small histories only),
    under the configuration the history was recorded with; "none": None, nothing is checked.
    progress(step, done, total): the Spark job's steps as they start (job.check)."""
    if kind == "none":
        return None
    if kind == "twin":
        return _twin_check
    if kind != "spark":
        raise ValueError(f"unknown checker {kind!r}: one of {', '.join(KINDS)}")
    sessions = [spark] if spark is not None else []

    def spark_check(history: Path) -> dict:
        from kafkaref.spark_checks import job
        from kafkaref.spark_checks.session import run_session

        if not sessions:
            if progress:
                progress(f"starting Spark ({master})", 0, 1)
            sessions.append(run_session(master))
        return job.check(sessions[0], str(history), progress=progress).to_json()

    return spark_check


def _twin_check(history: Path) -> dict:
    from kafkaref.history.format import HistoryError
    from kafkaref.history.store import history_config
    from kafkaref.spark_checks import twin

    try:
        config = history_config(history)
    except HistoryError:
        config = None  # the twin's own verification says what is wrong with the history
    return twin.check(str(history), config).to_json()
