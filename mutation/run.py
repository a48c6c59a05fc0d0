"""Mutation testing of kafkaref with Cosmic Ray: a seeded random sample, each folder's own tests.

    python mutation/run.py run [--sample 400] [--seed 26] [--minutes M] [--folder impl/core] [--workers N]
    python mutation/run.py report [--markdown] [--survivors]
    python mutation/run.py test --mutant MODULE:LINE:OPERATOR       # one mutant against its tests
    python mutation/run.py conform --mutant MODULE:LINE:OPERATOR    # kafkaref conform on it

Cosmic Ray (8.x) is the engine: its operators make the mutants, its `mutate_and_test` applies one
to the file, runs the test command under a timeout and puts the file back, and its session
database (sqlite) stores each result. This driver adds what kafkaref needs (docs/mutation.md):

- the population is every mutant of the folders in FOLDERS made by the operators in OPERATORS
  (small realistic bugs; the exotic swaps such as `+` to `**` are left out);
- a seeded random sample of it is run in sample order, so a partial run is itself a random sample
  and the score's 95% (Wilson) interval says what a sample of that size is worth;
- each mutant runs its folder's own test layer (FOLDERS), stopping at the first failure;
- the mutants are applied to a copy of the committed tree under ~/.cache/kafkaref/mutation/<commit>
  (imported through its own `kafkaref` package on PYTHONPATH), never to the work tree: no mutant
  is reachable from a normal build, and the copy is re-extracted before each run, so a run killed
  mid-mutant leaves nothing behind;
- the session is kept per commit: `run` again resumes where the last one stopped;
- mutation/equivalent.toml lists the surviving mutants that are equivalent (one line why each);
  the report counts them apart and never as survivors.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import io
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
import tomllib
from collections import Counter
from pathlib import Path

import attrs
import coverage
from cosmic_ray.ast import ast_nodes, get_ast_from_path
from cosmic_ray.mutating import mutate_and_test, mutate_code
from cosmic_ray.plugins import get_operator
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import MutationSpec, TestOutcome, WorkerOutcome, WorkItem, WorkResult

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("KAFKAREF_CACHE", Path.home() / ".cache" / "kafkaref")) / "mutation"
EQUIVALENT = ROOT / "mutation" / "equivalent.toml"

# The folders mutated, each with the test layer that runs against its mutants.
FOLDERS = {
    "impl/core": "properties/tests/core",
    "impl/storage": "properties/tests/storage",
    "impl/server": "properties/tests/server",
    "impl/replication": "properties/tests/cluster/test_cluster_lockstep.py properties/tests/core",
    # the controller's decisions (state.py) are the core lockstep's and core machine's too
    "impl/controller": "properties/tests/cluster properties/tests/core/test_core_lockstep.py "
                       "properties/tests/core/test_core_machine.py",
    "model": "properties/tests/model",
}
# Layers whose tests run the folder's code in the test process (threads included): their line
# coverage is exact, so a mutant on a line the layer never runs is a survivor without a run. The
# server and cluster layers run brokers in child processes, which coverage does not follow here.
IN_PROCESS = {"impl/core", "impl/storage", "impl/replication", "model"}
LAYERS = ("spec", "model", "impl", "history", "chaos", "spark_checks", "properties", "commands")

# Cosmic Ray operators that make the bugs a person writes: off-by-one comparisons and constants,
# a flipped condition or boolean, a sign, and/or, break/continue, a loop that never runs.
OPERATORS = [
    *(f"core/ReplaceBinaryOperator_{pair}" for pair in (
        "Add_Sub", "Sub_Add", "Mul_Div", "Div_Mul", "FloorDiv_Mul", "Mod_FloorDiv",
        "BitAnd_BitOr", "BitOr_BitAnd")),
    *(f"core/ReplaceComparisonOperator_{pair}" for pair in (
        "Eq_NotEq", "NotEq_Eq", "Lt_LtE", "LtE_Lt", "Gt_GtE", "GtE_Gt", "Lt_Gt", "Gt_Lt",
        "LtE_GtE", "GtE_LtE", "Is_IsNot", "IsNot_Is")),
    "core/ReplaceUnaryOperator_Delete_Not", "core/ReplaceUnaryOperator_USub_UAdd",
    "core/AddNot", "core/ReplaceTrueWithFalse", "core/ReplaceFalseWithTrue",
    "core/ReplaceAndWithOr", "core/ReplaceOrWithAnd",
    "core/ReplaceBreakWithContinue", "core/ReplaceContinueWithBreak",
    "core/NumberReplacer", "core/ZeroIterationForLoop",
]
TIMEOUT_FACTOR = 3  # a mutant's test run may take this many times the unmutated run
MIN_TIMEOUT = 60.0


def tree_commit() -> str:
    return subprocess.check_output(["git", "-C", str(ROOT), "rev-parse", "HEAD"], text=True).strip()


class Session:
    """One commit's mutation session: the tree copy, the sample and the Cosmic Ray database."""

    def __init__(self, commit: str):
        self.commit = commit
        self.home = CACHE / commit[:12]  # a session named by a short commit: `--commit` takes one
        self.tree = self.home / "tree"
        self.archive = self.home / "tree.tar"
        self.db_path = self.home / "session.sqlite"
        self.meta_path = self.home / "meta.json"

    @property
    def meta(self) -> dict:
        return json.loads(self.meta_path.read_text())

    def exists(self) -> bool:
        return self.meta_path.exists()

    def restore_tree(self) -> None:
        """Extract the committed tree over the copy: undoes a mutant left by a killed run."""
        extract_tree(self.archive, self.tree)

    def scratch(self, name: str) -> Path:
        """A fresh copy of the committed tree of its own (home/scratch/NAME), for one mutant
        applied by hand (`test`, `conform`; each names its own, so the two can run at once):
        never the work tree, never the sample's copy."""
        tree = self.home / "scratch" / name
        if tree.exists():
            shutil.rmtree(tree)
        extract_tree(self.archive, tree)
        return tree

    def extract(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.archive_tree()
        self.restore_tree()

    def archive_tree(self) -> None:
        if not self.archive.exists():
            data = subprocess.check_output(["git", "-C", str(ROOT), "archive", "--format=tar", self.commit])
            partial = self.archive.with_suffix(f".{os.getpid()}")
            partial.write_bytes(data)
            partial.replace(self.archive)  # whole or absent: a run beside this one may read it

    def create(self, sample: int, seed: int) -> None:
        self.extract()
        population = enumerate_mutants(self.tree)
        rng = random.Random(seed)
        chosen = rng.sample(population, min(sample, len(population)))
        with use_db(str(self.db_path), WorkDB.Mode.create) as db:
            db.clear()
            db.add_work_items(
                WorkItem.single(job_id=f"{index:05d}", mutation=spec) for index, spec in enumerate(chosen)
            )
        counts = Counter(folder_of(self.tree, spec.module_path) for spec in population)
        self.meta_path.write_text(json.dumps(
            {"commit": self.commit, "seed": seed, "sample": len(chosen), "population": counts,
             "baseline_seconds": {}}, indent=2))


def extract_tree(archive: Path, tree: Path) -> None:
    """The archived tree into TREE, importable as `kafkaref` from TREE/.pkgroot (PYTHONPATH)."""
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    package = tree / ".pkgroot" / "kafkaref"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    for layer in LAYERS:
        link = package / layer
        if not link.is_symlink():
            link.symlink_to(tree / layer)


def folder_of(tree: Path, module_path) -> str:
    relative = Path(module_path).relative_to(tree).as_posix()
    return next(folder for folder in FOLDERS if relative.startswith(folder + "/"))


def enumerate_mutants(tree: Path) -> list[MutationSpec]:
    """Every mutant of FOLDERS by OPERATORS, in a stable order (file, operator, occurrence).
    The benchmarks (bench.py, groups_bench.py) are timing harnesses, not the broker: left out."""
    operators = [(name, get_operator(name)()) for name in OPERATORS]
    mutants = []
    for folder in FOLDERS:
        for path in sorted((tree / folder).glob("*.py")):
            if "bench" in path.stem:
                continue
            module = get_ast_from_path(path)
            nodes = list(ast_nodes(module))
            for name, operator in operators:
                positions = mutation_positions(nodes, operator)
                mutants += [
                    MutationSpec(module_path=str(path), operator_name=name, occurrence=occurrence,
                                 start_pos=start, end_pos=end)
                    for occurrence, (start, end) in enumerate(positions)
                ]
    return mutants


def mutation_positions(nodes, operator) -> list:
    return [pos for node in nodes for pos in operator.mutation_positions(node)]


def parse_mutant(tree: Path, text: str) -> MutationSpec:
    """MODULE:LINE:OPERATOR[:K], e.g. impl/core/broker.py:153:ReplaceComparisonOperator_NotEq_Eq:
    the K-th (default the first) mutant OPERATOR makes on LINE of MODULE, in TREE."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(p.isdigit() for p in parts[1::2]):
        sys.exit(f"mutation: a mutant is MODULE:LINE:OPERATOR[:K], not {text!r}")
    path, line, name = tree / parts[0], int(parts[1]), "core/" + parts[2].removeprefix("core/")
    if not path.is_file():
        sys.exit(f"mutation: no module {parts[0]} in the committed tree")
    try:
        operator = get_operator(name)()
    except KeyError:
        sys.exit(f"mutation: no Cosmic Ray operator {parts[2]}")
    positions = mutation_positions(list(ast_nodes(get_ast_from_path(path))), operator)
    on_line = [(occurrence, pos) for occurrence, pos in enumerate(positions) if pos[0][0] == line]
    choice = int(parts[3]) if len(parts) == 4 else 0
    if choice >= len(on_line):
        sys.exit(f"mutation: {parts[2]} makes {len(on_line)} mutant(s) on {parts[0]}:{line}")
    occurrence, (start, end) = on_line[choice]
    return MutationSpec(module_path=str(path), operator_name=name, occurrence=occurrence,
                        start_pos=start, end_pos=end)


def mutant_name(tree: Path, spec: MutationSpec) -> str:
    """MODULE:LINE:OPERATOR[:K], the name parse_mutant reads back."""
    positions = mutation_positions(list(ast_nodes(get_ast_from_path(Path(spec.module_path)))),
                                   get_operator(spec.operator_name)())
    line = spec.start_pos[0]
    choice = sum(1 for start, _ in positions[:spec.occurrence] if start[0] == line)
    module = Path(spec.module_path).relative_to(tree).as_posix()
    name = f"{module}:{line}:{spec.operator_name.removeprefix('core/')}"
    return f"{name}:{choice}" if choice else name


def pick(args) -> None:
    """A seeded random handful of HEAD's mutants of the given folders, one name a line (for
    `test` and `conform`), annotations left out."""
    session = Session(tree_commit())
    session.extract()
    population = [spec for spec in enumerate_mutants(session.tree)
                  if folder_of(session.tree, spec.module_path) in args.folder and not in_annotation(spec)]
    for spec in random.Random(args.seed).sample(population, min(args.count, len(population))):
        print(mutant_name(session.tree, spec))


def apply_mutant(spec: MutationSpec) -> str:
    """Write the mutant into its file (in a scratch copy); returns its diff."""
    path = Path(spec.module_path)
    original = path.read_text()
    mutated = mutate_code(original, get_operator(spec.operator_name)(), spec.occurrence)
    path.write_text(mutated)
    return "\n".join(difflib.unified_diff(original.split("\n"), mutated.split("\n"), lineterm="", n=0))


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)


def test_command(folder: str, tests: str | None = None) -> str:
    return f"{sys.executable} -m pytest -x -q -p no:cacheprovider --no-header {tests or FOLDERS[folder]}"


def prepare_environment(session: Session, tree: Path | None = None) -> None:
    """The tests run in the copy, import kafkaref from it, with the deterministic profile."""
    tree = tree or session.tree
    os.chdir(tree)
    os.environ["PYTHONPATH"] = str(tree / ".pkgroot")
    os.environ["HYPOTHESIS_PROFILE"] = "ci"


def baseline(session: Session, folder: str) -> float:
    """The unmutated layer's time (measured once); it must pass, or no mutant can be judged."""
    meta = session.meta
    if folder not in meta["baseline_seconds"]:
        start = time.monotonic()
        run = subprocess.run(test_command(folder).split(), capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"mutation: the unmutated tests of {folder} fail; fix them first:\n{run.stdout[-3000:]}")
        meta["baseline_seconds"][folder] = round(time.monotonic() - start, 1)
        session.meta_path.write_text(json.dumps(meta, indent=2))
        print(f"baseline {folder}: {meta['baseline_seconds'][folder]} s", flush=True)
    return meta["baseline_seconds"][folder]


