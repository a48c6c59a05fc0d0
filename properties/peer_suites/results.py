"""What a peer's test suite run gives, whatever the suite (librdkafka's, franz-go's kgo): one row
per test, the counts, and the failures grouped by cause."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable


@dataclasses.dataclass(frozen=True)
class Row:
    """One test's verdict."""

    name: str
    state: str  # PASSED FAILED SKIPPED; RUNNING (still running at the end), TIMEOUT, CRASHED
    duration_s: float
    reason: str = ""
    # warnings the runner printed just before the failure (e.g. "... not supported by broker"):
    # the cause is often there rather than in the assertion that tripped
    context: str = ""

    @property
    def failed(self) -> bool:
        return self.state in ("FAILED", "RUNNING", "TIMEOUT", "CRASHED")


@dataclasses.dataclass(frozen=True)
class Counts:
    passed: int
    failed: int
    skipped: int

    @property
    def ran(self) -> int:
        return self.passed + self.failed


def counts(rows: Iterable[Row]) -> Counts:
    rows = list(rows)
    return Counts(sum(r.state == "PASSED" for r in rows), sum(r.failed for r in rows),
                  sum(r.state == "SKIPPED" for r in rows))


def failures_by_cause(rows: Iterable[Row], cause_of: Callable[[Row], str]) -> dict[str, list[Row]]:
    """Failed rows by cause, the largest group first."""
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        if row.failed:
            grouped.setdefault(cause_of(row), []).append(row)
    return dict(sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0])))
