"""kafkaref's chaos cluster on hosts of its own: each `kafkaref broker` in a network namespace
(chaos/netns.py) at its own address, the controller in the runner's process on the bridge, and
partitions as blackhole routes -- the mechanism Apache Kafka is partitioned with
(`kafkaref chaos run --peer kafkaref`), so the two brokers meet the same cuts.

Everything else is ProxiedCluster's (chaos/cluster.py): the same broker options, restarts,
controller kill and restart from its snapshot, clock skew files, data directories for the
corrupt faults. Only the wiring differs: no proxy, so a broker listens on its own address at a
fixed port, the others reach it there (the address it registers), and `mesh` maps the link names
onto routes (chaos/peer_cluster.py NetnsLinks; ctrl-i cuts node i from the controller's
address, which clients do not use).
"""

from __future__ import annotations

import os
import sys

from kafkaref.chaos.cluster import ProxiedCluster
from kafkaref.chaos.netns import Hosts
from kafkaref.chaos.peer_cluster import UNSUPPORTED_TARGETS, NetnsLinks
from kafkaref.chaos.peers.apache_kafka import BROKER_SESSION_TIMEOUT_MS

BROKER_PORT, CONTROLLER_PORT = 9092, 9093
UNSUPPORTED_KINDS = {"corrupt-net": "needs the proxy mesh, which reads the bytes it forwards"}


class HostedCluster(ProxiedCluster):
    """Brokers 0..n-1, each on hosts' node of the same id; hosts is created, and removed by
    stop()."""

    def __init__(self, brokers: int, directory: str, hosts: Hosts, **options):
        """options: ProxiedCluster's. The session timeout is the Kafka peer's unless given, so
        that a dead broker is fenced as late on both and liveness compares like with like."""
        self.hosts = hosts
        options.setdefault("session_timeout_ms", BROKER_SESSION_TIMEOUT_MS)
        super().__init__(brokers, directory, **options)

    def _controller_address(self) -> dict:
        return {"host": self.hosts.controller_address, "port": CONTROLLER_PORT}

    def _network(self) -> NetnsLinks:
        return NetnsLinks(self.hosts, self.broker_ids, controller_apart=True)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.hosts.address(i)}:{BROKER_PORT}" for i in self.broker_ids)

    def unsupported(self, kind: str, target: str | None = None) -> str | None:
        """Why a fault cannot be had on hosts (what needs the proxy), or None."""
        return UNSUPPORTED_KINDS.get(kind) or UNSUPPORTED_TARGETS.get((kind, target))

    def command(self, broker_id: int) -> list[str]:
        exe = os.path.join(os.path.dirname(sys.executable), "kafkaref")
        command = [exe, "broker", "--broker-id", str(broker_id),
                   "--host", self.hosts.address(broker_id), "--port", str(BROKER_PORT),
                   "--data-dir", self.data_dir(broker_id),
                   "--controller", f"{self.hosts.controller_address}:{CONTROLLER_PORT}",
                   "--clock-skew-file", self.clock_path(broker_id)]
        return self.hosts.wrap(broker_id, command + self._fault_options())

    def _listening(self, broker_id: int, port: int) -> None:
        """Nothing to retarget: the broker is at its address and fixed port again."""

    def start_controller(self) -> None:
        """A new controller from the snapshot, at the same address and port."""
        from kafkaref.impl.controller.server import ControllerServer

        self.controller = ControllerServer(**self._controller_args).start()

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.hosts.remove()
