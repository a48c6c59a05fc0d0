"""`kafkaref conform` judged on real brokers: it passes against a kafkaref cluster (the shared
`cluster` fixture: 3 broker processes, brokers killed and restarted through --kill-cmd /
--restart-cmd), and it never
stops on a bootstrap that does not answer, a server answering garbage, or a check that hangs."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET

import psutil
import pytest

from kafkaref.chaos.conform.catalogue import ERROR, PASS, Check, CouldNotRun
from kafkaref.chaos.conform.faults import ShellFaults, Target
from kafkaref.chaos.conform.probe import Probe
from kafkaref.chaos.conform.runner import run, run_check, select
from kafkaref.properties.cluster_faults import fault_commands
from kafkaref.properties.servers import tcp_server

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


def test_conform_passes_against_a_kafkaref_cluster(cluster, tmp_path):
    report, junit = tmp_path / "report", tmp_path / "junit.xml"
    with fault_commands(cluster, str(tmp_path)) as (kill, restart, tear):
        done = subprocess.run(
            [KAFKAREF, "conform", "--bootstrap", cluster.bootstrap, "--label", "kafkaref",
             "--fuzz", "300", "--kill-cmd", kill, "--restart-cmd", restart, "--tear-cmd", tear,
             "--chaos-seconds", "10", "--chaos-checker", "twin", "--runs-dir", str(tmp_path),
             "--junit", str(junit), "--report", str(report)],
            capture_output=True, text=True, timeout=300)
    results = json.loads((report / "results.json").read_text())
    verdicts = {o["name"]: o["status"] for o in results["outcomes"]}
    bad = {n: s for n, s in verdicts.items() if s != PASS}  # not even a skip: every check runs
    assert not bad, f"{bad}\n{done.stdout}"
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(verdicts) == {c.name for c in select()}
    suite = ET.parse(junit).getroot()
    assert int(suite.get("tests")) == len(verdicts) and suite.get("failures") == "0"
    card = (report / "report.html").read_text()
    assert all(name in card for name in verdicts)
    # Nothing of the run is left on the broker (what is left of the cluster cannot be asked:
    # the brokers the script restarted were stopped with the run, as documented).
    assert re.search(r"^on the broker: removed \d+ topics and \d+ groups$", done.stdout, re.M)


def test_an_unreachable_bootstrap_is_exit_2_with_every_check_not_run(tmp_path):
    with socket.socket() as placeholder:  # a port nobody listens on
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
        done = subprocess.run([KAFKAREF, "conform", "--bootstrap", f"127.0.0.1:{port}",
                               "--report", str(tmp_path)], capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 2, done.stdout
    outcomes = json.loads((tmp_path / "results.json").read_text())["outcomes"]
    assert outcomes and all(o["status"] == ERROR for o in outcomes)
    assert "bootstrap did not answer" in outcomes[0]["summary"]


def answering(payload: bytes):
    """A tcp_server handler answering payload to the first request, whatever it was."""

    def handler(conn):
        with conn:
            try:
                conn.recv(1024)
                conn.sendall(payload)
            except OSError:
                pass

    return handler


def test_a_broker_answering_garbage_is_could_not_run(tmp_path):
    port, stop = tcp_server(answering(b"\x00\x00\x00\x08garbage!"))
    try:
        result = run(f"127.0.0.1:{port}", select(only=("protocol",)))
    finally:
        stop()
    assert result.exit_code == 2
    assert result.could_not_start and all(o.status == ERROR for o in result.outcomes)


def test_a_hanging_check_is_stopped_at_its_deadline_and_the_run_goes_on():
    def silent(conn):
        with conn:
            try:
                conn.recv(1024)
                threading.Event().wait(30)
            except OSError:
                pass

    port, stop = tcp_server(silent)

    def hangs(probe):
        """Waits for an answer that never comes."""
        probe.connect().call(3, {"topics": []})

    probe = Probe(f"127.0.0.1:{port}", {3: (0, 8)}, timeout_s=60)
    try:
        outcome = run_check(Check("hangs", "test", hangs, "none", 1.0), probe, 1.0)
    finally:
        stop()
    assert outcome.status == ERROR and "deadline" in outcome.summary
    assert outcome.duration_s < 10


def test_fault_commands_run_in_a_shell_and_what_they_leave_is_stopped_at_the_end(tmp_path):
    """The documented variables reach the command through `sh -c`; a failing command is could
    not run, naming the command and its stderr; a process a command leaves running (a broker a
    restart started in the background) does not keep the command waiting, and close() -- the
    end of the run -- stops it."""
    target = Target(2, "127.0.0.1", 9092)
    pid_file = tmp_path / "pid"
    faults = ShellFaults(
        kill_cmd=f'echo "$CONFORM_BROKER_ID $CONFORM_BROKER_PORT" > {tmp_path}/seen',
        restart_cmd=f"sleep 300 & echo $! > {pid_file}",
        tear_cmd='echo "no partition $CONFORM_TOPIC-$CONFORM_PARTITION" >&2; exit 3')
    faults.kill(target)
    assert (tmp_path / "seen").read_text() == "2 9092\n"
    faults.restart(target)
    sleeper = psutil.Process(int(pid_file.read_text()))
    assert sleeper.is_running()
    with pytest.raises(CouldNotRun) as refused:
        faults.tear(target, "t", 4)
    assert str(refused.value) == ('--tear-cmd `echo "no partition $CONFORM_TOPIC-'
                                  '$CONFORM_PARTITION" >&2; exit 3` exited 3 for broker 2: '
                                  "no partition t-4")
    faults.close()
    assert not sleeper.is_running() or sleeper.status() == psutil.STATUS_ZOMBIE


def test_a_bootstrap_without_a_port_is_one_usage_error():
    done = subprocess.run([KAFKAREF, "conform", "--bootstrap", "localhost"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == ("Error: Invalid value for --bootstrap: bad address "
                                            "'localhost', expected HOST:PORT")


def test_a_server_answering_http_is_named_in_one_line(tmp_path):
    port, stop = tcp_server(answering(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
    try:
        done = subprocess.run([KAFKAREF, "conform", "--bootstrap", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=120)
    finally:
        stop()
    assert done.returncode == 2
    assert done.stdout == (f"could not judge 127.0.0.1:{port}: bootstrap did not answer "
                           f"ApiVersions: 127.0.0.1:{port} answered 'HTTP'..., not a Kafka "
                           "response: is it a Kafka broker's address? (that is an HTTP "
                           "server)\n")


def test_keep_leaves_the_runs_topics_and_groups_and_cleanup_removes_only_them(broker):
    """--keep: the checks' topics and groups stay for debugging; clean_up() given the run's
    names removes them and leaves a topic of someone else's alone."""
    from kafkaref.chaos.conform.cleanup import clean_up
    from kafkaref.chaos.conform.runner import negotiate

    others = "someone-elses"
    probe = Probe(broker.address, negotiate(broker.address))
    try:
        probe.connect().call(19, {"topics": [{"name": others, "num_partitions": 1,
                                              "replication_factor": 1, "assignments": [],
                                              "configs": []}], "timeout": 10_000,
                                  "validate_only": False})
        done = subprocess.run([KAFKAREF, "conform", "--bootstrap", broker.address, "--only",
                               "offset_commit_fetch", "--keep", "--json"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stderr == ""  # --json: no progress
        assert json.loads(done.stdout)["cleanup"].startswith("kept (--keep)")
        topics = {t.name for t in probe.metadata(None).topics}
        kept = {t for t in topics if t.startswith("conform-")}
        assert kept, topics
        groups = {g.group_id for b in probe.metadata([]).brokers
                  for g in probe.connect((b.host, b.port)).call(16, {}).groups}
        kept_groups = {g for g in groups if g.startswith("conform-")}
        assert kept_groups, groups
        cleaned = clean_up(probe, frozenset(kept | kept_groups))
        assert set(cleaned.topics) == kept and set(cleaned.groups) == kept_groups
        assert not cleaned.left
        left = {t.name for t in probe.metadata(None).topics}
        assert others in left and not {t for t in left if t.startswith("conform-")}
    finally:
        probe.connect().call(20, {"topic_names": [others], "timeout": 10_000})
        probe.close()
