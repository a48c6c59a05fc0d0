"""Peers: the brokers kafkaref can start and fault by name -- Apache Kafka itself, kafkaref's own
cluster, Tansu, franz-go's kfake -- so that `kafkaref conform --peer NAME`, `kafkaref chaos run --peer NAME` and the
differential tests need no recipe from a document.

    with start_peer("apache-kafka", nodes=3) as peer:
        peer.bootstrap            # 127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
        peer.kill(2); peer.restart(2); peer.pause(1); peer.resume(1)

A running peer's state lives in DIR/peer.json; `load_peer(DIR)` gives it back to another process
(the `kafkaref peer kill|restart|pause|resume|tear|stop --dir DIR` commands).
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid

from kafkaref.chaos.peers.fetched import PeerError
from kafkaref.chaos.peers.peer import STATE_FILE, Node, Peer


def _kinds() -> dict[str, type[Peer]]:
    from kafkaref.chaos.peers.apache_kafka import ApacheKafka
    from kafkaref.chaos.peers.kafkaref_cluster import Kafkaref
    from kafkaref.chaos.peers.kfake import Kfake
    from kafkaref.chaos.peers.tansu import Tansu

    return {kind.name: kind for kind in (ApacheKafka, Kafkaref, Kfake, Tansu)}




def make_peer(name: str, nodes: int | None = None, directory: str | None = None,
              keep: bool = False, **options) -> Peer:
    """A peer of kind `name`, not started yet. nodes: its default when None (apache-kafka and
    kafkaref 3, the others 1). directory: a new folder under the temporary directory when None
    (made when the peer starts)."""
    kinds = _kinds()
    if name not in kinds:
        raise PeerError(f"unknown peer {name!r}; known peers: {', '.join(sorted(kinds))}")
    directory = directory or os.path.join(tempfile.gettempdir(),
                                          f"kafkaref-peer-{name}-{uuid.uuid4().hex[:8]}")
    arguments = {"nodes": nodes} if nodes is not None else {}
    return kinds[name](directory, keep=keep, **arguments, **options)


def start_peer(name: str, nodes: int | None = None, directory: str | None = None,
               keep: bool = False, **options) -> Peer:
    """make_peer(...).start(): a running peer, or a PeerError saying why not."""
    return make_peer(name, nodes, directory, keep, **options).start()


def load_peer(directory: str) -> Peer:
    """The running peer whose state is in directory/peer.json (started by another process)."""
    path = os.path.join(directory, STATE_FILE)
    try:
        with open(path) as f:
            state = json.load(f)
        kind = _kinds()[state["name"]]
        nodes = [Node(**n) for n in state["nodes"]]
    except FileNotFoundError:
        raise PeerError(f"no peer in {directory}: {STATE_FILE} is missing "
                        "(`kafkaref peer start` writes it)") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise PeerError(f"{path} is not a peer's state file: {error}") from None
    peer = Peer.__new__(kind)
    Peer.__init__(peer, directory, keep=True)
    peer.version = state.get("version", "?")
    peer.owner_pid = state.get("owner_pid")
    peer.nodes = {n.node_id: n for n in nodes}
    return peer


def peer_kinds() -> dict[str, type[Peer]]:
    """Every kind of peer by name (class attributes name, version, supports)."""
    return _kinds()


PEER_NAMES = tuple(sorted(_kinds()))

__all__ = ["PEER_NAMES", "Peer", "PeerError", "load_peer", "make_peer", "peer_kinds",
           "start_peer"]
