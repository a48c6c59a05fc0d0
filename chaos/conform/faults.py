"""The faults a check inflicts on the broker under test -- kill a broker, restart it, tear its last
write while it is stopped -- and waiting for it to serve again afterwards.

Two ways to have them, behind one interface (`Faults`):
- a peer the project started itself (`kafkaref conform --peer apache-kafka`, or `--cluster-dir`
  of a running `kafkaref peer start`): PeerFaults asks the peer (chaos/peers/);
- commands the user gives (--kill-cmd, --restart-cmd, --tear-cmd): ShellFaults runs each through
  `sh -c` with CONFORM_BROKER_ID / _HOST / _PORT naming the broker (and CONFORM_TOPIC /
  CONFORM_PARTITION for a tear) in its environment.

A fault that cannot be inflicted (a command exits non-zero or hangs, the peer refuses) makes the
check "could not run", never "fail": the broker under test did nothing wrong.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from typing import Protocol

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import CouldNotRun, Skip
from kafkaref.chaos.conform.probe import Probe

COMMAND_TIMEOUT_S = 60
KILL, RESTART, TEAR = "kill", "restart", "tear"


@attrs.frozen
class Target:
    """The broker a fault is aimed at, as the cluster's metadata names it."""

    broker_id: int
    host: str
    port: int

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port


class Faults(Protocol):
    kinds: frozenset[str]  # of KILL, RESTART, TEAR

    def describe(self) -> str:
        """Where the faults come from, for the report."""

    def kill(self, target: Target) -> None:
        """SIGKILL the broker; returns once it is stopped (or raises CouldNotRun)."""

    def restart(self, target: Target) -> None:
        """Start the stopped broker again; it may return before the broker serves."""

    def tear(self, target: Target, topic: str, partition: int) -> None:
        """Tear the stopped broker's last write to topic-partition (a power loss mid-write)."""

    def close(self) -> None:
        """The run is over: stop whatever the faults started and left running."""


@attrs.frozen
class NoFaults:
    kinds: frozenset[str] = frozenset()

    def describe(self) -> str:
        return "none"

    def close(self) -> None:
        pass


STOP_GRACE_S = 10.0


def stop_sessions(sessions: list[tuple[int, float]]) -> list[int]:
    """Stop the processes left in sessions, each (session id: its leader's pid, when it was
    started); the pids signalled. A process counts as left in a session when its session id is
    that one and it was started after the session: not the leader's pid itself, which, once the
    leader has exited, may name an unrelated process."""
    import psutil

    left = []
    for process in psutil.process_iter(["pid", "create_time"]):
        pid = process.info["pid"]
        try:
            sid = os.getsid(pid)
        except OSError:
            continue
        if any(sid == leader and pid != leader and process.info["create_time"] >= started - 1
               for leader, started in sessions):
            left.append(process)
    for process in left:
        _signal(process, signal.SIGTERM)
    _, alive = psutil.wait_procs(left, timeout=STOP_GRACE_S)
    for process in alive:
        _signal(process, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=STOP_GRACE_S)
    return [p.pid for p in left]


def _signal(process, sig: int) -> None:
    import psutil

    try:
        process.send_signal(sig)
    except psutil.NoSuchProcess:
        pass