def covered_lines(session: Session, folder: str) -> dict[str, set[int]] | None:
    """file -> the lines the folder's layer runs (None: not measurable in process). Measured once
    per session with coverage.py; the data file is kept in the session's folder."""
    if folder not in IN_PROCESS:
        return None
    data_file = session.home / f"coverage-{folder.replace('/', '-')}"
    if not data_file.exists():
        command = test_command(folder).replace(" -m pytest -x", f" -m coverage run --data-file={data_file}"
                                               f" --include={session.tree / folder}/* -m pytest -x", 1)
        print(f"coverage of {folder}'s layer ...", flush=True)
        if subprocess.run(command.split(), capture_output=True).returncode != 0:
            data_file.unlink(missing_ok=True)
            sys.exit(f"mutation: the unmutated tests of {folder} fail under coverage")
    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    return {path: set(data.lines(path) or ()) for path in data.measured_files()}


def runs(lines: dict[str, set[int]], spec: MutationSpec) -> bool:
    """Whether the layer runs the statement holding the mutant. coverage.py records the lines
    a statement's code runs on, which for a statement over several lines need not include its
    first (a condition opened by `if (` alone on its line records the lines of its terms) nor
    the mutant's own (the `-6` of a tuple written over two lines is recorded on the first):
    the mutant runs when its own line or its statement's first line was recorded."""
    path = str(spec.module_path)
    covered = lines.get(path, ())
    line = spec.start_pos[0]
    return line in covered or statement_start(path, line) in covered


