"""Run a selection of the catalogue against one broker: each check in a thread of its own with a
deadline, so a check that hangs (or a broker that never answers) costs at most its deadline and
the run goes on; its sockets are closed so the thread ends too."""

from __future__ import annotations

import threading
import time
import traceback

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import (
    ERROR,
    FAIL,
    PASS,
    PREFERRED_LEVEL,
    SKIP,
    Check,
    CheckFailed,
    CouldNotRun,
    Evidence,
    Outcome,
    Skip,
    load_catalogue,
)
from kafkaref.chaos.conform.cleanup import Leftovers, clean_up
from kafkaref.chaos.conform.probe import Probe
from kafkaref.impl.client.connection import KafkaConnection, parse_address

BOOTSTRAP_TIMEOUT_S = 5.0


@attrs.frozen
class RunResult:
    broker: str  # a label for the report card (--label, default the bootstrap)
    bootstrap: str
    started: str
    outcomes: tuple[Outcome, ...]
    could_not_start: str = ""  # why no check could run (bootstrap unreachable, garbage)
    cleanup: str = ""  # what the run removed from the broker at its end (cleanup.py)

    @property
    def exit_code(self) -> int:
        """0 every check passed (or skipped), 1 some check failed, 2 some could not run."""
        statuses = {o.status for o in self.outcomes}
        if FAIL in statuses:
            return 1
        if ERROR in statuses or self.could_not_start:
            return 2
        return 0

    def versions_exercised(self) -> dict[str, dict[str, list[int]]]:
        """level -> {API: every version some check sent it at, at that level}."""
        union: dict[str, dict[str, set[int]]] = {}
        for o in self.outcomes:
            for level, sent in o.versions.items():
                for name, found in sent.items():
                    union.setdefault(level, {}).setdefault(name, set()).update(found)
        return {level: {name: sorted(found) for name, found in sorted(apis.items())}
                for level, apis in union.items()}

    def as_dict(self) -> dict:
        return {"broker": self.broker, "bootstrap": self.bootstrap, "started": self.started,
                "could_not_start": self.could_not_start, "cleanup": self.cleanup,
                "versions_exercised": self.versions_exercised(),
                "outcomes": [o.as_dict() for o in self.outcomes]}

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        return cls(data["broker"], data["bootstrap"], data["started"],
                   tuple(Outcome.from_dict(o) for o in data["outcomes"]),
                   data.get("could_not_start", ""), data.get("cleanup", ""))


