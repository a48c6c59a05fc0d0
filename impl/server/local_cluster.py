"""A local cluster of separate OS processes: the controller in this process, N brokers as children.

`LocalCluster` runs the controller (in this process) and N `kafkaref broker --controller ...`
processes on 127.0.0.1, learns each broker's port from its registration, writes DIR/cluster.json
(bootstrap, controller, each broker's pid, port and command line, so a killed broker can be
restarted with the same identity), and stops the brokers (SIGTERM, then SIGKILL after a bound).
Broker ports are kept in cluster.json, so restarting the cluster on the same DIR reuses them.
A library class: the `kafkaref cluster` command (commands/cluster.py), the tests and the
benchmarks (impl/server/bench.py) all use it from here.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time

from kafkaref.impl.client.cluster_view import brokers_seen
from kafkaref.impl.controller.config import DEFAULT_SESSION_TIMEOUT_MS
from kafkaref.impl.server.config import READY_TIMEOUT_S


def _die_with_parent() -> None:
    """Linux: children get SIGTERM if the launcher dies (even by SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process: a
# broker restarted from a short-lived thread (a nemesis, a test's helper thread) would get
# SIGTERM when that thread ended. Every broker is therefore forked by this one thread, which
# lives as long as the process (found by chaos/: restarted brokers died at the end of a run).
_LAUNCHER = concurrent.futures.ThreadPoolExecutor(1, "broker-launcher")


def stop_processes(processes, grace_s: float = 10.0) -> None:
    """SIGTERM every process still running (after SIGCONT: a paused one cannot act on SIGTERM),
    wait up to grace_s for all of them together, then SIGKILL what is left."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def signal_and_wait(process: subprocess.Popen, sig: int = signal.SIGTERM,
                    grace_s: float = 10.0) -> None:
    """Send `sig` to the process if it still runs and wait up to grace_s for it to end; SIGKILL
    it if it has not by then."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def popen_dying_with_us(command: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen(command, **kwargs) forked by the launcher thread, with SIGTERM on our
    death (see _LAUNCHER)."""
    return _LAUNCHER.submit(subprocess.Popen, command, preexec_fn=_die_with_parent,
                            **kwargs).result()


def broker_command(broker_id: int, port: int, data_dir: str, controller: str,
                   mutants=frozenset(), offsets_topic_partitions: int | None = None,
                   num_partitions: int | None = None,
                   auto_create_topics: bool = True,
                   initial_rebalance_delay_ms: int | None = None,
                   log_initial_task_delay_ms: int | None = None,
                   log_retention_check_interval_ms: int | None = None) -> list[str]:
    """The broker's command line; deliberate faults go on it with their acknowledgement."""
    exe = os.path.join(os.path.dirname(sys.executable), "kafkaref")
    command = [exe, "broker", "--broker-id", str(broker_id), "--port", str(port),
               "--data-dir", data_dir, "--controller", controller]
    if offsets_topic_partitions:
        command += ["--offsets-topic-partitions", str(offsets_topic_partitions)]
    if num_partitions is not None:
        command += ["--num-partitions", str(num_partitions)]
    if not auto_create_topics:
        command.append("--no-auto-create-topics")
    if initial_rebalance_delay_ms is not None:
        command += ["--group-initial-rebalance-delay-ms", str(initial_rebalance_delay_ms)]
    if log_initial_task_delay_ms is not None:
        command += ["--log-initial-task-delay-ms", str(log_initial_task_delay_ms)]
    if log_retention_check_interval_ms is not None:
        command += ["--log-retention-check-interval-ms", str(log_retention_check_interval_ms)]
    for mutant in sorted(mutants, key=lambda m: int(m.code[1:])):
        command += ["--mutant", mutant.code]
    return command + (["--allow-deliberate-bugs"] if mutants else [])


def start_broker_process(command: list[str], log_path: str) -> subprocess.Popen:
    with open(log_path, "a") as log_file:
        return popen_dying_with_us(command, stdout=subprocess.DEVNULL, stderr=log_file)


class LocalCluster:
    """The launcher's state; usable from tests as a context manager too."""

    def __init__(self, brokers: int, directory: str,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 unclean_election: bool = False, mutants=frozenset(),
                 offsets_topic_partitions: int | None = None,
                 num_partitions: int | None = None, auto_create_topics: bool = True,
                 initial_rebalance_delay_ms: int | None = None,
                 log_initial_task_delay_ms: int | None = None,
                 log_retention_check_interval_ms: int | None = None):
        """mutants: deliberate faults (impl/mutants.py) for the controller (M14) and every
        broker process (the rest), which gets them as --mutant ... --allow-deliberate-bugs.
        offsets_topic_partitions: __consumer_offsets' partitions (None: the brokers' default,
        Kafka's 50). num_partitions: every broker's num.partitions (auto-created topics);
        None = default. auto_create_topics: every broker's auto.create.topics.enable.
        initial_rebalance_delay_ms: group.initial.rebalance.delay.ms (None: the default, 0).
        log_initial_task_delay_ms, log_retention_check_interval_ms: when the retention task
        first runs and how often after (None: Kafka's 30 s and 5 min)."""
        from kafkaref.impl.controller.server import ControllerServer
        from kafkaref.impl.mutants import parse_mutants

        self.mutants = parse_mutants(mutants)
        self.offsets_topic_partitions = offsets_topic_partitions
        self.num_partitions = num_partitions
        self.auto_create_topics = auto_create_topics
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.log_initial_task_delay_ms = log_initial_task_delay_ms
        self.log_retention_check_interval_ms = log_retention_check_interval_ms

        self.directory = os.path.abspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        previous = self._previous_ports()
        self.controller = ControllerServer(
            session_timeout_ms=session_timeout_ms, unclean_election=unclean_election,
            snapshot_path=os.path.join(self.directory, "controller.json"),
            mutants=self.mutants).start()
        # 0: the broker picks a free port itself (impl/server/ports.py: below the kernel's ephemeral
        # range, so that no outgoing connection takes it while the broker is down) and registers it
        # (learned in start()).
        # Picking a free port here and handing it over raced with every other socket of the
        # machine between our close and the broker's bind; a restarted broker keeps its port.
        self.ports = {i: previous.get(i) or 0 for i in range(brokers)}
        self.processes: dict[int, subprocess.Popen] = {}
        self.commands = {
            i: broker_command(i, port, os.path.join(self.directory, f"broker-{i}"),
                              self.controller.address, self.mutants, offsets_topic_partitions,
                              self.num_partitions, self.auto_create_topics,
                              self.initial_rebalance_delay_ms, self.log_initial_task_delay_ms,
                              self.log_retention_check_interval_ms)
            for i, port in self.ports.items()}

    def _previous_ports(self) -> dict[int, int]:
        path = os.path.join(self.directory, "cluster.json")
        if not os.path.exists(path):
            return {}
        try:
            with open(path) as f:
                return {int(i): b["port"] for i, b in json.load(f)["brokers"].items()}
        except (ValueError, KeyError, TypeError):
            return {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.ports.values())

    def start_broker(self, broker_id: int) -> subprocess.Popen:
        log_path = os.path.join(self.directory, f"broker-{broker_id}.log")
        process = start_broker_process(self.commands[broker_id], log_path)
        self.processes[broker_id] = process
        self.write_state()
        return process

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> LocalCluster:
        for broker_id in self.ports:
            self.start_broker(broker_id)
        deadline = time.monotonic() + timeout_s
        self.wait_registered(set(self.ports), timeout_s)
        self._learn_ports()
        self.wait_seen(deadline - time.monotonic())
        return self

    def wait_seen(self, timeout_s: float) -> None:
        """Until every broker's own Metadata lists every broker. Registered with the controller
        is not yet ready: a broker learns the others from its next metadata update, and a client
        asking it first would count one broker (and size its topics so)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            behind = [b for b, port in self.ports.items()
                      if brokers_seen("127.0.0.1", port) < len(self.ports)]
            if not behind:
                return
            time.sleep(0.05)
        raise TimeoutError(f"brokers {behind} did not list all {len(self.ports)} brokers "
                           f"in {timeout_s:.0f}s")

    def _learn_ports(self) -> None:
        """Take each broker's port from its registration, and keep it for restarts."""
        for endpoint in self.controller.metadata().brokers:
            broker_id = endpoint.broker_id
            if broker_id in self.ports and self.ports[broker_id] != endpoint.port:
                self.ports[broker_id] = endpoint.port
                self.commands[broker_id] = broker_command(
                    broker_id, endpoint.port, os.path.join(self.directory, f"broker-{broker_id}"),
                    self.controller.address, self.mutants, self.offsets_topic_partitions,
                    self.num_partitions, self.auto_create_topics,
                    self.initial_rebalance_delay_ms, self.log_initial_task_delay_ms,
                              self.log_retention_check_interval_ms)
        self.write_state()

    def wait_registered(self, broker_ids: set[int], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            live = {b.broker_id for b in self.controller.metadata().brokers}
            if broker_ids <= live:
                return
            for broker_id, process in self.processes.items():
                if broker_id in broker_ids and process.poll() is not None:
                    raise RuntimeError(f"broker {broker_id} exited with {process.returncode}; "
                                       f"see {self.directory}/broker-{broker_id}.log")
            time.sleep(0.05)
        raise TimeoutError(f"brokers {sorted(broker_ids)} did not register in {timeout_s}s")

    def write_state(self) -> None:
        state = {
            "bootstrap": self.bootstrap, "controller": self.controller.address,
            "brokers": {i: {"port": self.ports[i], "pid": p.pid, "command": self.commands[i]}
                        for i, p in self.processes.items()}}
        tmp = os.path.join(self.directory, "cluster.json.tmp")
        with open(tmp, "w") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, os.path.join(self.directory, "cluster.json"))

    def kill(self, broker_id: int, sig: int = signal.SIGKILL) -> None:
        signal_and_wait(self.processes[broker_id], sig)

    def stop(self) -> None:
        stop_processes(list(self.processes.values()))
        self.controller.shutdown()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
