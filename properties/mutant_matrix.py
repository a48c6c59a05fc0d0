"""The detection matrix: every registered mutant (impl/mutants.py) run against the checks.

A check is a named way to find bugs (a Hypothesis state machine, or a client-level check of a
threaded broker) at a level: "core" (in-process machines: the model lockstep on the core, the
core cluster machine, the storage machine, all in one thread; and the model lockstep on three
in-process threaded brokers, for the server layer), "broker" (threaded brokers on
127.0.0.1, real requests), "chaos" (process clusters with faults). For each mutant the runner
tries the checks of the chosen levels that exercise the mutant's layer, in order, and stops at
the first that catches it. Before that, every check runs once with no mutant: a check that fails
on the correct code would "catch" everything and is reported as broken instead.

Measured per mutant: caught or not, by which check (and which invariant or property), the time
until the first failing example (detection) and in all (with shrinking), and the length of the
shrunk counterexample in rule steps (machines only).

    kafkaref mutants --level core --budget small
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import time
from collections.abc import Callable, Iterator

import attrs
from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import HypothesisException
from hypothesis.reporting import with_reporter
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kafkaref.impl.mutants import LAYERS, NONE, Mutant, parse_mutants

LEVELS = ("core", "broker", "chaos")


@attrs.frozen
class Budget:
    """How long a machine walks: examples x steps (a broker check ignores it)."""

    name: str
    examples: int
    steps: int
    shrink: bool = True  # off: detection only, the counterexample as found


# smoke: the default-run test's size (no shrinking: it asks "caught?", not "how short?")
BUDGETS = {b.name: b for b in (Budget("smoke", 150, 40, shrink=False), Budget("small", 40, 30),
                                Budget("ci", 150, 40), Budget("deep", 1500, 80))}


@attrs.frozen
class Finding:
    """One check's verdict on one set of mutants."""

    check: str
    caught: bool
    detail: str = ""  # the invariant or property that failed, and the first line of why
    detect_s: float = 0.0  # until the first failing example
    total_s: float = 0.0  # with shrinking
    steps: int | None = None  # the shrunk counterexample's rule steps (machines only)


@attrs.frozen
class Check:
    name: str
    level: str
    layers: frozenset[str]  # the mutant layers whose code it exercises
    run: Callable[[frozenset[Mutant], Budget], Finding]

    def applies_to(self, mutant: Mutant) -> bool:
        return mutant.layer in self.layers


@attrs.frozen
class Row:
    mutant: Mutant
    finding: Finding | None  # None: no check of the chosen levels exercises its layer
    tried: tuple[str, ...] = ()  # checks run, in order
    skipped: str = ""  # why the mutant was not run at all

    @property
    def caught(self) -> bool:
        return self.finding is not None and self.finding.caught


# -- machines ---------------------------------------------------------------------------------
def _is_finding(exc: BaseException) -> bool:
    """A failure the checked code caused (not Hypothesis refusing to run)."""
    return not isinstance(exc, HypothesisException)


def _timed(machine: type[RuleBasedStateMachine], first_failure: list):
    """machine, noting when its first failing example ends and why (teardown runs in a
    finally): [(time, exception)]."""

    class Timed(machine):
        def teardown(self):
            if not first_failure and sys.exc_info()[1] is not None and _is_finding(
                    sys.exc_info()[1]):
                first_failure.append((time.perf_counter(), sys.exc_info()[1]))
            super().teardown()

    Timed.__name__ = machine.__name__
    return Timed