@attrs.define
class ShellFaults:
    """The user's commands, each run with `sh -c` and the target in its environment, in a
    session of its own: close() stops whatever is left of those sessions (a broker a restart
    command started in the background, a helper it forgot), so nothing a fault command started
    outlives the run. A process that starts a session of its own (setsid) is beyond reach."""

    kill_cmd: str | None = None
    restart_cmd: str | None = None
    tear_cmd: str | None = None
    _sessions: list[tuple[int, float]] = attrs.field(factory=list, init=False)

    @property
    def kinds(self) -> frozenset[str]:
        given = {KILL: self.kill_cmd, RESTART: self.restart_cmd, TEAR: self.tear_cmd}
        return frozenset(kind for kind, command in given.items() if command)

    def describe(self) -> str:
        return "commands: " + ", ".join(f"--{k}-cmd" for k in sorted(self.kinds))

    def kill(self, target: Target) -> None:
        self._run(self.kill_cmd, "--kill-cmd", target)

    def restart(self, target: Target) -> None:
        self._run(self.restart_cmd, "--restart-cmd", target)

    def tear(self, target: Target, topic: str, partition: int) -> None:
        self._run(self.tear_cmd, "--tear-cmd", target,
                  {"CONFORM_TOPIC": topic, "CONFORM_PARTITION": str(partition)})

    def close(self) -> None:
        """Stop every process left in the sessions of the commands run: SIGTERM, then SIGKILL
        after a grace period."""
        stop_sessions(self._sessions)
        self._sessions.clear()

    def _run(self, command: str | None, what: str, target: Target,
             extra_env: dict[str, str] | None = None) -> None:
        if not command:
            raise CouldNotRun(f"no {what} given")
        env = {**os.environ, "CONFORM_BROKER_ID": str(target.broker_id),
               "CONFORM_BROKER_HOST": target.host, "CONFORM_BROKER_PORT": str(target.port),
               **(extra_env or {})}
        started = time.time()
        # stderr to a file, not a pipe: a process the command leaves running in the background
        # keeps its copy open, and reading a pipe to its end would wait for that process.
        with tempfile.TemporaryFile() as stderr:
            child = subprocess.Popen(["sh", "-c", command], stdout=subprocess.DEVNULL,
                                     stderr=stderr, env=env, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
            self._sessions.append((child.pid, started))
            try:
                child.wait(timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
                raise CouldNotRun(f"{what} `{command}` did not finish in {COMMAND_TIMEOUT_S} "
                                  "s") from None
            stderr.seek(0)
            said = stderr.read().decode(errors="replace").strip().replace("\n", " | ")
        if child.returncode != 0:
            raise CouldNotRun(f"{what} `{command}` exited {child.returncode} for broker "
                              f"{target.broker_id}: {said[-300:] or 'no stderr'}")


@attrs.frozen
class PeerFaults:
    """A peer the project started (chaos/peers/), found by the port the metadata gives."""

    peer: object  # kafkaref.chaos.peers.Peer

    @property
    def kinds(self) -> frozenset[str]:
        kinds = {KILL: "kill", RESTART: "restart", TEAR: "tear"}
        return frozenset(k for k, needs in kinds.items() if needs in self.peer.supports)

    def describe(self) -> str:
        return f"peer {self.peer.name} {self.peer.version}"

    def close(self) -> None:
        """Nothing to stop: the peer's own processes are its owner's to stop."""

    def kill(self, target: Target) -> None:
        self._do(lambda node: self.peer.kill(node), "kill", target)

    def restart(self, target: Target) -> None:
        self._do(lambda node: self.peer.restart(node), "restart", target)

    def tear(self, target: Target, topic: str, partition: int) -> None:
        self._do(lambda node: self.peer.tear(node, topic, partition), "tear", target)

    def _do(self, action, what: str, target: Target) -> None:
        from kafkaref.chaos.peers import PeerError

        try:
            action(self.peer.node_by_port(target.port).node_id)
        except PeerError as error:
            raise CouldNotRun(f"{what} of broker {target.broker_id} failed: {error}") from None


def faults_of(probe: Probe) -> Faults:
    return probe.options.get("faults") or NoFaults()


def target_of(probe: Probe, broker_id: int) -> Target:
    return Target(broker_id, *probe.broker_address(broker_id))


def needed_faults(probe: Probe, kinds: set[str], needs: str) -> Faults:
    """The run's faults if they include kinds; Skip saying what the check needs them for."""
    faults = faults_of(probe)
    missing = sorted(set(kinds) - faults.kinds)
    if missing and isinstance(faults, PeerFaults):
        raise Skip(f"{faults.describe()} cannot {' or '.join(missing)} a broker ({needs})")
    if missing:
        flags = ", ".join(f"--{k}-cmd" for k in missing)
        raise Skip(f"needs {flags} (or --peer / --cluster-dir) {needs}")
    return faults


def replica_faults(probe: Probe, single_node: str, needs: str) -> Faults:
    """The faults for a check that stops a replica; Skip when the broker does not replicate
    (single_node: what that rules out) or there are no kill/restart faults."""
    if probe.broker_count() < 2:
        raise Skip(f"single-node broker: {single_node}")
    return needed_faults(probe, {KILL, RESTART}, needs)


def inflict(probe: Probe, kind: str, target: Target, **arguments) -> None:
    """faults.kind(target, **arguments) with the run's faults; afterwards the probe forgets
    where leaders were (they moved)."""
    getattr(faults_of(probe), kind)(target, **arguments)
    probe.forget_leaders()


def serves(probe: Probe, address: tuple[str, int] | None = None) -> bool:
    """A fresh connection (to address, or the bootstrap) is answered ApiVersions NONE."""
    try:
        conn = probe.connect(address)
        answer = conn.call(18, {"client_software_name": "c", "client_software_version": "1"})
        conn.close()
        return answer.error_code == ErrorCode.none
    except (OSError, ValueError):
        return False


def rejoined(probe: Probe, target: Target) -> bool:
    """The cluster's metadata lists the broker again: its controller has it registered, so it can
    take replicas. A restarted broker answers ApiVersions before that: a check right after a
    restart met "replication factor 3 with 2 live brokers" on a loaded machine.
    Asked of the broker itself: another broker's metadata may still list it from before its
    kill (its session not yet expired, or that broker's cache not yet told of the fencing), while
    the new incarnation has not registered yet -- and a topic created then with replication
    factor 3 is INVALID_REPLICATION_FACTOR. And asked of the broker the probe talks to first
    (probe.connect()): its cache learns of the new registration later than the broker itself, and
    a check that sizes or places anything from it would see one broker fewer."""
    return all(_lists(probe, address, target.broker_id)
               for address in dict.fromkeys((target.address, _first_serving(probe))))


def _lists(probe: Probe, address: tuple[str, int] | None, broker_id: int) -> bool:
    """The metadata of the broker at address lists broker_id."""
    try:
        conn = probe.connect(address)
        try:
            return broker_id in {b.node_id for b in probe.metadata([], conn).brokers}
        finally:
            conn.close()
    except (OSError, ValueError):
        return False


def _first_serving(probe: Probe) -> tuple[str, int] | None:
    """The address probe.connect() reaches first (None: none answers)."""
    try:
        conn = probe.connect()
    except OSError:
        return None
    conn.close()
    return conn.address


def wait_serving(probe: Probe, target: Target | None = None, timeout_s: float = 60.0) -> None:
    """Until the bootstrap -- and the restarted broker target, if given -- answer ApiVersions,
    and the target is back in the cluster's metadata."""
    deadline = time.monotonic() + timeout_s
    while not serves(probe) or (target is not None and not (
            serves(probe, target.address) and rejoined(probe, target))):
        probe.expect(time.monotonic() < deadline, f"the broker does not serve {timeout_s:.0f} s "
                     "after its restart", expected="ApiVersions answered")
        time.sleep(0.5)


def down(address: tuple[str, int], timeout_s: float = 10.0) -> bool:
    """Nothing accepts connections at address within timeout_s (the broker stopped: a killed
    process keeps its listening socket until it has exited)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(address, timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False
