"""A throwaway Spark standalone cluster (one master, one worker) on 127.0.0.1, for tests.

The pyspark wheel has bin/spark-class but no sbin/start-master.sh, so the master and worker are
started as plain processes with their work and log directories under a given directory, and are
always stopped (terminate, then kill after a bound) when the context exits.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from kafkaref.spark_checks.session import quiet_environment

STARTUP_TIMEOUT_S = 90
STOP_TIMEOUT_S = 15
STARTUP_ATTEMPTS = 3  # a master that exits while starting (a port taken) is retried


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(directory: Path) -> dict[str, str]:
    return {**os.environ, **quiet_environment(), "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(directory / "logs"),
            "SPARK_WORKER_DIR": str(directory / "work"), "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
            # A master whose port is taken must fail (and be retried on new ports), not move to
            # the next port, where neither the worker nor the driver would look for it.
            "SPARK_MASTER_OPTS": "-Dspark.port.maxRetries=0"}


def _start(directory: Path, name: str, args: list[str]) -> subprocess.Popen:
    (directory / "logs").mkdir(parents=True, exist_ok=True)
    log = open(directory / "logs" / f"{name}.out", "wb")
    return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args],
                            env=_environment(directory), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)


@contextmanager
def standalone_cluster(directory: Path, cores: int = 1, memory: str = "1g"):
    """Yields the master URL once a worker has registered; stops both processes on exit.

    The master's two ports are picked here (the worker and the driver must know them), so
    another socket may take one before the master binds it: a master that exits while
    starting is started again on new ports (STARTUP_ATTEMPTS in all). The worker binds
    ephemeral ports itself (0)."""
    processes: list[subprocess.Popen] = []
    try:
        for attempt in range(1, STARTUP_ATTEMPTS + 1):
            url, outcome = _start_cluster(directory, cores, memory, processes)
            if outcome == "ready":
                break
            for process in reversed(processes):
                _stop(process)
            processes.clear()
            if outcome == "timeout" or attempt == STARTUP_ATTEMPTS:
                raise RuntimeError(f"standalone cluster did not start ({outcome}); logs in "
                                   f"{directory}/logs")
        yield url
    finally:
        for process in reversed(processes):
            _stop(process)


def _start_cluster(directory: Path, cores: int, memory: str,
                   processes: list) -> tuple[str, str]:
    """Start a master and a worker (appended to processes); (master URL, "ready" once a worker
    registered, "exited" if either process ended first, "timeout" after STARTUP_TIMEOUT_S)."""
    port, ui_port = free_port(), free_port()
    processes.append(_start(directory, "master", [
        "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
        "--webui-port", str(ui_port)]))
    url = f"spark://127.0.0.1:{port}"
    processes.append(_start(directory, "worker", [
        "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
        "--port", "0", "--webui-port", "0", "--cores", str(cores),
        "--memory", memory, "--work-dir", str(directory / "work")]))
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while _alive_workers(ui_port) < 1:
        if any(p.poll() is not None for p in processes):
            return url, "exited"
        if time.monotonic() > deadline:
            return url, "timeout"
        time.sleep(0.5)
    return url, "ready"


def submit(master: str, history: Path, report: Path, directory: Path,
           timeout_s: float = 600) -> subprocess.CompletedProcess:
    """spark-submit the check job to master; returns the finished process (report written)."""
    script = Path(__file__).with_name("submit.py")
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master,
               "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=768m",
               "--conf", "spark.sql.shuffle.partitions=4",
               str(script), str(history), str(report)]
    return subprocess.run(command, env=_environment(directory), capture_output=True,
                          timeout=timeout_s, check=False)
