"""kafkaref's own broker as a peer: LocalCluster (impl/server/local_cluster.py), the controller in
this process and each broker a `kafkaref broker` process, behind the same faults as every other
peer. Broker ids start at 0 (the controller assigns none: they are given on the command line)."""

from __future__ import annotations

import os

from kafkaref.chaos.peers.peer import Node, Peer
from kafkaref.impl.client.cluster_view import brokers_seen


def kafkaref_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafkaref")
    except PackageNotFoundError:
        return "unknown"


class Kafkaref(Peer):
    name = "kafkaref"
    version = kafkaref_version()
    supports = frozenset({"kill", "restart", "pause", "tear"})

    def __init__(self, directory: str, nodes: int = 3, keep: bool = False,
                 mutants=(), cluster_dir: str | None = None, **cluster_options):
        """cluster_dir: where LocalCluster keeps its brokers (default DIRECTORY/cluster; `kafkaref
        cluster --dir DIR` keeps them in DIR itself). cluster_options: LocalCluster's
        (session_timeout_ms, unclean_election, offsets_topic_partitions, num_partitions, ...)."""
        super().__init__(directory, keep)
        self.broker_count = nodes
        self.mutants = mutants
        self.cluster_dir = cluster_dir or os.path.join(self.directory, "cluster")
        self.cluster_options = cluster_options
        self.cluster = None

    def start(self) -> Kafkaref:
        """The controller here, then the brokers; their ports come from registration."""
        from kafkaref.impl.server.local_cluster import LocalCluster

        try:
            self.cluster = LocalCluster(self.broker_count, self.cluster_dir, mutants=self.mutants,
                                        **self.cluster_options)
            self.cluster.start()
            for broker_id, process in self.cluster.processes.items():
                self.nodes[broker_id] = Node(
                    broker_id, "127.0.0.1", self.cluster.ports[broker_id],
                    self.cluster.commands[broker_id],
                    os.path.join(self.cluster.directory, f"broker-{broker_id}.log"),
                    os.path.join(self.cluster.directory, f"broker-{broker_id}"))
                self.adopt(self.nodes[broker_id], process)
            self.save()
            self.wait_ready(list(self.nodes))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        super().stop_processes()
        if self.cluster is not None:
            self.cluster.stop()  # its controller, and any broker it still holds
        super().stop()

    def ready(self, node: Node) -> bool:
        """The broker serves and knows every broker of the cluster (its metadata image)."""
        return brokers_seen(node.host, node.port) >= len(self.nodes)