@functools.cache
def _parsed(path: str):
    from coverage.parser import PythonParser

    parser = PythonParser(filename=path)
    parser.parse_source()
    return parser


def statement_start(path: str, line: int) -> int:
    return _parsed(path).first_line(line)


def not_covered(spec: MutationSpec) -> WorkResult:
    """A survivor judged without a run: no test of its layer executes the mutated line."""
    original = Path(spec.module_path).read_text()
    mutated = mutate_code(original, get_operator(spec.operator_name)(), spec.occurrence)
    diff = "\n".join(difflib.unified_diff(original.split("\n"), (mutated or original).split("\n"),
                                          lineterm="", n=3))
    return WorkResult(worker_outcome=WorkerOutcome.NORMAL, test_outcome=TestOutcome.SURVIVED,
                      output=NOT_COVERED, diff=diff)


NOT_COVERED = "not covered"
ANNOTATION = "in an annotation"


@functools.cache
def annotation_spans(path: str) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """(start, end) of every type annotation of a module: kafkaref's modules postpone their
    evaluation (`from __future__ import annotations`), so a mutant inside one (the BitOr swap of
    `X | None`, mostly) changes nothing that runs: equivalent by rule, never run."""
    spans = []
    for node in ast.walk(ast.parse(Path(path).read_text())):
        annotation = getattr(node, "annotation", None) or getattr(node, "returns", None)
        if isinstance(annotation, ast.expr):
            spans.append(((annotation.lineno, annotation.col_offset),
                          (annotation.end_lineno, annotation.end_col_offset)))
    return tuple(spans)


