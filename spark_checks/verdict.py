"""The checker's answer, shared by the Spark job and the naive twin (STYLE.md point 10).

check(history, config) -> Result(valid: True | False | "unknown", anomalies={name: [cases]}).
A case is a tuple of plain values in the field order ANOMALIES gives, so cases from the two
checkers compare and sort the same way; JSON gets them as objects with named fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import attrs

from kafkaref.history.format import ANOMALIES, CheckConfig, HistoryError, allowed_anomalies

# Exit codes of `kafkaref check` (STYLE.md point 9): distinct for "found anomalies" and "could
# not decide or crashed".
EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN = 0, 1, 2
DEFAULT_EXAMPLES = 10


@attrs.frozen
class Result:
    valid: bool | str
    config: CheckConfig
    anomalies: Mapping[str, tuple] = attrs.field(factory=dict)  # name -> up to K sorted cases
    counts: Mapping[str, int] = attrs.field(factory=dict)  # name -> number of cases in all
    info: Mapping[str, object] = attrs.field(factory=dict)  # counts per f and type, sizes
    error: str | None = None
    # What history/integrity.py established of the files: {"verified": bool, "note": str}
    # (None: not looked at, e.g. a history held in memory).
    integrity: Mapping[str, object] | None = None

    @property
    def exit_code(self) -> int:
        return {True: EXIT_VALID, False: EXIT_INVALID}.get(self.valid, EXIT_UNKNOWN)

    def to_json(self) -> dict:
        allowed = allowed_anomalies(self.config)
        return {
            "valid": self.valid,
            "config": self.config.as_dict(),
            "allowed": sorted(allowed),
            "error": self.error,
            "integrity": None if self.integrity is None else dict(self.integrity),
            "anomalies": {
                name: {
                    "count": self.counts.get(name, 0),
                    "allowed": name in allowed,
                    "meaning": ANOMALIES[name][0],
                    "examples": [case_dict(name, case) for case in self.anomalies.get(name, ())],
                }
                for name in ANOMALIES
            },
            "info": dict(self.info),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, default=_jsonable)


def _jsonable(value):
    if isinstance(value, tuple | frozenset | set):
        return list(value)
    raise TypeError(f"not JSON serialisable: {value!r}")


def case_dict(name: str, case: Sequence) -> dict:
    return dict(zip(ANOMALIES[name][1], case, strict=True))


def verdict(config: CheckConfig, counts: Mapping[str, int]) -> bool:
    """Valid exactly when no anomaly the configuration disallows occurred."""
    allowed = allowed_anomalies(config)
    return not any(count for name, count in counts.items() if name not in allowed)


def build_result(config: CheckConfig, cases: Mapping[str, tuple[int, Sequence]],
                 info: Mapping[str, object]) -> Result:
    """cases: name -> (count, sample of cases, already sorted canonically)."""
    counts = {name: cases[name][0] for name in cases}
    return Result(
        valid=verdict(config, counts),
        config=config,
        anomalies={name: tuple(cases[name][1]) for name in cases},
        counts=counts,
        info=info,
    )


def unknown(config: CheckConfig, error: BaseException | str, integrity=None) -> Result:
    """The checker could not decide. A HistoryError's message is the whole line (it names the
    file and what is wrong); other errors are prefixed by their type."""
    if isinstance(error, str | HistoryError):
        message = str(error)
    else:
        message = f"{type(error).__name__}: {error}"
    return Result(valid="unknown", config=config, error=message, integrity=integrity)
