"""`kafkaref cluster` as a process: prints the bootstrap address when ready, serves topics
commands, and on SIGTERM stops every broker process it started."""

import json
import os
import signal
import subprocess
import sys

import psutil

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


def test_cluster_starts_serves_and_stops_cleanly(tmp_path):
    proc = subprocess.Popen([KAFKAREF, "cluster", "--brokers", "3", "--dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    broker_pids = []
    try:
        bootstrap = proc.stdout.readline().strip()
        assert bootstrap.count("127.0.0.1:") == 3, (bootstrap, proc.stderr.read())
        state = json.loads((tmp_path / "cluster.json").read_text())
        broker_pids = [b["pid"] for b in state["brokers"].values()]
        run = [KAFKAREF, "topics", "create", "--bootstrap-server", bootstrap, "--topic", "t",
               "--partitions", "2", "--replication-factor", "3",
               "--config", "min.insync.replicas=2"]
        result = subprocess.run(run, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        described = subprocess.run([KAFKAREF, "topics", "describe", "--bootstrap-server",
                                    bootstrap, "--topic", "t"], capture_output=True, text=True,
                                   timeout=60).stdout
        assert described.count("Replicas: ") == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        for pid in broker_pids:
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in broker_pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