def in_annotation(spec: MutationSpec) -> bool:
    return any(start <= tuple(spec.start_pos) < end for start, end in annotation_spans(str(spec.module_path)))


def run(args) -> None:
    os.nice(args.nice)
    session = Session(args.commit or tree_commit())
    if not session.exists():
        print(f"mutation: new session for {session.commit[:12]} in {session.home}", flush=True)
        session.create(args.sample, args.seed)
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else math.inf
    if args.worker:
        return work(session, args, deadline)
    session.restore_tree()
    prepare_environment(session)
    if args.retry_timeouts:
        retry_timeouts(session)
    pending = pending_items(session, args.folder)
    if args.workers > 1 and pending:
        prepare_folders(session, pending)
        run_workers(session, args, deadline)
    else:
        judge_items(session, session.tree, pending, deadline)
    report(argparse.Namespace(commit=session.commit, markdown=False, survivors=False))


def retry_timeouts(session: Session) -> None:
    """Forget every timed-out result, so this run judges those mutants again. A loaded machine
    turns slow survivors into timeouts, which count as killed: judge them again on a quiet one."""
    with sqlite3.connect(session.db_path) as db:
        cleared = db.execute("DELETE FROM work_results WHERE output = 'timeout'").rowcount
    print(f"mutation: {cleared} timed-out mutant(s) to judge again", flush=True)


