"""`kafkaref conform` judged on real brokers: it passes against a kafkaref cluster (the shared
`cluster` fixture: 3 broker processes, brokers killed and restarted through --kill-cmd /
--restart-cmd), and it never
stops on a bootstrap that does not answer, a server answering garbage, or a check that hangs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET

from kafkaref.chaos.conform.catalogue import ERROR, PASS, Check
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


def test_a_broker_answering_garbage_is_could_not_run(tmp_path):
    def garbage(conn):
        with conn:
            try:
                conn.recv(1024)
                conn.sendall(b"\x00\x00\x00\x08garbage!")
            except OSError:
                pass

    port, stop = tcp_server(garbage)
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
