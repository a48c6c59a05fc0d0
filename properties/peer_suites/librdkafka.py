"""librdkafka's own integration tests against a kafkaref cluster (issue 15, item 4).

Steps, each usable alone: `fetch_source` (the npm package node-rdkafka carries librdkafka's
source and tests under deps/librdkafka; `npm pack` is the only download), `build` (librdkafka's
./configure + make with Debian's build packages, SSL/SASL/curl off, into a cache directory, done
once), then `run_suite`: a LocalCluster on 127.0.0.1 ephemeral ports with num.partitions 4, the
test.conf the runner reads, one `test-runner` per selected test number (as Redpanda's CI runs
it; a crash or hang costs one number), each under a deadline, parsed into rows, and a summary:
passed / failed / skipped per test, failures grouped by cause. The selection is data:
properties/peer_suites/librdkafka_list.py.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterable

from kafkaref.impl.core.config import KAFKA_INITIAL_REBALANCE_DELAY_MS
from kafkaref.properties.peer_suites import librdkafka_list as listing
from kafkaref.properties.peer_suites.results import Counts, Row
from kafkaref.properties.peer_suites.results import counts as results_counts
from kafkaref.properties.peer_suites.results import failures_by_cause as rows_by_cause

# Debian packages the build needs (zstd and lz4 for those codecs' tests; RapidJSON for the tests
# that check the statistics JSON, which skip themselves without it: 0053, 0098, 0101, 0110).
BUILD_PACKAGES = ("build-essential", "zlib1g-dev", "libzstd-dev", "liblz4-dev", "pkg-config",
                  "rapidjson-dev")
CONFIGURE_FLAGS = ("--no-download", "--disable-ssl", "--disable-gssapi", "--disable-curl")

_ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\(B")
# test.c's summary row: "| 0001_multiobj   |     PASSED |   1.234s | <why it failed/skipped>"
_ROW = re.compile(r"^\|\s*(?P<name>\d{4}_\S+)\s*\|\s*(?P<state>[A-Z]+)\s*\|"
                  r"\s*(?P<duration>[0-9.]+)s\s*\|\s?(?P<reason>.*)$")


@dataclasses.dataclass
class NumberResult:
    """One test-runner process: TESTS=<number>."""

    number: int
    rows: list[Row]
    returncode: int | None
    seconds: float
    log_path: str


# -- parsing ---------------------------------------------------------------------------------

def parse_summary(text: str) -> list[Row]:
    """The rows of the summary table(s) test-runner prints at its end."""
    rows = []
    for line in _ANSI.sub("", text).splitlines():
        match = _ROW.match(line.strip())
        if match:
            rows.append(Row(match["name"], match["state"], float(match["duration"]),
                            match["reason"].strip()))
    return rows


def rows_for(number: int, output: str, returncode: int | None, seconds: float) -> list[Row]:
    """Rows of one run. A failing test often makes test-runner abort in its exit check ("N
    thread(s) still active") before the summary: its failure blocks give the rows then."""
    rows = parse_summary(output)
    if rows:
        blocks = {row.name: row for row in failure_rows(output, seconds)}
        return [dataclasses.replace(row, context=blocks[row.name].context)
                if row.failed and row.name in blocks else row for row in rows]
    rows = failure_rows(output, seconds)
    if rows:
        return rows
    name = listing.test_id(number)
    if returncode is None:
        return [Row(name, "TIMEOUT", seconds, "no summary before the deadline: the runner hung")]
    return [Row(name, "CRASHED", seconds, f"exit code {returncode} without a summary")]


# '### Test "0019_list_groups (do_test_list_groups:162)" failed at FILE:LINE:FUNC() at DATE: ###'
_FAILURE = re.compile(r'^### Test "(?P<name>\d{4}_\S+)(?: \((?P<sub>.*)\))?" failed at '
                      r'(?P<where>\S+?)(?: at .*)?: ###$')


def _why(following: list[str]) -> str:
    """The failure's own message: the first line that is not the client's log ('%3|...') or
    the runner's progress ('[test / 1.0s] ...')."""
    for line in following:
        line = line.strip()
        if line and not line.startswith(("%", "[", "###")):
            return line
    return following[0].strip() if following else ""


def _warnings(before: list[str]) -> str:
    return " | ".join(line.split("] ", 1)[-1].strip() for line in before
                      if "WARN" in line or "not supported" in line)[-600:]


def failure_rows(output: str, seconds: float) -> list[Row]:
    """One FAILED row per test named in a failure block, with the block's first line of why."""
    lines = _ANSI.sub("", output).splitlines()
    rows: dict[str, Row] = {}
    for index, line in enumerate(lines):
        match = _FAILURE.match(line.strip())
        if match and match["name"] not in rows:
            why = _why(lines[index + 1:index + 6])
            where = f" [{match['sub']}]" if match["sub"] else ""
            rows[match["name"]] = Row(match["name"], "FAILED", seconds, f"{why}{where}",
                                      _warnings(lines[max(0, index - 40):index]))
    return list(rows.values())


# failure reason (regex, searched in the runner's fail string) -> cause, first match wins.
# The causes name a missing feature or a broker bug; docs/conformance.md explains each.
CAUSES: tuple[tuple[str, str], ...] = (
    (r"[Tt]ransaction|txn|TRANSACTIONAL|transactional", "transactions (not supported)"),
    (r"DeleteTopics|delete_topics|DeleteRecords|delete_records|CreatePartitions|create_partitions"
     r"|AlterConfigs|DescribeConfigs|alter_configs|describe_configs|Failed to delete topics",
     "admin APIs (DeleteTopics / DeleteRecords / CreatePartitions / *Configs)"),
    (r"ListGroups|DescribeGroups|list_groups|describe_groups|ConsumerGroup",
     "ListGroups / DescribeGroups"),
    (r"KAFKA_PATH", "needs Apache Kafka's command-line tools (KAFKA_PATH)"),
    (r"segment\.bytes='?\d{1,6}\b",
     "segment.bytes below 1 MiB (Kafka 4 refuses it too, KIP-1030)"),
    (r"LogAppendTime", "message.timestamp.type=LogAppendTime (the broker's append time expected "
                       "on every record)"),
    (r"latency .* outside range", "a produce latency bound (a Python broker's latency)"),
    (r"[Uu]nsupported|UNSUPPORTED|not supported", "an API or version kafkaref does not support"),
    (r"group\.instance\.id|static", "static group membership"),
    (r"[Cc]ommit|committed|OffsetFetch|offset fetch", "group offsets (commit / fetch)"),
    (r"rebalance|assignment|Rebalance|assign", "group rebalancing"),
    (r"[Tt]imed out|[Tt]imeout|timeout", "a timeout (the broker too slow, or an answer missing)"),
)


def cause_of(row: Row) -> str:
    for text in (row.reason, row.context):
        for pattern, cause in CAUSES:
            if re.search(pattern, text):
                return cause
    return "other: " + (row.reason[:120] or row.state.lower())


# -- fetch and build ---------------------------------------------------------------------------

def source_dir(cache_dir: str) -> str:
    return os.path.join(cache_dir, "package", "deps", "librdkafka")


def fetch_source(cache_dir: str, log: Callable[[str], None] = print) -> str:
    """npm pack node-rdkafka@VERSION into cache_dir and unpack it; returns librdkafka's dir."""
    src = source_dir(cache_dir)
    if os.path.exists(os.path.join(src, "tests", "test.c")):
        return src
    os.makedirs(cache_dir, exist_ok=True)
    if shutil.which("npm") is None:
        raise RuntimeError("npm is needed to fetch node-rdkafka (apt-get install -y npm)")
    spec = f"node-rdkafka@{listing.NODE_RDKAFKA_VERSION}"
    log(f"fetching {spec} with npm pack")
    subprocess.run(["npm", "pack", spec], cwd=cache_dir, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tarball = os.path.join(cache_dir, f"node-rdkafka-{listing.NODE_RDKAFKA_VERSION}.tgz")
    with tarfile.open(tarball) as archive:
        archive.extractall(cache_dir, filter="data")
    return src


def missing_packages(packages: Iterable[str] = BUILD_PACKAGES) -> list[str]:
    missing = []
    for package in packages:
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                capture_output=True, text=True)
        if "install ok installed" not in status.stdout:
            missing.append(package)
    return missing


def install_build_packages(log: Callable[[str], None] = print) -> None:
    """apt-get install what the build lacks (as root); otherwise say what to install."""
    if shutil.which("dpkg-query") is None:
        return
    missing = missing_packages() + (["npm"] if shutil.which("npm") is None else [])
    if not missing:
        return
    if os.geteuid() != 0:
        raise RuntimeError("the build needs Debian packages: apt-get install -y "
                           + " ".join(missing))
    log(f"installing {' '.join(missing)} with apt-get")
    subprocess.run(["apt-get", "update"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", *missing], check=True,
                   stdout=subprocess.DEVNULL)


def test_runner_path(src: str) -> str:
    return os.path.join(src, "tests", "test-runner")


def build(src: str, log: Callable[[str], None] = print, jobs: int = 2) -> str:
    """configure + make librdkafka and tests/test-runner (niced: the machine is shared);
    returns src."""
    if os.path.exists(test_runner_path(src)):
        return src
    build_log = os.path.join(src, "kafkaref-build.log")
    steps = [["./configure", *CONFIGURE_FLAGS], ["nice", "-n", "10", "make", f"-j{jobs}", "libs"],
             ["nice", "-n", "10", "make", f"-j{jobs}", "-C", "tests", "test-runner"]]
    with open(build_log, "w") as out:
        for step in steps:
            log(f"build: {' '.join(step)} (log: {build_log})")
            if subprocess.run(step, cwd=src, stdout=out, stderr=subprocess.STDOUT).returncode:
                raise RuntimeError(f"build step {' '.join(step)} failed; see {build_log}")
    return src


# -- running -------------------------------------------------------------------------------------

def test_conf(bootstrap: str, timeout_multiplier: float) -> str:
    """The test.conf test-runner reads: our cluster, random topic names (runs share it)."""
    return (f"metadata.broker.list={bootstrap}\n"
            f"test.timeout.multiplier={timeout_multiplier}\n"
            "test.topic.random=true\n"
            "broker.address.family=v4\n")


_RUNNING: set[subprocess.Popen] = set()  # test-runners under way, killed on Ctrl-C


def kafka_path(work_dir: str) -> str:
    """A KAFKA_PATH for the tests that shell out to Apache Kafka's bin/kafka-topics.sh (0045's
    alter and delete, 0052, 0077): a bin/kafka-topics.sh running TopicCommand, the class the
    real script runs, from the pinned Apache Kafka jars (chaos/java_clients.py)."""
    import shlex

    from kafkaref.chaos.java_clients import TOPIC_COMMAND, java_tool

    folder = os.path.join(work_dir, "kafka")
    script = os.path.join(folder, "bin", "kafka-topics.sh")
    os.makedirs(os.path.dirname(script), exist_ok=True)
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\nexec {shlex.join(java_tool(TOPIC_COMMAND))} "$@"\n')
    os.chmod(script, 0o755)
    return folder


def run_number(number: int, src: str, conf_path: str, work_dir: str, deadline_s: float,
               scenario: str = "default", tools: dict[str, str] | None = None) -> NumberResult:
    """One test-runner process for one test number, full mode, broker-less variants off (-L).
    tools: KAFKA_PATH and BROKERS, for the tests that run kafka-topics.sh."""
    tests_dir = os.path.join(src, "tests")
    env = dict(os.environ, TESTS=listing.test_id(number), RDKAFKA_TEST_CONF=conf_path,
               TEST_KAFKA_VERSION=listing.BROKER_VERSION, TEST_LEVEL="2",
               TEST_SCENARIO=scenario, LD_LIBRARY_PATH=f"{src}/src:{src}/src-cpp",
               **(tools or {}))
    env.pop("CI", None)  # CI=... makes test-runner change its own timeouts and parallelism
    log_path = os.path.join(work_dir, f"{listing.test_id(number)}-{scenario}.log")
    started = time.monotonic()
    with open(log_path, "w") as out:
        # line-buffered: a runner that aborts (SIGABRT, SIGSEGV) would lose its last block
        line_buffered = ["stdbuf", "-oL", "-eL"] if shutil.which("stdbuf") else []
        process = subprocess.Popen([*line_buffered, test_runner_path(src), "-L"], cwd=tests_dir,
                                   env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        _RUNNING.add(process)
        try:
            returncode = process.wait(deadline_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
            returncode = None
        finally:
            _RUNNING.discard(process)
    seconds = time.monotonic() - started
    with open(log_path, errors="replace") as f:
        output = f.read()
    return NumberResult(number, rows_for(number, output, returncode, seconds), returncode,
                        seconds, log_path)


def merge(first: NumberResult, second: NumberResult) -> NumberResult:
    """One number run in two scenarios: each test's row from the run that did not skip it."""
    rows = {row.name: row for row in first.rows}
    for row in second.rows:
        if row.name not in rows or rows[row.name].state == "SKIPPED":
            rows[row.name] = row
    return NumberResult(first.number, sorted(rows.values(), key=lambda r: r.name),
                        first.returncode if first.returncode else second.returncode,
                        first.seconds + second.seconds, first.log_path)


def run_suite(cache_dir: str, work_dir: str, numbers: Iterable[int] = listing.SELECTED, *,
              bootstrap: str | None = None, brokers: int = 3, num_partitions: int = 4,
              timeout_multiplier: float = 2.0, deadline_s: float = 900.0, parallel: int = 1,
              log: Callable[[str], None] = print) -> list[NumberResult]:
    """Fetch, build, then each scenario: start a cluster (unless bootstrap is given), run its
    numbers, stop. The noautocreate scenario (listing.NOAUTOCREATE) gets a cluster with
    auto.create.topics.enable=false, as librdkafka's own scenario file sets."""
    install_build_packages(log)
    src = build(fetch_source(cache_dir, log), log)
    os.makedirs(work_dir, exist_ok=True)
    numbers = list(numbers)
    passes = [("default", numbers, True)]
    later = [n for n in numbers if n in listing.NOAUTOCREATE]
    if later and bootstrap is None:  # a given broker cannot be switched to noautocreate
        passes.append(("noautocreate", later, False))
    results: dict[int, NumberResult] = {}
    for scenario, chosen, auto_create in passes:
        for result in _run_pass(src, work_dir, chosen, scenario, auto_create, bootstrap, brokers,
                                num_partitions, timeout_multiplier, deadline_s, parallel, log):
            earlier = results.get(result.number)
            results[result.number] = merge(earlier, result) if earlier else result
    return [results[n] for n in sorted(results)]


def _run_pass(src, work_dir, numbers, scenario, auto_create, bootstrap, brokers, num_partitions,
              timeout_multiplier, deadline_s, parallel, log) -> list[NumberResult]:
    import concurrent.futures

    from kafkaref.impl.server.local_cluster import LocalCluster

    cluster = None
    if bootstrap is None:
        # Kafka's built-in group.initial.rebalance.delay.ms, which the suite's brokers run
        # with: 0102 and 0113 expect consumers subscribing together to share one generation
        cluster = LocalCluster(brokers, os.path.join(work_dir, f"cluster-{scenario}"),
                               num_partitions=num_partitions, auto_create_topics=auto_create,
                               initial_rebalance_delay_ms=KAFKA_INITIAL_REBALANCE_DELAY_MS
                               ).start()
        bootstrap = cluster.bootstrap
        log(f"scenario {scenario}: kafkaref cluster {bootstrap} ({brokers} brokers, "
            f"num.partitions {num_partitions}, auto-create {'on' if auto_create else 'off'}, "
            f"group.initial.rebalance.delay.ms {KAFKA_INITIAL_REBALANCE_DELAY_MS})")
    conf_path = os.path.join(work_dir, f"test-{scenario}.conf")
    with open(conf_path, "w") as f:
        f.write(test_conf(bootstrap, timeout_multiplier))
    results = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, parallel)) as pool:
            tools = {"KAFKA_PATH": kafka_path(work_dir), "BROKERS": bootstrap}
            futures = [pool.submit(run_number, n, src, conf_path, work_dir, deadline_s,
                                   scenario, tools) for n in numbers]
            try:
                for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
                    result = future.result()
                    results.append(result)
                    states = ", ".join(f"{r.name} {r.state}" for r in result.rows)
                    log(f"[{scenario} {done}/{len(numbers)}] {states} ({result.seconds:.0f} s)")
            except BaseException:  # Ctrl-C: start no other number, stop the running ones
                for future in futures:
                    future.cancel()
                for process in list(_RUNNING):
                    process.kill()
                raise
    finally:
        if cluster is not None:
            cluster.stop()
    return results


# -- the summary ---------------------------------------------------------------------------------

def counts(results: Iterable[NumberResult]) -> Counts:
    return results_counts(row for result in results for row in result.rows)


def failures_by_cause(results: Iterable[NumberResult]) -> dict[str, list[Row]]:
    return rows_by_cause((row for result in results for row in result.rows), cause_of)


def summary(results: list[NumberResult]) -> str:
    lines = [f"librdkafka {listing.LIBRDKAFKA_VERSION} test suite against kafkaref", ""]
    for result in results:
        for row in result.rows:
            why = f"  {row.reason}" if row.reason and row.state != "PASSED" else ""
            lines.append(f"  {row.name:<48} {row.state:<8} {row.duration_s:8.1f} s{why}")
    total = counts(results)
    lines += ["", f"{total.passed} passed, {total.failed} failed, {total.skipped} skipped "
                  f"({total.ran} tests reached a verdict)"]
    grouped = failures_by_cause(results)
    if grouped:
        lines += ["", "failures by cause:"]
        for cause, rows in grouped.items():
            lines.append(f"  {cause} ({len(rows)}): " + ", ".join(r.name for r in rows))
    return "\n".join(lines)