def pending_items(session: Session, folders: list[str] | None) -> list[tuple[WorkItem, str]]:
    """(item, folder) of every sampled mutant not judged yet, in sample order."""
    with use_db(str(session.db_path), WorkDB.Mode.open) as db:
        done = {job_id for job_id, _ in db.results}
        items = sorted((i for i in db.work_items if i.job_id not in done), key=lambda i: i.job_id)
    chosen = [(item, folder_of(session.tree, item.mutations[0].module_path)) for item in items]
    return [(item, folder) for item, folder in chosen if not folders or folder in folders]


def judge_items(session: Session, tree: Path, items, deadline: float) -> None:
    """Judge items in order in tree (the session's copy, or a worker's), each result stored as
    it comes, until the deadline."""
    with use_db(str(session.db_path), WorkDB.Mode.open) as db:
        for item, folder in items:
            if time.monotonic() > deadline:
                print("mutation: time budget spent; `run` again resumes here", flush=True)
                break
            start = time.monotonic()
            result = judge(session, tree, item.mutations[0], folder)
            db.set_result(item.job_id, result)
            print(f"{item.job_id} {outcome(result):10} {time.monotonic() - start:6.1f}s "
                  f"{describe(session, item)}", flush=True)


def judge(session: Session, tree: Path, spec: MutationSpec, folder: str) -> WorkResult:
    """One mutant's result: equivalent by rule in an annotation, a survivor without a run on a
    line its in-process layer never runs, else its layer's tests run against it in tree."""
    lines = covered_lines(session, folder)
    if in_annotation(spec):
        return WorkResult(worker_outcome=WorkerOutcome.NORMAL, test_outcome=TestOutcome.SURVIVED,
                          output=ANNOTATION, diff=not_covered(spec).diff)
    if lines is not None and not runs(lines, spec):
        return not_covered(spec)
    timeout = max(MIN_TIMEOUT, TIMEOUT_FACTOR * baseline(session, folder))
    moved = attrs.evolve(spec, module_path=tree / Path(spec.module_path).relative_to(session.tree))
    return mutate_and_test([moved], test_command(folder), timeout)


# -- several workers: each judges every Nth pending mutant in a copy of the tree of its own ------
def prepare_folders(session: Session, items) -> None:
    """Every baseline and coverage the items need, measured once before the workers start (in
    the session's copy, which the workers never mutate: they read their mutants' lines there)."""
    for folder in dict.fromkeys(folder for _, folder in items):
        baseline(session, folder)
        covered_lines(session, folder)


def run_workers(session: Session, args, deadline: float) -> None:
    minutes = 0 if deadline == math.inf else max(0.1, (deadline - time.monotonic()) / 60)
    command = [sys.executable, str(Path(__file__).resolve()), "run", "--commit", session.commit,
               "--minutes", str(minutes), "--nice", "0", "--workers", str(args.workers)]
    command += [arg for folder in args.folder or () for arg in ("--folder", folder)]
    workers = [subprocess.Popen([*command, "--worker", str(k)], cwd=ROOT) for k in range(args.workers)]
    try:
        for worker in workers:
            worker.wait()
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
                worker.wait()


def work(session: Session, args, deadline: float) -> None:
    """Worker K of N (`--worker K`, started by `run --workers N`): the pending mutants whose job
    number is K modulo N (fixed by the sample, whatever the others have judged when this one
    starts), in a fresh copy of the tree (home/workers/K)."""
    k, n = int(args.worker), args.workers
    tree = session.home / "workers" / str(k)
    extract_tree(session.archive, tree)
    prepare_environment(session, tree)
    mine = [(item, folder) for item, folder in pending_items(session, args.folder)
            if int(item.job_id) % n == k]
    judge_items(session, tree, mine, deadline)