def select(only: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> list[Check]:
    """Checks by name or group; an unknown name is a ValueError listing the known ones."""
    catalogue = load_catalogue()
    groups = {c.group for c in catalogue.values()}
    for name in (*only, *skip):
        if name not in catalogue and name not in groups:
            raise ValueError(f"unknown check {name!r}; known checks: {', '.join(catalogue)}; "
                             f"groups: {', '.join(sorted(groups))}")
    chosen = [c for c in catalogue.values() if not only or c.name in only or c.group in only]
    return [c for c in chosen if c.name not in skip and c.group not in skip]


def negotiate(bootstrap: str, timeout_s: float = BOOTSTRAP_TIMEOUT_S):
    """The broker's advertised versions {api key: (min, max)} from ApiVersions (v3, then v0),
    tried on each bootstrap address; raises ConnectionError saying why none answered."""
    reasons = []
    for address in [a for a in bootstrap.split(",") if a.strip()]:
        for version in (3, 0):
            try:
                with KafkaConnection(*parse_address(address), timeout_s=timeout_s,
                                     client_id="conform") as conn:
                    answer = conn.send(18, version, {"client_software_name": "kafkaref-conform",
                                                     "client_software_version": "1"})
            except (OSError, ValueError) as exc:
                said = str(exc) or type(exc).__name__
                _add_reason(reasons, said if said.startswith(address) else f"{address}: {said}")
                continue
            if answer.error_code != ErrorCode.none:
                _add_reason(reasons, f"{address} ApiVersions v{version}: "
                                     f"{answer.error_code.name}")
                continue
            return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    raise ConnectionError("; ".join(reasons) or "no bootstrap address")


def _add_reason(reasons: list[str], reason: str) -> None:
    if reason not in reasons:  # v3 and v0 refused alike: said once
        reasons.append(reason)


def run_check(check: Check, probe: Probe, deadline_s: float) -> Outcome:
    box: dict = {}

    def body():
        try:
            box["summary"] = check.function(probe) or ""
            box["status"] = PASS
            if probe.problems:  # soft failures: the check went on to the end
                box["status"] = FAIL
                box["summary"] = "; ".join(str(p) for p in probe.problems)
                box["evidence"] = tuple(p.evidence[0] for p in probe.problems)
        except Skip as exc:
            box["status"], box["summary"] = SKIP, str(exc)
        except CheckFailed as exc:
            earlier = [p for p in probe.problems if p is not exc]  # soft failures before it
            box["status"] = FAIL
            box["summary"] = "; ".join(str(p) for p in [*earlier, exc])
            box["evidence"] = (*(p.evidence[0] for p in earlier), *exc.evidence)
        except CouldNotRun as exc:
            box["status"], box["summary"] = ERROR, f"could not run: {exc}"
        except Exception as exc:  # noqa: BLE001 -- whatever a broker's answer made a check raise
            # the broker closed, timed out or answered something undecodable
            box["status"], box["summary"] = ERROR, f"could not run: {exc!r}"
            box["evidence"] = (Evidence("traceback", response=traceback.format_exc()[-1500:]),
                               *reversed(probe.exchanges))

    started = time.monotonic()
    thread = threading.Thread(target=body, name=f"conform-{check.name}", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if thread.is_alive():
        probe.abandon()
        thread.join(5)
        box = {"status": ERROR, "summary": f"could not run: no verdict within its deadline of "
               f"{deadline_s:.0f} s", "evidence": tuple(reversed(probe.exchanges))}
    probe.abandon()
    return Outcome(check.name, check.group, box["status"], str(box["summary"]),
                   round(time.monotonic() - started, 3), check.reference, check.behaviour,
                   tuple(box.get("evidence", ())), {probe.level: probe.versions_sent()})


# How one verdict of a check at several levels is made of its verdicts at each: the worst wins
WORST_FIRST = (FAIL, ERROR, PASS, SKIP)


def combined(outcomes: list[Outcome]) -> Outcome:
    """One outcome of a check run at several version levels: the worst status (a skip at one
    level does not hide a pass at another), each level's verdict and summary after its name,
    the evidence of the levels that did not pass, every level's versions."""
    status = next(s for s in WORST_FIRST if any(o.status == s for o in outcomes))
    parts, evidence, versions = [], [], {}
    for o in outcomes:
        versions.update(o.versions)
        parts.append(f"{'/'.join(o.versions)}: {o.status}" + (f", {o.summary}" if o.summary
                                                              else ""))
        if o.status in (FAIL, ERROR):
            evidence.extend(o.evidence)
    first = outcomes[0]
    return Outcome(first.name, first.group, status, "; ".join(parts),
                   round(sum(o.duration_s for o in outcomes), 3), first.reference,
                   first.behaviour, tuple(evidence), versions)


def versions_text(sent: dict[str, list[int]]) -> str:
    """{API: versions} as `Fetch v4, Produce v3/7`."""
    return ", ".join(f"{name} v{'/'.join(map(str, found))}" for name, found in sent.items())


def run(bootstrap: str, checks: list[Check], *, label: str | None = None,
        options: dict | None = None, timeout_s: float = 10.0,
        replication_factor: int | None = None, progress=None, keep: bool = False) -> RunResult:
    """Every check in order; progress(index, total, outcome) after each. At the end the topics
    and groups the checks created are deleted from the broker (keep: left for debugging)."""
    options = options or {}
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    label = label or bootstrap
    try:
        versions = negotiate(bootstrap)
    except (ConnectionError, ValueError) as exc:
        reason = f"bootstrap did not answer ApiVersions: {exc}"
        outcomes = tuple(Outcome(c.name, c.group, ERROR, f"could not run: {reason}", 0.0,
                                 c.reference, c.behaviour) for c in checks)
        return RunResult(label, bootstrap, started, outcomes, reason)
    replication_factor = replication_factor or _cluster_replication_factor(
        bootstrap, versions, timeout_s)
    outcomes = []
    created = Leftovers()
    for index, check in enumerate(checks):
        deadline = check.deadline_s * float(options.get("deadline_scale", 1.0))
        if check.name == "protocol_fuzz":
            deadline = max(deadline, int(options.get("fuzz", 300)) * 0.02 + 60)
        levels = check.levels if options.get("levels", True) else (PREFERRED_LEVEL,)
        outcome = combined([run_check(check, Probe(bootstrap, versions, timeout_s,
                                                   replication_factor, options, created,
                                                   level), deadline) for level in levels])
        outcomes.append(outcome)
        if progress is not None:
            progress(index, len(checks), outcome)
    if keep:
        cleaned = f"kept (--keep): {len(created.names)} topic and group names of this run"
    else:
        cleaned = _clean_up(bootstrap, versions, timeout_s, created)
    return RunResult(label, bootstrap, started, tuple(outcomes), cleanup=cleaned)


def _cluster_replication_factor(bootstrap: str, versions, timeout_s: float) -> int | None:
    """The replication factor every check's topics get: the cluster's size (at most 3) as the
    run starts, before any fault, counted as the most brokers any bootstrap address lists. One
    broker's count can fall short: a broker learns the others from the controller after it
    starts serving, and right after a restart it may not list the restarted one yet. Too few
    replicas, and min.insync.replicas 2 is unreachable once one of them is killed. None (each
    probe asks) if no bootstrap address answers Metadata."""
    counts = []
    for address in bootstrap.split(","):
        probe = Probe(address.strip(), versions, timeout_s)
        try:
            counts.append(probe.broker_count())
        except (OSError, ValueError):
            pass
        finally:
            probe.close()
    return min(3, max(counts)) if counts else None


def _clean_up(bootstrap: str, versions, timeout_s: float, created: Leftovers) -> str:
    """clean_up() of what the run created, in words; a broker that no longer answers leaves
    them (said so, the verdicts stand)."""
    probe = Probe(bootstrap, versions, timeout_s)
    try:
        return clean_up(probe, created.names).describe()
    except (OSError, ValueError, CheckFailed) as exc:
        return f"could not clean up: {exc}"
    finally:
        probe.close()


__all__ = ["RunResult", "negotiate", "run", "run_check", "select"]
