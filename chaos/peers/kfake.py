"""franz-go's kfake as a peer: an in-process fake Kafka cluster in Go (about 60 APIs, every
broker of the cluster in one process, no replication: a partition lives once, its "replicas"
are names). A small Go main kept in the repo (chaos/peers/kfake_main/, its go.mod pinning kfake
and franz-go v1.22.3) is built once with `go build` into the cache and started on 127.0.0.1.

One process is one node here, whatever the number of brokers it serves: a kill stops them all.
It keeps its state in its data folder (kfake's DataDir), so a restart brings the log back; there
are no Kafka segment files to tear.
"""

from __future__ import annotations

import os

from kafkaref.chaos.peers.fetched import go_binary
from kafkaref.chaos.peers.peer import Node, Peer, free_port
from kafkaref.impl.client.cluster_view import brokers_seen

MAIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kfake_main")
# The pseudo-version go.mod pins (kfake has no release tags); a test reads both.
KFAKE_VERSION = "v0.0.0-20260918054303-01f206a7e32c"


class Kfake(Peer):
    name = "kfake"
    version = KFAKE_VERSION
    supports = frozenset({"kill", "restart", "pause"})
    start_timeout_s = 30.0

    def __init__(self, directory: str, nodes: int = 1, keep: bool = False):
        """nodes: the brokers kfake serves (each its own port), all in one process."""
        super().__init__(directory, keep)
        ports = [free_port() for _ in range(nodes)]
        data = os.path.join(self.directory, "data")
        command = [go_binary(MAIN_DIR, "kfake-peer"),
                   "-ports", ",".join(map(str, ports)), "-data-dir", data]
        # One Node: the process, at its first broker's port; the others are on its command line.
        self.nodes[1] = Node(1, "127.0.0.1", ports[0], command,
                             os.path.join(self.directory, "kfake.log"), data)

    @property
    def ports(self) -> list[int]:
        """Every broker's port, from the command line (so a peer loaded from peer.json has them)."""
        command = self.nodes[1].command
        return [int(p) for p in command[command.index("-ports") + 1].split(",")]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def node_by_port(self, port: int) -> Node:
        """Every broker is the one process."""
        return self.nodes[1] if port in self.ports else super().node_by_port(port)

    def ready(self, node: Node) -> bool:
        return brokers_seen(node.host, node.port) >= len(self.ports)