def recheck(args) -> None:
    """The survivors of an older commit's session, each applied to HEAD's tree and run against
    HEAD's tests: whether the tests added since kill them (the source must not have moved)."""
    os.nice(args.nice)
    old, new = Session(args.commit), Session(tree_commit())
    new.extract()
    prepare_environment(new)
    with use_db(str(old.db_path), WorkDB.Mode.open) as db:
        _, survivors = tally(old, db)
    for item, result in survivors:
        if args.job and item.job_id not in args.job:
            continue
        spec = item.mutations[0]
        moved = attrs.evolve(spec, module_path=new.tree / Path(spec.module_path).relative_to(old.tree))
        folder = folder_of(new.tree, moved.module_path)
        rerun = mutate_and_test([moved], test_command(folder), max(MIN_TIMEOUT, 3 * baseline(old, folder)))
        same = changed_lines(rerun.diff) == changed_lines(result.diff)
        print(f"{item.job_id} {outcome(rerun) if same else 'moved':10} {describe(old, item)}", flush=True)


def test(args) -> None:
    """Mutants named by hand (--mutant), each in a scratch copy of HEAD's tree, against its
    folder's test layer (or --tests): killed or survived, with the first failing test."""
    os.nice(args.nice)
    session = Session(tree_commit())
    session.home.mkdir(parents=True, exist_ok=True)
    session.archive_tree()
    for text in args.mutant:
        tree = session.scratch("test-" + slug(text))
        try:
            spec = parse_mutant(tree, text)
            prepare_environment(session, tree)
            command = test_command(folder_of(tree, spec.module_path), args.tests)
            result = mutate_and_test([spec], command, args.timeout)
        finally:
            os.chdir(ROOT)
            shutil.rmtree(tree)
        failed = next((line for line in (result.output or "").splitlines()
                       if line.startswith(("FAILED", "ERROR"))), "")
        print(f"{outcome(result):10} {text}  {failed}".rstrip(), flush=True)


def conform(args) -> None:
    """`kafkaref conform --peer kafkaref` against a cluster built from a mutated copy of HEAD's
    tree (--mutant; `none` for the unmutated baseline): its brokers, and the controller in the
    conform process, import the copy. Each run's verdicts go to home/conform/<checks>/<mutant>-<N>n.json;
    the mutant is killed when a check that passes on the baseline does not pass on it (the
    baseline is run first when this commit's session has none for N nodes)."""
    os.nice(args.nice)
    session = Session(tree_commit())
    session.home.mkdir(parents=True, exist_ok=True)
    session.archive_tree()
    selection = "-".join([*(f"only-{n}" for n in args.only or ()), *(f"skip-{n}" for n in args.skip or ())])
    results = session.home / "conform" / (selection or "all")  # a baseline per selection
    results.mkdir(parents=True, exist_ok=True)
    baseline_path = results / f"none-{args.nodes}n.json"
    mutants = args.mutant if baseline_path.exists() or "none" in args.mutant else ["none", *args.mutant]
    for text in mutants:
        tree = session.scratch("conform-" + slug(text))
        try:
            diff = "" if text == "none" else apply_mutant(parse_mutant(tree, text))
            start = time.monotonic()
            verdicts, code = conform_verdicts(tree, args)
        finally:
            shutil.rmtree(tree)
        record = {"mutant": text, "diff": diff, "nodes": args.nodes, "exit_code": code,
                  "seconds": round(time.monotonic() - start), "verdicts": verdicts}
        (results / f"{slug(text)}-{args.nodes}n.json").write_text(json.dumps(record, indent=2))
        baseline = json.loads(baseline_path.read_text())["verdicts"] if baseline_path.exists() else {}
        print(conform_line(text, record, baseline), flush=True)


def conform_verdicts(tree: Path, args) -> tuple[dict[str, str], int]:
    """check -> pass / fail / skip / error of one conform run on a cluster from TREE."""
    command = [str(Path(sys.executable).parent / "kafkaref"), "conform", "--peer", "kafkaref",
               "--nodes", str(args.nodes), "--json"]
    command += [f"--only={name}" for name in args.only or ()]
    command += [f"--skip={name}" for name in args.skip or ()]
    env = {**os.environ, "PYTHONPATH": str(tree / ".pkgroot"), "HYPOTHESIS_PROFILE": "ci"}
    process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)  # the run and its brokers (they die with it too)
        process.wait()
        return {}, -1
    try:
        outcomes = json.loads(out)["outcomes"]
    except (json.JSONDecodeError, KeyError):
        return {}, process.returncode
    return {o["name"]: o["status"] for o in outcomes}, process.returncode