def _failures(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [e for sub in exc.exceptions for e in _failures(sub)]
    return [exc]


def _steps_and_check(exc: BaseException, machine) -> tuple[int, str]:
    """Rule steps of the printed counterexample, and the invariant (or rule) that failed."""
    rules = {name for name, f in inspect.getmembers(machine)
             if hasattr(f, "hypothesis_stateful_rule")
             or hasattr(f, "hypothesis_stateful_initialize_rule")}
    invariants = {name for name, f in inspect.getmembers(machine)
                  if hasattr(f, "hypothesis_stateful_invariant")}
    calls = [m.group(1) for line in getattr(exc, "__notes__", ())
             if (m := re.match(r"state\.(\w+)\(", line))]
    steps = sum(1 for name in calls if name in rules)
    last = next((n for n in reversed(calls) if n in rules | invariants), "")
    where = last if last in invariants else f"rule {last}" if last else type(exc).__name__
    return steps, where


def run_machine(name: str, machine: type[RuleBasedStateMachine], budget: Budget,
                timing_dependent: bool = False) -> Finding:
    """Walk machine within budget (derandomized: the same walk every run); shrink a failure.

    timing_dependent: the machine drives threads, so a failing walk need not fail again when
    Hypothesis replays it (it then reports Flaky): the first failure counts, as found."""
    first_failure: list = []
    run_settings = settings(
        max_examples=budget.examples, stateful_step_count=budget.steps, derandomize=True,
        database=None, deadline=None, print_blob=False,
        phases=[Phase.explicit, Phase.generate, *([Phase.shrink] if budget.shrink else [])],
        suppress_health_check=list(HealthCheck))
    start = time.perf_counter()
    try:
        with with_reporter(lambda _: None):
            run_state_machine_as_test(_timed(machine, first_failure), settings=run_settings)
    except BaseException as exc:  # noqa: BLE001 -- any failure of the checked code is a catch
        if isinstance(exc, KeyboardInterrupt):
            raise
        end = time.perf_counter()
        if not _is_finding(exc):
            if not (timing_dependent and first_failure):
                raise
            at, found = first_failure[0]
            why = str(found).strip().splitlines()[0] if str(found).strip() else ""
            detail = f"{type(found).__name__} {why} (timing-dependent: not replayed)"
            return Finding(name, True, detail[:110] + ("..." if len(detail) > 110 else ""),
                           at - start, end - start, None)
        found = [(*_steps_and_check(e, machine), e) for e in _failures(exc)]
        steps, where, shortest = min(found, key=lambda f: f[0])
        why = str(shortest).strip().splitlines()[0] if str(shortest).strip() else ""
        detail = f"{where}: {type(shortest).__name__} {why}".strip()
        return Finding(name, True, detail[:110] + ("..." if len(detail) > 110 else ""),
                       (first_failure[0][0] if first_failure else end) - start, end - start,
                       steps)
    end = time.perf_counter()
    return Finding(name, False, detect_s=end - start, total_s=end - start)


def _lockstep_machine(mutants: frozenset[Mutant], budget: Budget) -> Finding:
    """The model's machine with the impl core in lockstep (properties/lockstep.py): every
    answer and every replica's observable state compared with the model after each step."""
    from kafkaref.model.config import ClusterConfig
    from kafkaref.properties.lockstep import lockstep_machine

    config = ClusterConfig(brokers=3, partitions=1, replication_factor=3, min_insync_replicas=2,
                           replica_lag_time_max_ms=500)
    machine = lockstep_machine(config, partition_mutants=mutants, controller_mutants=mutants)
    return run_machine("lockstep (model/core)", machine, budget)


# walks x steps of the threaded lockstep by budget: a step costs a settle point over sockets
# (about 10-40 steps/s), and a walk starts three brokers and a controller
THREADED_BUDGETS = {"smoke": (3, 20), "small": (3, 20), "ci": (6, 25), "deep": (30, 60)}


def _threaded_lockstep(mutants: frozenset[Mutant], budget: Budget) -> Finding:
    """The model's threaded rule set against three in-process threaded brokers over sockets
    (properties/threaded_machine.py): client answers, Metadata and hw compared at every settle
    point. Not shrunk (a shrink replays threaded walks; the length is the walk's as found)."""
    from kafkaref.model.config import ClusterConfig
    from kafkaref.properties.stateful import bind
    from kafkaref.properties.threaded_cluster import ThreadedCluster
    from kafkaref.properties.threaded_machine import ThreadedMachine

    config = ClusterConfig(brokers=3, partitions=1, replication_factor=3, min_insync_replicas=2)
    machine = bind(ThreadedMachine, config=config,
                   sut_factory=lambda c: ThreadedCluster(c, mutants=mutants))
    examples, steps = THREADED_BUDGETS.get(budget.name, THREADED_BUDGETS["ci"])
    return run_machine("lockstep (model/threaded)", machine,
                       Budget(budget.name, examples, steps, shrink=False), timing_dependent=True)


def _lockstep_available() -> bool:
    """properties/lockstep.py is written in parallel (issue 13); the matrix uses it once it is
    in the tree."""
    import importlib.util

    return importlib.util.find_spec("kafkaref.properties.lockstep") is not None


def _core_machine(mutants: frozenset[Mutant], budget: Budget) -> Finding:
    from kafkaref.properties.core_machine import CoreCluster, CoreMachine
    from kafkaref.properties.stateful import bind

    machine = bind(CoreMachine, factory=lambda: CoreCluster(
        brokers=3, partition_mutants=mutants, controller_mutants=mutants))
    return run_machine("core machine", machine, budget)


def _storage_machine(mutants: frozenset[Mutant], budget: Budget) -> Finding:
    from kafkaref.impl.storage.config import LogConfig
    from kafkaref.impl.storage.log import Log
    from kafkaref.properties.stateful import bind
    from kafkaref.properties.storage_machine import StorageMachine

    # tiny sizes: a short walk rolls by size, age and full index, indexes sparsely, retains
    config = LogConfig(segment_bytes=1_200, segment_ms=60, segment_index_bytes=40,
                       index_interval_bytes=150, retention_bytes=3_000, retention_ms=-1,
                       mutants=mutants)
    return run_machine("storage machine", bind(StorageMachine, log_factory=Log, config=config),
                       budget)


def _broker_check(name: str, function: Callable[[frozenset[Mutant]], str | None]):
    """A client-level check of threaded brokers: a problem description, or None."""

    def run(mutants: frozenset[Mutant], budget: Budget) -> Finding:
        start = time.perf_counter()
        problem = function(mutants)
        elapsed = time.perf_counter() - start
        return Finding(name, problem is not None, problem or "", elapsed, elapsed)

    return run


# seconds of faults per chaos run, by budget (the run adds cluster start, heal and final reads)
CHAOS_SECONDS = {"smoke": 15, "small": 20, "ci": 30, "deep": 120}


def _chaos_run(mutants: frozenset[Mutant], budget: Budget) -> Finding:
    """A chaos run (chaos/run.py: a process cluster with the mutants, the workload and its
    probes, the mutant's hunt from chaos/hunts.py, final reads) judged by the twin checker:
    caught = an invalid history. The baseline (no mutant) runs every hunt's faults in one
    run, so a hunt that would make the correct broker look wrong fails the baseline."""
    import tempfile

    from kafkaref.chaos.hunts import baseline_options, hunt_for
    from kafkaref.chaos.run import EXIT_INVALID, EXIT_VALID, run
    from kafkaref.spark_checks.checker import history_checker

    seconds = CHAOS_SECONDS.get(budget.name, 30)
    codes = tuple(sorted(m.code for m in mutants))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kafkaref-mutant-chaos-") as runs:
        common = {"seed": 1, "runs_dir": runs, "run_id": "-".join(codes) or "baseline"}
        options = (hunt_for(codes[0]).options(codes[0], seconds, **common) if len(codes) == 1
                   else baseline_options(seconds, mutants=codes, **common))
        result = run(options, log=lambda _: None, check=history_checker("twin"))
    elapsed = time.perf_counter() - start
    anomalies = {name: entry["count"] for name, entry in result.report.get("anomalies", {}).items()
                 if entry.get("count") and not entry.get("allowed")}
    if result.exit_code == EXIT_INVALID:
        detail = "anomalies " + ", ".join(f"{k} x{v}" for k, v in sorted(anomalies.items()))
        return Finding("chaos run", True, detail, elapsed, elapsed)
    verdict = "" if result.exit_code == EXIT_VALID else f"run ended {result.exit_code} (unknown)"
    return Finding("chaos run", False, verdict, elapsed, elapsed)


def checks() -> list[Check]:
    """Every check of every level; within a level, the one that should catch most first."""
    from kafkaref.properties import broker_checks

    model_layers = frozenset({"core", "replication", "controller"})
    found = [Check("lockstep (model/core)", "core", model_layers, _lockstep_machine)
             ] if _lockstep_available() else []
    found += [
        Check("core machine", "core", model_layers, _core_machine),
        Check("storage machine", "core", frozenset({"storage"}), _storage_machine),
        # last at this level: tried only for what the deterministic machines miss; the one
        # lockstep that reaches the server layer (per-connection ordering, M9)
        Check("lockstep (model/threaded)", "core", frozenset({"server"}), _threaded_lockstep),
    ]
    for check in broker_checks.CHECKS:
        found.append(Check(check.name, "broker", check.layers,
                           _broker_check(check.name, check.function)))
    found.append(Check("chaos run", "chaos", frozenset(LAYERS), _chaos_run))
    return found


# -- the run ----------------------------------------------------------------------------------
@attrs.frozen
class Matrix:
    level: tuple[str, ...]
    budget: Budget
    baseline: tuple[Finding, ...]  # each check without mutants: must not catch anything
    rows: tuple[Row, ...]
    seconds: float

    def to_json(self) -> dict:
        return {
            "levels": list(self.level), "budget": attrs.asdict(self.budget),
            "seconds": round(self.seconds, 2),
            "baseline": [_finding_json(f) for f in self.baseline],
            "rows": [{"mutant": r.mutant.code, "layer": r.mutant.layer,
                      "breaks": r.mutant.breaks, "caught": r.caught,
                      "tried": list(r.tried), "skipped": r.skipped,
                      **(_finding_json(r.finding) if r.finding else {})} for r in self.rows],
        }


def _finding_json(f: Finding) -> dict:
    return {"check": f.check, "caught": f.caught, "detail": f.detail,
            "detect_s": round(f.detect_s, 3), "total_s": round(f.total_s, 3),
            "steps": f.steps}


def run_matrix(levels=("core",), budget: Budget = BUDGETS["small"], mutants=None,
               progress: Callable[[str], None] = lambda line: None) -> Matrix:
    """Run the chosen mutants (default: every possible one) against the checks of levels."""
    wanted = sorted(parse_mutants(mutants) if mutants else
                    [m for m in Mutant if m.possible], key=lambda m: int(m.code[1:]))
    # only checks some chosen mutant's layer can reach (their baselines are not free)
    chosen = [c for c in checks() if c.level in levels and any(map(c.applies_to, wanted))]
    start = time.perf_counter()
    baseline = []
    for check in chosen:
        progress(f"baseline: {check.name} without mutants ...")
        finding = check.run(NONE, budget)
        baseline.append(finding)
        progress(f"baseline: {check.name}: "
                 f"{'FAILS without mutants: ' + finding.detail if finding.caught else 'clean'}"
                 f" ({finding.total_s:.1f} s)")
    broken = {f.check for f in baseline if f.caught}
    rows = [Row(m, None, skipped=_why_absent(m)) for m in Mutant
            if not m.possible and not mutants]
    for index, mutant in enumerate(wanted, 1):
        rows.append(_run_one(mutant, [c for c in chosen if c.name not in broken], budget,
                             lambda text, i=index: progress(f"[{i}/{len(wanted)}] {text}")))
    rows.sort(key=lambda r: int(r.mutant.code[1:]))
    return Matrix(tuple(levels), budget, tuple(baseline), tuple(rows),
                  time.perf_counter() - start)


def _why_absent(mutant: Mutant) -> str:
    return "cannot exist in this design (impl/mutants.py M12_ABSENT)"


def _run_one(mutant: Mutant, chosen: list[Check], budget: Budget, progress) -> Row:
    tried, last = [], None
    for check in (c for c in chosen if c.applies_to(mutant)):
        progress(f"{mutant.code} {check.name} ...")
        finding = check.run(frozenset({mutant}), budget)
        tried.append(check.name)
        last = finding
        progress(f"{mutant.code} {check.name}: "
                 f"{'caught' if finding.caught else 'not caught'} ({finding.total_s:.1f} s)")
        if finding.caught:
            return Row(mutant, finding, tuple(tried))
    return Row(mutant, last, tuple(tried),
               skipped="" if tried else "no check of these levels exercises its layer")


# -- output -----------------------------------------------------------------------------------
def format_matrix(matrix: Matrix) -> Iterator[str]:
    yield (f"mutant detection matrix: levels {', '.join(matrix.level)}, budget "
           f"{matrix.budget.name} ({matrix.budget.examples} examples x {matrix.budget.steps} "
           f"steps), {matrix.seconds:.1f} s")
    for f in matrix.baseline:
        state = "FAILS WITHOUT MUTANTS (excluded): " + f.detail if f.caught else "clean"
        yield f"  baseline {f.check}: {state} ({f.total_s:.1f} s)"
    yield ""
    head = f"{'mutant':<6} {'layer':<11} {'caught':<6} {'by':<24} {'detect':>7} {'total':>7} " \
           f"{'steps':>5}  breaks / detail"
    yield head
    yield "-" * len(head)
    for row in matrix.rows:
        f = row.finding
        if f is None or not f.caught:
            note = row.skipped or f"tried: {', '.join(row.tried)}"
            yield (f"{row.mutant.code:<6} {row.mutant.layer:<11} {'no':<6} {'-':<24} "
                   f"{'-':>7} {'-':>7} {'-':>5}  {row.mutant.breaks}")
            yield f"{'':<6} {'':<11} {'':<6} {'':<24} {'':>7} {'':>7} {'':>5}  ({note})"
            continue
        steps = "-" if f.steps is None else str(f.steps)
        yield (f"{row.mutant.code:<6} {row.mutant.layer:<11} {'yes':<6} {f.check:<24} "
               f"{f.detect_s:>6.2f}s {f.total_s:>6.2f}s {steps:>5}  {row.mutant.breaks}")
        yield f"{'':<6} {'':<11} {'':<6} {'':<24} {'':>7} {'':>7} {'':>5}  <- {f.detail}"
    caught = sum(r.caught for r in matrix.rows)
    runnable = sum(1 for r in matrix.rows if r.mutant.possible)
    yield ""
    yield f"caught {caught} of {runnable} mutants"


@contextlib.contextmanager
def _quiet_logging():
    """Deliberate bugs make brokers log loudly; the matrix is the output."""
    import logging

    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)
