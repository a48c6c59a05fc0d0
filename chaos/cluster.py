"""A local cluster of broker processes wired through a proxy mesh, for the nemesis to break.

The controller runs in this process (as in `kafkaref cluster`); each broker is a separate
`kafkaref broker` process. Every connection goes through a link of the mesh (chaos/proxy.py):

    client   -> broker j     link "client-j"   (broker j advertises this port)
    broker i -> broker j     link "peer-i-j"   (broker i's --peer j=...)
    broker i -> controller   link "ctrl-i"     (broker i's --controller)

Brokers bind ephemeral ports; the port is read from the broker's `listening on` line and the
links to it retargeted, so a restarted broker is reached again wherever it now listens.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time

from kafkaref.chaos.proxy import ProxyMesh
from kafkaref.impl.server.local_cluster import popen_dying_with_us, stop_processes

READY_TIMEOUT_S = 60
# Small segments, so a run of a minute rolls each partition's log a few times: rolls, indexes
# of several segments and recovery across them are then under the faults too.
SEGMENT_BYTES = 16 * 1024




def client_link(broker_id: int) -> str:
    return f"client-{broker_id}"


def peer_link(source: int, target: int) -> str:
    return f"peer-{source}-{target}"


def controller_link(broker_id: int) -> str:
    return f"ctrl-{broker_id}"


class ProxiedCluster:
    """Brokers 0..n-1 and a controller, every link through self.mesh. A context manager."""

    def __init__(self, brokers: int, directory: str, *, session_timeout_ms: int = 1500,
                 unclean_election: bool = False, mutants: tuple[str, ...] = (),
                 power_loss: bool = False, segment_bytes: int | None = SEGMENT_BYTES):
        from kafkaref.impl.controller.server import ControllerServer

        self.directory = os.path.abspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.broker_ids = list(range(brokers))
        self.mutants = tuple(mutants)
        self.power_loss = power_loss  # brokers lose what was not fsynced when killed
        self.segment_bytes = segment_bytes
        self._controller_args = {
            "session_timeout_ms": session_timeout_ms, "unclean_election": unclean_election,
            "snapshot_path": os.path.join(self.directory, "controller.json"),
            # the controller's mutants (M14) act in the controller, which runs here
            "mutants": self.mutants, **self._controller_address()}
        self.controller = ControllerServer(**self._controller_args).start()
        self.mesh = self._network()
        self.processes: dict[int, subprocess.Popen] = {}
        self.ports: dict[int, int] = {}

    def _controller_address(self) -> dict:
        """Where the controller listens (ControllerServer's host and port; its defaults)."""
        return {}

    def _network(self) -> ProxyMesh:
        """The links every connection goes through (chaos/hosted.py: routes instead)."""
        mesh = ProxyMesh()
        controller = _address(self.controller.address)
        for i in self.broker_ids:
            mesh.add(client_link(i))
            mesh.add(controller_link(i), controller)
            for j in self.broker_ids:
                if i != j:
                    mesh.add(peer_link(i, j))
        return mesh

    @property
    def bootstrap(self) -> str:
        return ",".join(self.mesh.links[client_link(i)].address for i in self.broker_ids)

    def data_dir(self, broker_id: int) -> str:
        return os.path.join(self.directory, f"broker-{broker_id}")

    def clock_path(self, broker_id: int) -> str:
        """The broker's --clock-skew-file (impl/clock.py): the nemesis rewrites it."""
        return os.path.join(self.directory, f"broker-{broker_id}.clock.json")

    def command(self, broker_id: int) -> list[str]:
        exe = os.path.join(os.path.dirname(sys.executable), "kafkaref")
        links = self.mesh.links
        command = [exe, "broker", "--broker-id", str(broker_id), "--port", "0",
                   "--data-dir", self.data_dir(broker_id),
                   "--controller", links[controller_link(broker_id)].address,
                   "--advertised-port", str(links[client_link(broker_id)].port),
                   "--clock-skew-file", self.clock_path(broker_id)]
        for j in self.broker_ids:
            if j != broker_id:
                command += ["--peer", f"{j}={links[peer_link(broker_id, j)].address}"]
        return command + self._fault_options()

    def _fault_options(self) -> list[str]:
        """The broker options every chaos cluster's brokers share."""
        command = []
        if self.power_loss:
            command.append("--lose-unflushed-on-crash")
        if self.segment_bytes:
            command += ["--segment-bytes", str(self.segment_bytes)]
        for mutant in self.mutants:
            command += ["--mutant", mutant]
        if self.mutants:
            command.append("--allow-deliberate-bugs")
        return command

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self, timeout_s: float = READY_TIMEOUT_S) -> ProxiedCluster:
        for broker_id in self.broker_ids:
            self.start_broker(broker_id, timeout_s)
        self.wait_registered(set(self.broker_ids), timeout_s)
        return self

    def start_broker(self, broker_id: int, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start (or restart) a broker, learn its port and point every link to it there."""
        previous = self.processes.get(broker_id)
        if previous is not None and previous.stdout is not None:
            previous.stdout.close()
        log_path = os.path.join(self.directory, f"broker-{broker_id}.log")
        with open(log_path, "a") as log_file:
            # Forked by the one launcher thread (popen_dying_with_us): a broker the nemesis
            # thread restarted used to get SIGTERM when the nemesis finished (every partition
            # then went offline at once, at the end of a run: found by the hunting schedule).
            process = popen_dying_with_us(self.command(broker_id), stdout=subprocess.PIPE,
                                          stderr=log_file)
        self.processes[broker_id] = process
        port = _read_port(process, timeout_s, log_path)
        self.ports[broker_id] = port
        self._listening(broker_id, port)

    def _listening(self, broker_id: int, port: int) -> None:
        """The broker listens on port now: every link to it leads there."""
        target = ("127.0.0.1", port)
        self.mesh.retarget(client_link(broker_id), target)
        for i in self.broker_ids:
            if i != broker_id:
                self.mesh.retarget(peer_link(i, broker_id), target)

    def stop_controller(self) -> None:
        """The controller dies (it runs in this process: its threads stop, its sockets close;
        what it persisted in its snapshot is all a successor knows)."""
        self.controller.shutdown()

    def start_controller(self) -> None:
        """A new controller from the snapshot; the brokers' controller links now lead to it."""
        from kafkaref.impl.controller.server import ControllerServer

        self.controller = ControllerServer(**self._controller_args).start()
        for i in self.broker_ids:
            self.mesh.retarget(controller_link(i), _address(self.controller.address))

    def wait_registered(self, broker_ids: set[int], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if broker_ids <= {b.broker_id for b in self.controller.metadata().brokers}:
                return
            time.sleep(0.05)
        raise TimeoutError(f"brokers {sorted(broker_ids)} did not register in {timeout_s}s")

    def alive(self, broker_id: int) -> bool:
        process = self.processes.get(broker_id)
        return process is not None and process.poll() is None

    def signal(self, broker_id: int, sig: int) -> None:
        process = self.processes[broker_id]
        if process.poll() is None:
            process.send_signal(sig)
            if sig == signal.SIGKILL:
                process.wait(10)

    def stop(self) -> None:
        stop_processes(list(self.processes.values()))
        for process in self.processes.values():
            if process.stdout is not None:
                process.stdout.close()
        self.controller.shutdown()
        self.mesh.close()

    def __enter__(self) -> ProxiedCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what the controller knows ------------------------------------------------------------
    def leaders(self, topic: str) -> dict[int, int]:
        meta = self.controller.metadata().topic(topic)
        return {} if meta is None else {i: p.leader for i, p in enumerate(meta.partitions)}

    def partition_meta(self, topic: str):
        meta = self.controller.metadata().topic(topic)
        return () if meta is None else meta.partitions


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def _read_port(process: subprocess.Popen, timeout_s: float, log_path: str) -> int:
    """The port from the broker's `listening on HOST:PORT` line (its only stdout line)."""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(min(0.5, max(0.0, deadline - time.monotonic()))):
                line = process.stdout.readline().decode(errors="replace").strip()
                if line.startswith("listening on "):
                    return int(line.rpartition(":")[2])
                if not line and process.poll() is not None:
                    break
            elif process.poll() is not None:
                break
    process.kill()
    raise RuntimeError(f"broker did not start (exit {process.poll()}); see {log_path}")