def conform_line(text: str, record: dict, baseline: dict[str, str]) -> str:
    verdicts = record["verdicts"]
    if not verdicts:
        caught = ["(no verdicts: the run did not finish)"]
    else:
        caught = [f"{name}={status}" for name, status in verdicts.items()
                  if status != "pass" and baseline.get(name, "pass") == "pass"]
    verdict = "killed" if caught else "passed"
    if text == "none":
        verdict, caught = "baseline", [f"{n}={s}" for n, s in verdicts.items() if s != "pass"]
    return (f"{verdict:8} {text} ({record['nodes']} node(s), {record['seconds']} s, "
            f"exit {record['exit_code']}) {' '.join(caught)}").rstrip()


def outcome(result) -> str:
    if result.worker_outcome in (WorkerOutcome.NO_TEST, WorkerOutcome.SKIPPED):
        return "no-mutant"
    if result.worker_outcome != WorkerOutcome.NORMAL or result.test_outcome == TestOutcome.INCOMPETENT:
        return "error"
    if result.test_outcome == TestOutcome.SURVIVED:
        return "uncovered" if result.output == NOT_COVERED else "survived"
    return "timeout" if result.output == "timeout" else "killed"


def describe(session: Session, item) -> str:
    spec = item.mutations[0]
    path = Path(spec.module_path).relative_to(session.tree).as_posix()
    return f"{path}:{spec.start_pos[0]} {spec.operator_name.removeprefix('core/')}"


def changed_lines(diff: str) -> tuple[str, str]:
    """The first removed and added source lines of a mutant's diff, stripped."""
    lines = [line for line in (diff or "").splitlines() if not line.startswith(("---", "+++"))]
    removed = next((line[1:].strip() for line in lines if line.startswith("-")), "")
    added = next((line[1:].strip() for line in lines if line.startswith("+")), "")
    return removed, added


def load_equivalent() -> set[tuple[str, str, str, str]]:
    entries = tomllib.loads(EQUIVALENT.read_text()).get("equivalent", [])
    return {(e["module"], e["operator"], e["line"].strip(), e["mutant"].strip()) for e in entries}


def key(session: Session, item, result) -> tuple[str, str, str, str]:
    spec = item.mutations[0]
    path = Path(spec.module_path).relative_to(session.tree).as_posix()
    return (path, spec.operator_name.removeprefix("core/"), *changed_lines(result.diff))


def wilson(killed: int, total: int, z: float = 1.96) -> tuple[float, float]:
    if total == 0:
        return (0.0, 1.0)
    p = killed / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (max(0.0, centre - half), min(1.0, centre + half))


def tally(session: Session, db: WorkDB) -> tuple[dict, list]:
    equivalent = load_equivalent()
    rows: dict[str, Counter] = {}
    survivors = []
    results = dict(db.results)
    for item in db.work_items:
        folder = folder_of(session.tree, item.mutations[0].module_path)
        row = rows.setdefault(folder, Counter())
        row["sampled"] += 1
        result = results.get(item.job_id)
        if result is None:
            row["pending"] += 1
            continue
        kind = outcome(result)
        if kind in ("survived", "uncovered") and (
                in_annotation(item.mutations[0]) or key(session, item, result) in equivalent):
            kind = "equivalent"
        row[kind] += 1
        if kind in ("survived", "uncovered"):
            survivors.append((item, result))
    return rows, survivors


def score_line(name: str, row: Counter, population: int | str) -> list[str]:
    judged = row["killed"] + row["timeout"] + row["survived"] + row["uncovered"]
    low, high = wilson(row["killed"] + row["timeout"], judged)
    score = f"{100 * (row['killed'] + row['timeout']) / judged:.1f}%" if judged else "-"
    return [name, str(population), str(row["sampled"]), str(row["killed"]), str(row["timeout"]),
            f"{row['survived'] + row['uncovered']} ({row['uncovered']})", str(row["equivalent"]), str(row["error"] + row["no-mutant"]),
            str(row["pending"]), score, f"{100 * low:.0f}-{100 * high:.0f}%" if judged else "-"]


HEADER = ["folder", "mutants", "sampled", "killed", "timed out", "survived (uncovered)", "equivalent",
          "error", "pending", "score", "95% CI"]


