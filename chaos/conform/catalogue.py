"""The catalogue of conformance checks: what a check is, what it returns, how checks register.

A check is a small function `f(probe)` that talks to the broker under test through a Probe
(probe.py) and either returns (pass, optionally with a summary), raises Skip (the behaviour does
not apply to this broker, with the reason) or raises CheckFailed (with the evidence: the request,
the response, what was expected). Anything else it raises -- the broker closed the connection,
answered bytes that do not decode, did not answer within the socket timeout -- means the check
could not run, which the report says apart from a failure. The docstring's first line is the
Kafka behaviour checked; `reference` cites where Kafka specifies it (KIP or protocol guide).
"""

from __future__ import annotations

import importlib

import attrs

# The order the checks run in: the fault checks last (a broker they restarted may still be
# rejoining when they end), the versions' checks before the storage ones.
CHECK_MODULES = ("checks_protocol", "checks_log", "checks_fetch", "checks_producer",
                 "checks_groups", "checks_admin", "checks_versions", "checks_storage", "fuzz",
                 "checks_faults")

PASS, FAIL, SKIP, ERROR = "pass", "fail", "skip", "error"
STATUSES = (PASS, FAIL, SKIP, ERROR)
# Version levels a check runs at (probe.py): the wire checks twice, at the lowest and at the
# highest version of each API the broker advertises (issue 23: a broker whose newest versions
# lose records must not pass on its oldest); the others (faults, storage, fuzz, which need
# minutes or a fault command each) once, at the versions the probe prefers.
LOWEST, HIGHEST, PREFERRED_LEVEL = "lowest", "highest", "preferred"
WIRE_GROUPS = frozenset({"protocol", "log", "fetch", "producer", "groups", "admin"})


@attrs.frozen
class Evidence:
    """One observation backing a verdict: what was sent, what came back, what Kafka requires."""

    what: str
    request: str = ""
    response: str = ""
    expected: str = ""

    def as_dict(self) -> dict:
        return attrs.asdict(self)


@attrs.frozen
class Outcome:
    name: str
    group: str
    status: str  # one of STATUSES; ERROR = could not run
    summary: str
    duration_s: float
    reference: str
    behaviour: str
    evidence: tuple[Evidence, ...] = ()
    # level -> {API name: the versions it was sent at}: what the check exercised at each level
    versions: dict = attrs.Factory(dict)

    def as_dict(self) -> dict:
        data = attrs.asdict(self, recurse=False)
        data["evidence"] = [e.as_dict() for e in self.evidence]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Outcome:
        return cls(**{**data, "evidence": tuple(Evidence(**e) for e in data["evidence"])})


class Skip(Exception):  # noqa: N818 -- a verdict, not an error
    """The behaviour does not apply to this broker (the message says why)."""


class CouldNotRun(Exception):  # noqa: N818 -- a verdict, not an error
    """The check could not reach a verdict (the message says why)."""


class CheckFailed(AssertionError):
    """The broker broke the behaviour; evidence says how."""

    def __init__(self, message: str, evidence: tuple[Evidence, ...] = ()):
        super().__init__(message)
        self.evidence = evidence


@attrs.frozen
class Check:
    name: str
    group: str
    function: object
    reference: str
    deadline_s: float
    levels: tuple[str, ...] = (PREFERRED_LEVEL,)

    @property
    def behaviour(self) -> str:
        """The docstring's first paragraph, on one line."""
        doc = (self.function.__doc__ or "").strip().split("\n\n")[0]
        return " ".join(doc.split()) or self.name


CATALOGUE: dict[str, Check] = {}


def check(name: str, group: str, reference: str, deadline_s: float = 30.0,
          levels: tuple[str, ...] | None = None):
    """Register a check under a unique name (the name --only/--skip and the reports use).
    levels: the version levels it runs at (default: lowest and highest for the wire groups,
    else the preferred versions); a check about what only new versions carry says HIGHEST."""

    def register(function):
        if name in CATALOGUE:
            raise ValueError(f"check {name} registered twice")
        chosen = levels or ((LOWEST, HIGHEST) if group in WIRE_GROUPS else (PREFERRED_LEVEL,))
        CATALOGUE[name] = Check(name, group, function, reference, deadline_s, chosen)
        return function

    return register


def load_catalogue() -> dict[str, Check]:
    """Every check, in catalogue order (CHECK_MODULES' order, then definition: a check module
    importing another does not move that one's checks ahead)."""
    for module in CHECK_MODULES:  # importing a module registers its checks
        importlib.import_module(f"kafkaref.chaos.conform.{module}")
    rank = {f"kafkaref.chaos.conform.{m}": i for i, m in enumerate(CHECK_MODULES)}
    return dict(sorted(CATALOGUE.items(),
                       key=lambda item: rank.get(item[1].function.__module__, len(rank))))
