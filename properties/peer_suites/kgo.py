"""franz-go's kgo integration tests (pkg/kgo/*_test.go) against a kafkaref cluster, the way
Nisshi (formerly Tansu) runs them against its broker: the tests that reach a broker read its
address from KGO_SEEDS; KGO_TEST_RF sets their topics' replication factor (3 here, a 3-broker
cluster) and KGO_TEST_RECORDS how many records the ETL tests produce (10000).

Steps: `fetch_source` (the go command downloads franz-go at the pinned version from the Go
module proxy; its files are copied out of the read-only module cache), `build` (`go test -c` of
pkg/kgo, once, into the cache), `broker_tests` (the tests whose code reaches getSeedBrokers:
the others are unit tests that never open a connection), then `run_suite`: a LocalCluster on
127.0.0.1, one test binary process per test (in a session of its own, killed with its children
at the deadline: counted as failed, its log kept), parsed into rows, and a summary: passed /
failed / skipped per test, failures grouped by cause, the out-of-scope features named.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable

from kafkaref.properties.peer_suites.results import Row, counts, failures_by_cause

FRANZ_GO = "github.com/twmb/franz-go"
FRANZ_GO_VERSION = "v1.22.3"
RECORDS = 10_000  # KGO_TEST_RECORDS, as Nisshi runs the suite
GO_TIMEOUT_S = 900

# Features kafkaref does not have (README, "out of scope"): a test named for one of them fails
# for that reason, whatever its message.
OUT_OF_SCOPE: tuple[tuple[str, str], ...] = (
    (r"Txn|Transact", "out of scope: transactions"),
    (r"848", "out of scope: KIP-848 consumer groups"),
    (r"Share", "out of scope: share groups (KIP-932)"),
    (r"SCRAM|OAuth|SASL", "out of scope: SASL"),
)


class SuiteError(RuntimeError):
    """The suite cannot be fetched, built or started; the message is one line."""


def _go(args: list[str], cwd: str, what: str, env: dict | None = None) -> str:
    try:
        done = subprocess.run(["go", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=GO_TIMEOUT_S, env=env, check=False)
    except FileNotFoundError:
        raise SuiteError(f"{what}: the go command is not installed (Go 1.26 is needed)") from None
    except subprocess.TimeoutExpired:
        raise SuiteError(f"{what}: go did not finish in {GO_TIMEOUT_S} s") from None
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SuiteError(f"{what} failed (exit {done.returncode}): {last[0][:300]}")
    return done.stdout


# -- fetch and build -----------------------------------------------------------------------------

def fetch_source(cache_dir: str, version: str = FRANZ_GO_VERSION) -> str:
    """franz-go's module at version, copied into cache_dir (writable: go test builds there)."""
    src = os.path.join(cache_dir, f"franz-go-{version}")
    if os.path.exists(os.path.join(src, "pkg", "kgo", "helpers_test.go")):
        return src
    os.makedirs(cache_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:  # outside any module: download by path@version
        found = json.loads(_go(["mod", "download", "-json", f"{FRANZ_GO}@{version}"], scratch,
                               f"downloading {FRANZ_GO}@{version}",
                               env={**os.environ, "GOFLAGS": "-mod=mod"}))
    staging = tempfile.mkdtemp(prefix=".fetching-", dir=cache_dir)
    try:
        shutil.copytree(found["Dir"], staging, dirs_exist_ok=True)
        for root, dirs, files in os.walk(staging):  # the module cache's files are read-only
            for name in dirs + files:
                os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
        os.rename(staging, src)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return src


def test_binary(src: str) -> str:
    return os.path.join(src, "kgo.test")


def build(src: str) -> str:
    """`go test -c` of pkg/kgo (once); the test binary's path."""
    binary = test_binary(src)
    if not os.path.exists(binary):
        _go(["test", "-c", "-o", binary + ".tmp", "./pkg/kgo"], src, "go test -c ./pkg/kgo")
        os.rename(binary + ".tmp", binary)
    return binary


# -- which tests reach a broker --------------------------------------------------------------------

_FUNC = re.compile(r"^func (?:\([^)]*\) )?(?P<name>\w+)\s*[\[(]", re.M)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def _functions(text: str) -> dict[str, str]:
    """Top-level Go function (and method) name -> its source, cut at the next `func`."""
    found = list(_FUNC.finditer(text))
    return {m["name"]: text[m.start():(found[i + 1].start() if i + 1 < len(found) else None)]
            for i, m in enumerate(found)}


def broker_tests(src: str) -> list[str]:
    """The Test functions of pkg/kgo whose code reaches getSeedBrokers (the one reader of
    KGO_SEEDS), following calls by name through the test files' functions (the package's own
    would match any common method name)."""
    kgo = os.path.join(src, "pkg", "kgo")
    functions: dict[str, str] = {}
    for name in sorted(os.listdir(kgo)):
        if name.endswith("_test.go"):  # the tests and their helpers
            with open(os.path.join(kgo, name)) as f:
                functions.update(_functions(f.read()))
    calls = {name: set(_WORD.findall(body)) & functions.keys() - {name}
             for name, body in functions.items()}
    reaching = {"getSeedBrokers"}
    while True:
        more = {name for name, called in calls.items() if called & reaching} - reaching
        if not more:
            break
        reaching |= more
    return sorted(n for n in reaching if n.startswith("Test"))


# -- running ---------------------------------------------------------------------------------------

_RESULT = re.compile(r"^--- (?P<state>PASS|FAIL|SKIP): (?P<name>\S+) \((?P<seconds>[0-9.]+)s\)")
_FAILURE_LINE = re.compile(r"^\s+(?P<where>\w+_test\.go:\d+): (?P<message>.+)$")


def parse(name: str, output: str, seconds: float, timed_out: bool) -> Row:
    """The test's own verdict line (not its subtests'), or TIMEOUT / CRASHED."""
    states = {"PASS": "PASSED", "FAIL": "FAILED", "SKIP": "SKIPPED"}
    for line in output.splitlines():
        match = _RESULT.match(line)
        if match and match["name"] == name:
            state = states[match["state"]]
            return Row(name, state, float(match["seconds"]), _why(output) if state != "PASSED"
                       else "")
    if timed_out or "panic: test timed out" in output:
        running = _running(output)
        return Row(name, "TIMEOUT", seconds, "killed at its deadline" + (
            f" while running {', '.join(running)}" if running else ""))
    return Row(name, "CRASHED", seconds, _why(output) or "no verdict line")


def _running(output: str) -> list[str]:
    """The (sub)tests Go's timeout panic names as still running, innermost ones only."""
    lines = output.split("running tests:", 1)[-1].splitlines()[1:] if "running tests:" in \
        output else []
    names = []
    for line in lines:
        if not line.startswith("\t\t"):
            break
        names.append(line.strip().rsplit(" (", 1)[0])
    return [n for n in names if not any(other.startswith(n + "/") for other in names)][:4]


def _why(output: str) -> str:
    """The first failure (or skip) message the test printed: `file_test.go:N: message`."""
    for line in output.splitlines():
        match = _FAILURE_LINE.match(line)
        if match:
            return f"{match['where']}: {match['message'].strip()}"[:300]
    return ""


def run_test(binary: str, name: str, env: dict[str, str], deadline_s: float,
             log_dir: str) -> Row:
    """One test in a test binary process of its own; killed (its whole session) at the
    deadline. Its output is kept in log_dir/NAME.log."""
    log_path = os.path.join(log_dir, f"{name}.log")
    started = time.monotonic()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [binary, "-test.run", f"^{name}$", "-test.v", "-test.count", "1",
             "-test.timeout", f"{int(deadline_s)}s"],
            cwd=os.path.dirname(binary), env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out = False
        try:
            process.wait(deadline_s + 30)  # the binary's own -test.timeout panics first
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_session(process)
    with open(log_path, errors="replace") as f:
        output = f.read()
    return parse(name, output, time.monotonic() - started, timed_out)


def _kill_session(process: subprocess.Popen) -> None:
    """SIGKILL the process and everything it started (its own session): nothing left running."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(10)


def cause_of(row: Row) -> str:
    for pattern, cause in OUT_OF_SCOPE:
        if re.search(pattern, row.name):
            return cause
    if row.state == "TIMEOUT":
        return "killed at the deadline"
    # the same failure in tests that differ only by their random topic names and line numbers
    general = re.sub(r"\d+", "N", re.sub(r'"[^"]*"', '"..."', row.reason))
    return general[:120] or row.state.lower()


def run_suite(cache_dir: str, work_dir: str, tests: Iterable[str] | None = None, *,
              bootstrap: str | None = None, brokers: int = 3, records: int = RECORDS,
              deadline_s: float = 600.0, log: Callable[[str], None] = print) -> list[Row]:
    """Fetch, build, start a cluster (unless bootstrap is given), run each test, stop."""
    from kafkaref.impl.server.local_cluster import LocalCluster

    src = fetch_source(cache_dir)
    binary = build(src)
    chosen = list(tests) if tests else broker_tests(src)
    os.makedirs(work_dir, exist_ok=True)
    cluster = None
    if bootstrap is None:
        cluster = LocalCluster(brokers, os.path.join(work_dir, "cluster")).start()
        bootstrap = cluster.bootstrap
    replication = str(min(3, brokers if cluster is not None else len(bootstrap.split(","))))
    env = {**os.environ, "KGO_SEEDS": bootstrap, "KGO_TEST_RF": replication,
           "KGO_TEST_RECORDS": str(records), "KGO_LOG_LEVEL": "info"}
    log(f"franz-go {FRANZ_GO_VERSION} kgo: {len(chosen)} tests against {bootstrap} "
        f"(KGO_TEST_RF={replication}, KGO_TEST_RECORDS={records})")
    rows = []
    try:
        for index, name in enumerate(chosen, 1):
            row = run_test(binary, name, env, deadline_s, work_dir)
            rows.append(row)
            log(f"[{index}/{len(chosen)}] {name} {row.state} ({row.duration_s:.1f} s)")
    finally:
        if cluster is not None:
            cluster.stop()
    return rows


def summary(rows: list[Row]) -> str:
    lines = [f"franz-go {FRANZ_GO_VERSION} kgo integration tests against kafkaref", ""]
    for row in rows:
        why = f"  {row.reason}" if row.reason and row.state != "PASSED" else ""
        lines.append(f"  {row.name:<56} {row.state:<8} {row.duration_s:8.1f} s{why}")
    total = counts(rows)
    lines += ["", f"{total.passed} passed, {total.failed} failed, {total.skipped} skipped "
                  f"({total.ran} tests reached a verdict)"]
    grouped = failures_by_cause(rows, cause_of)
    if grouped:
        lines += ["", "failures by cause:"]
        lines += [f"  {cause} ({len(found)}): " + ", ".join(r.name for r in found)
                  for cause, found in grouped.items()]
    return "\n".join(lines)