def report(args) -> None:
    session = Session(args.commit or tree_commit())
    if not session.exists():
        sys.exit(f"mutation: no session for {session.commit[:12]}; `python mutation/run.py run` makes one")
    meta = session.meta
    with use_db(str(session.db_path), WorkDB.Mode.open) as db:
        rows, survivors = tally(session, db)
        total = sum(rows.values(), Counter())
        table = [score_line(folder, rows[folder], meta["population"].get(folder, 0))
                 for folder in FOLDERS if folder in rows]
        table.append(score_line("all", total, sum(meta["population"].values())))
        print(f"commit {session.commit[:12]}, seed {meta['seed']}, sample {meta['sample']}, "
              f"baseline seconds {meta['baseline_seconds']}")
        print(render(table, args.markdown))
        if args.survivors:
            for item, result in survivors:
                print(f"\n## {item.job_id} {outcome(result)} {describe(session, item)}\n{result.diff}")


def render(table: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in table])
    widths = [max(len(r[i]) for r in [HEADER, *table]) for i in range(len(HEADER))]
    out = io.StringIO()
    for row in [HEADER, *table]:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + "\n")
    return out.getvalue().rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(prog="mutation", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="run (or resume) the sampled mutants")
    run_parser.add_argument("--sample", type=int, default=400, help="mutants sampled (new session)")
    run_parser.add_argument("--seed", type=int, default=26, help="the sample's seed (new session)")
    run_parser.add_argument("--minutes", type=float, default=0, help="stop after this budget (0: none)")
    run_parser.add_argument("--folder", action="append", choices=list(FOLDERS), help="only these folders")
    run_parser.add_argument("--nice", type=int, default=15, help="niceness of the run")
    run_parser.add_argument("--commit", help="resume (or start) this commit's session (default: HEAD)")
    run_parser.add_argument("--workers", type=int, default=1,
                            help="mutants judged at once, each in a tree copy of its own")
    run_parser.add_argument("--retry-timeouts", action="store_true",
                            help="judge the timed-out mutants again (on a quiet machine)")
    run_parser.add_argument("--worker", help=argparse.SUPPRESS)  # K, set by --workers for its children
    report_parser = commands.add_parser("report", help="per-folder score of the session")
    report_parser.add_argument("--commit", help="the session's commit (default: HEAD)")
    report_parser.add_argument("--markdown", action="store_true")
    report_parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    recheck_parser = commands.add_parser("recheck", help="an older session's survivors on HEAD")
    recheck_parser.add_argument("--commit", required=True, help="the older session's commit")
    recheck_parser.add_argument("--nice", type=int, default=15, help="niceness of the run")
    recheck_parser.add_argument("--job", action="append", help="only these survivors (job ids)")
    test_parser = commands.add_parser("test", help="mutants named by hand against their tests")
    test_parser.add_argument("--mutant", action="append", required=True,
                             help="MODULE:LINE:OPERATOR[:K] (repeatable)")
    test_parser.add_argument("--tests", help="pytest arguments instead of the folder's layer")
    test_parser.add_argument("--timeout", type=float, default=900, help="seconds per mutant")
    test_parser.add_argument("--nice", type=int, default=15, help="niceness of the run")
    conform_parser = commands.add_parser("conform", help="kafkaref conform on mutated clusters")
    conform_parser.add_argument("--mutant", action="append", required=True,
                                help="MODULE:LINE:OPERATOR[:K], or none (the baseline; repeatable)")
    conform_parser.add_argument("--nodes", type=int, default=1, help="brokers of the cluster")
    conform_parser.add_argument("--only", action="append", help="conform's --only (repeatable)")
    conform_parser.add_argument("--skip", action="append", help="conform's --skip (repeatable)")
    conform_parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    conform_parser.add_argument("--nice", type=int, default=15, help="niceness of the run")
    pick_parser = commands.add_parser("pick", help="a seeded random handful of mutants, by name")
    pick_parser.add_argument("--folder", action="append", required=True, choices=list(FOLDERS))
    pick_parser.add_argument("--count", type=int, default=10)
    pick_parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args()
    commands = {"pick": pick, "run": run, "report": report, "recheck": recheck, "test": test, "conform": conform}
    commands[args.command](args)


if __name__ == "__main__":
    main()
