"""A running peer: a cluster of broker processes on 127.0.0.1 that we started, with the faults the
conformance suite and the chaos runner inflict on it (kill -9, restart, pause, resume, tear).

Everything about a running peer is in DIR/peer.json (name, version, bootstrap, each node's
address, pid, command line, log and data folder), rewritten whenever a node starts. So the faults
work from the process that started the peer and equally from a separate command
(`kafkaref peer kill --dir DIR --node 1`), and whoever stops the peer stops every process the
file names, restarted ones included.

A pid alone could name a process that died and whose pid was reused; each node also records its
process's start time, and a process is only signalled when both match.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time

import attrs
import psutil

from kafkaref.chaos.nemesis import tear_last_write
from kafkaref.chaos.peers.fetched import PeerError
from kafkaref.impl.server.local_cluster import popen_dying_with_us

STATE_FILE = "peer.json"
STOP_GRACE_S = 15.0
KILL_WAIT_S = 10.0


@attrs.define
class Node:
    """One broker process of a peer."""

    node_id: int
    host: str
    port: int
    command: list[str]
    log_path: str
    data_dir: str
    env: dict[str, str] = attrs.Factory(dict)
    pid: int | None = None
    started_at: float | None = None  # the process's create time (psutil), with pid its identity

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class Peer:
    """A cluster of one kind of broker (subclasses say how to start a node and when it is ready).

    Subclasses set `name`, `version`, `supports` (the fault kinds it has: kill, restart, pause,
    tear) and implement `ready(node)`; they fill `nodes` before start()."""

    name = "peer"
    version = "?"
    supports: frozenset[str] = frozenset({"kill", "restart", "pause"})
    start_timeout_s = 60.0

    def __init__(self, directory: str, keep: bool = False):
        self.directory = os.path.abspath(directory)
        self.keep = keep  # leave the directory (logs, data) after stop()
        self.nodes: dict[int, Node] = {}
        self._children: dict[int, subprocess.Popen] = {}  # pid -> child, reaped on stop
        self.owner_pid = os.getpid()  # the process that started the peer and will stop it

    # -- what clients need ---------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.nodes.values())

    def describe(self) -> str:
        return f"{self.name} {self.version}, {len(self.nodes)} node(s) at {self.bootstrap}"

    def node_by_port(self, port: int) -> Node:
        for node in self.nodes.values():
            if node.port == port:
                return node
        raise PeerError(f"no node of {self.name} listens on port {port}")

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Peer:
        """Start every node and wait until the cluster serves; on failure everything started is
        stopped and removed, and a PeerError says why."""
        try:
            self.start_nodes()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def started(self) -> bool:
        return any(node.pid is not None for node in self.nodes.values())

    def start_nodes(self) -> None:
        """Start every node and wait until the cluster serves; on failure the processes started
        are stopped (their logs kept) and the error raised."""
        try:
            for node in self.nodes.values():
                self._spawn(node, owned=True)
            self.wait_ready(list(self.nodes))
        except BaseException:
            self.stop_processes()
            raise

    def stop(self) -> None:
        """Stop every process and, unless keep, remove the directory."""
        self.stop_processes()
        if not self.keep:
            shutil.rmtree(self.directory, ignore_errors=True)

    def stop_processes(self) -> None:
        """Stop every process named in the state file: SIGCONT (a paused one cannot act on
        SIGTERM), SIGTERM, then SIGKILL what is left after a grace period."""
        self._reload_pids()
        processes = [p for p in map(self._process, self.nodes.values()) if p is not None]
        for process in processes:
            _signal(process, signal.SIGCONT)
            _signal(process, signal.SIGTERM)
        _, alive = psutil.wait_procs(processes, timeout=STOP_GRACE_S)
        for process in alive:
            _signal(process, signal.SIGKILL)
        psutil.wait_procs(alive, timeout=KILL_WAIT_S)
        for node in self.nodes.values():
            node.pid = node.started_at = None
        self.reap()

    def __enter__(self) -> Peer:
        """`with make_peer(...)` starts it; `with start_peer(...)` finds it started."""
        return self if self.started else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- faults --------------------------------------------------------------------------------
    def kill(self, node_id: int) -> None:
        """SIGKILL the node and wait until it is gone (its port closed)."""
        node = self._node(node_id)
        process = self._process(node)
        if process is not None:
            _signal(process, signal.SIGKILL)
            if not _ends(process, KILL_WAIT_S):
                raise PeerError(f"node {node_id} of {self.name} survived SIGKILL for "
                                f"{KILL_WAIT_S:.0f} s")
        self.reap()
        node.pid = node.started_at = None
        self.save()

    def restart(self, node_id: int) -> None:
        """Start a stopped node again (same identity, port and data) and wait until it serves."""
        node = self._node(node_id)
        if self._process(node) is not None:
            raise PeerError(f"node {node_id} of {self.name} is still running: kill it first")
        self._spawn(node, owned=False)
        self.wait_ready([node_id])

    def pause(self, node_id: int) -> None:
        self._signal_node(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self._signal_node(node_id, signal.SIGCONT)

    def tear(self, node_id: int, topic: str, partition: int) -> str:
        """A power loss tearing the stopped node's last write to topic-partition (its newest
        segment cut short inside its last batch); what was done, in words."""
        if "tear" not in self.supports:
            raise PeerError(f"{self.name} keeps no log segment files to tear")
        node = self._node(node_id)
        if self._process(node) is not None:
            raise PeerError(f"node {node_id} of {self.name} is running: kill it before tearing")
        torn = tear_last_write(os.path.join(node.data_dir, f"{topic}-{partition}"))
        if torn is None:
            raise PeerError(f"nothing to tear for {topic}-{partition} on node {node_id}")
        path, before, after = torn
        return f"tore {path}: {before} -> {after} bytes"

    def alive(self, node_id: int) -> bool:
        return self._process(self._node(node_id)) is not None

    # -- readiness -----------------------------------------------------------------------------
    def ready(self, node: Node) -> bool:
        """The node serves clients (subclasses refine: the whole cluster formed)."""
        return _accepts(node.host, node.port)

    def wait_ready(self, node_ids: list[int]) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        pending = list(node_ids)
        while pending:
            node = self.nodes[pending[0]]
            if self._process(node) is None:
                raise PeerError(f"node {node.node_id} of {self.name} exited while starting: "
                                f"{_last_lines(node.log_path)}")
            if self.ready(node):
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                raise PeerError(f"node {node.node_id} of {self.name} did not serve within "
                                f"{self.start_timeout_s:.0f} s: {_last_lines(node.log_path)}")
            time.sleep(0.1)

    # -- the state file ------------------------------------------------------------------------
    def state(self) -> dict:
        return {"name": self.name, "version": self.version, "bootstrap": self.bootstrap,
                "supports": sorted(self.supports), "owner_pid": self.owner_pid,
                "nodes": [attrs.asdict(n) for n in self.nodes.values()]}

    def save(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, STATE_FILE)
        with open(path + ".tmp", "w") as f:
            json.dump(self.state(), f, indent=1)
        os.replace(path + ".tmp", path)

    def _reload_pids(self) -> None:
        """Pids another process (a `kafkaref peer restart`) wrote since we last looked."""
        path = os.path.join(self.directory, STATE_FILE)
        try:
            with open(path) as f:
                saved = {n["node_id"]: n for n in json.load(f)["nodes"]}
        except (OSError, ValueError, KeyError, TypeError):
            return
        for node_id, node in self.nodes.items():
            if node_id in saved:
                node.pid, node.started_at = saved[node_id]["pid"], saved[node_id]["started_at"]

    # -- processes -----------------------------------------------------------------------------
    def _node(self, node_id: int) -> Node:
        self._reload_pids()
        try:
            return self.nodes[node_id]
        except KeyError:
            raise PeerError(f"{self.name} has no node {node_id} (nodes: "
                            f"{', '.join(map(str, self.nodes))})") from None

    def _spawn(self, node: Node, owned: bool) -> None:
        """Start the node's process in a session of its own. owned: by this process, which
        outlives it (it gets SIGTERM should we die); a restart from a short-lived command is not
        tied to that command's life, and is stopped through the state file instead."""
        os.makedirs(os.path.dirname(node.log_path), exist_ok=True)
        env = {**os.environ, **node.env}
        with open(node.log_path, "ab") as log:
            if owned:
                child = popen_dying_with_us(node.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env,
                                            cwd=self.directory)
            else:
                child = subprocess.Popen(node.command, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, cwd=self.directory,
                                         start_new_session=True)
        self.adopt(node, child)
        self.save()

    def adopt(self, node: Node, child: subprocess.Popen) -> None:
        """A process someone else started for node (LocalCluster's brokers) becomes ours."""
        self._children[child.pid] = child
        node.pid = child.pid
        try:
            node.started_at = psutil.Process(child.pid).create_time()
        except psutil.NoSuchProcess:
            node.started_at = None

    def _process(self, node: Node) -> psutil.Process | None:
        """The node's running process, if any (a zombie counts as gone)."""
        if node.pid is None:
            return None
        try:
            process = psutil.Process(node.pid)
            if node.started_at is not None and abs(process.create_time() - node.started_at) > 1:
                return None  # the pid now names another process
            if process.status() == psutil.STATUS_ZOMBIE:
                self.reap()
                return None
            return process
        except psutil.NoSuchProcess:
            return None

    def _signal_node(self, node_id: int, sig: int) -> None:
        process = self._process(self._node(node_id))
        if process is None:
            raise PeerError(f"node {node_id} of {self.name} is not running")
        _signal(process, sig)

    def reap(self) -> None:
        """Collect the exit of our children that died (a node killed from another process stays
        a zombie until its parent, we, collect it); the owner calls this while it waits."""
        for pid, child in list(self._children.items()):
            if child.poll() is not None:
                del self._children[pid]


def _ends(process: psutil.Process, timeout_s: float) -> bool:
    """The process is gone, or a zombie (dead; only its parent can collect it), within
    timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
            process.wait(0.05)
            return True
        except psutil.TimeoutExpired:
            continue
        except psutil.NoSuchProcess:
            return True
    return False


def _signal(process: psutil.Process, sig: int) -> None:
    try:
        process.send_signal(sig)
    except psutil.NoSuchProcess:
        pass


def _accepts(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _last_lines(path: str, count: int = 3) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()
                     if ln.strip()]
    except OSError:
        return "no log"
    return " | ".join(lines[-count:])[:400] or "no output"


def free_port() -> int:
    """A port free now, below the kernel's ephemeral range where it can be (impl/server/ports.py:
    no outgoing connection takes it while a node is down between a kill and its restart)."""
    from kafkaref.impl.server.ports import listen

    with listen("127.0.0.1", 0) as sock:
        return sock.getsockname()[1]
