"""The peers from the command line: `kafkaref peer start|kill|restart|pause|resume|tear|stop`,
`kafkaref cluster` faulted through its peer.json, and `kafkaref conform --peer / --cluster-dir`
with the faults the peer brings; wrong arguments are one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil
import pytest

from kafkaref.properties.waiting import wait_until

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


def kafkaref(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([KAFKAREF, *args], capture_output=True, text=True, timeout=timeout)


def processes_naming(text: str) -> list[int]:
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and \
                    any(text in part for part in process.info["cmdline"] or ()):
                found.append(process.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_peer_list_names_each_peer_with_its_pinned_version():
    done = kafkaref("peer", "list")
    assert done.returncode == 0
    assert "apache-kafka   4.3.1" in done.stdout and "tansu          0.6.0" in done.stdout


def test_a_kafkaref_cluster_is_faulted_and_stopped_from_other_shells(tmp_path):
    directory = str(tmp_path / "c")
    owner = subprocess.Popen([KAFKAREF, "cluster", "--brokers", "3", "--dir", directory],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert owner.stdout.readline().count("127.0.0.1:") == 3  # ready
        with open(os.path.join(directory, "peer.json")) as f:
            first = {n["node_id"]: n["pid"] for n in json.load(f)["nodes"]}
        assert kafkaref("peer", "kill", "--dir", directory, "--node", "1").returncode == 0
        assert not psutil.pid_exists(first[1]) or \
            psutil.Process(first[1]).status() == psutil.STATUS_ZOMBIE
        restarted = kafkaref("peer", "restart", "--dir", directory, "--node", "1")
        assert restarted.returncode == 0, restarted.stderr
        assert kafkaref("peer", "pause", "--dir", directory, "--node", "2").returncode == 0
        assert kafkaref("peer", "resume", "--dir", directory, "--node", "2").returncode == 0
        stopped = kafkaref("peer", "stop", "--dir", directory)
        assert stopped.returncode == 0, stopped.stderr
        owner.wait(60)
        wait_until(lambda: not processes_naming(directory), timeout_s=30,
                   what="every broker of the cluster stopped, the restarted one included")
    finally:
        owner.kill()
        owner.stdout.close()


def test_conform_brings_up_a_peer_judges_it_with_its_faults_and_leaves_nothing(tmp_path):
    done = kafkaref("conform", "--peer", "kafkaref", "--nodes", "3", "--only", "leader_failover",
                    "--only", "torn_tail_recovery", "--report", str(tmp_path / "r"))
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["broker"].startswith("kafkaref ") and "(3 nodes)" in results["broker"]
    assert {o["status"] for o in results["outcomes"]} == {"pass"}
    assert not processes_naming(results["bootstrap"].split(",")[0])


@pytest.mark.parametrize("args, message", [
    (("conform", "--peer", "kafkaref", "--bootstrap", "127.0.0.1:1"),
     "give one of --bootstrap, --peer and --cluster-dir"),
    (("conform", "--peer", "kafkaref", "--kill-cmd", "true"),
     "--peer / --cluster-dir bring their own faults"),
    (("conform", "--bootstrap", "127.0.0.1:1", "--nodes", "3"), "--nodes goes with --peer"),
    (("conform", "--peer", "kafka"), "Invalid value for '--peer'"),
    (("peer", "kill", "--dir", "/nonexistent-peer", "--node", "1"),
     "no peer in /nonexistent-peer: peer.json is missing"),
    (("peer", "start", "tansu", "--nodes", "3"), "tansu runs one node"),
])
def test_wrong_arguments_are_one_line_and_exit_2(args, message):
    done = kafkaref(*args, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
