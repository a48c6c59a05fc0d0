"""A peer (chaos/peers: Apache Kafka, kafkaref, ...) on hosts of its own (chaos/netns.py), seen
through the interface the nemesis drives a ProxiedCluster with: broker ids, alive, signal,
start_broker, partition_meta, and `mesh`, whose links are cut by blackhole routes instead of a
proxy. So one nemesis, one schedule drawn from one seed, runs against any broker.

Links keep chaos/cluster.py's names, mapped onto addresses:

    peer-i-j   up: packets i -> j dropped (at i); down: j -> i dropped (at j). Replication, the
               quorum's votes and fetches, broker-to-controller heartbeats: everything i and j
               say to each other, since each node has one address.
    client-j   the root namespace (clients, the runner) and node j cut from each other.
    ctrl-i     a controller apart (kafkaref's, in the runner: CONTROLLER_ID) and node i cut
               from each other; for Kafka nothing more to cut: in combined mode the controller
               quorum is the nodes themselves, so cutting node i from the others cuts it from
               the quorum.

What a blackhole route cannot do (delay, refuse, corrupt bytes) is unsupported: the nemesis
skips such a step and says why, and the run's summary lists it under "skipped".
"""

from __future__ import annotations

import signal
from types import SimpleNamespace

from kafkaref.chaos.netns import CONTROLLER_ID, HOST_ID, Hosts
from kafkaref.chaos.proxy import Fault

METADATA_VERSION = 8
PROBE_TIMEOUT_S = 1.5
CLUSTER_METADATA = "__cluster_metadata"

# (kind, target) the peers cannot have on their own hosts, and why.
UNSUPPORTED_KINDS = {
    "clock": "the peer's clock is the machine's (kafkaref's skew file is kafkaref's own)",
    "lose-unfsynced": "a peer cannot be told to lose what it did not fsync",
    "corrupt": "not for peers yet (their segment layouts differ)",
    "corrupt-net": "needs the proxy mesh, which reads the bytes it forwards",
}
UNSUPPORTED_TARGETS = {
    ("partition", "delay"): "no tc netem in this kernel: a namespace link cannot be slowed",
    ("kill", "lagging-leader"): "slows links first: no tc netem in this kernel",
}


class NetnsLinks:
    """The mesh interface (set_fault, heal, links, errors) over Hosts' blackhole routes."""

    def __init__(self, hosts: Hosts, broker_ids: list[int], controller_apart: bool = False):
        self.hosts, self.controller_apart = hosts, controller_apart
        self.links = [f"client-{j}" for j in broker_ids] + [f"ctrl-{i}" for i in broker_ids] + [
            f"peer-{i}-{j}" for i in broker_ids for j in broker_ids if i != j]
        self.errors: list[str] = []  # the proxy mesh's field; routes fail loudly instead

    def set_fault(self, name: str, fault: Fault) -> None:
        if fault.delay_ms or fault.refuse or fault.corrupt_produce:
            raise ValueError(f"{name}: a blackhole route cannot {fault}")
        kind, *ids = name.split("-")
        if kind in ("client", "ctrl"):
            root = HOST_ID if kind == "client" else CONTROLLER_ID
            if (fault.cut_up or fault.cut_down) and (kind == "client" or self.controller_apart):
                self.hosts.drop(int(ids[0]), root)
            return
        source, target = map(int, ids)
        if fault.cut_up:
            self.hosts.drop(source, target)
        if fault.cut_down:
            self.hosts.drop(target, source)

    def heal(self) -> None:
        self.hosts.heal()

    def close(self) -> None:
        """The mesh's close: every cut removed (the hosts are their owner's to remove)."""
        self.hosts.heal()


class PeerCluster:
    """A started peer whose nodes run on hosts (one namespace each)."""

    def __init__(self, peer, hosts: Hosts):
        self.peer, self.hosts = peer, hosts
        self.broker_ids = sorted(peer.nodes)
        self.mesh = NetnsLinks(hosts, self.broker_ids)
        self.paused: set[int] = set()

    @property
    def bootstrap(self) -> str:
        return self.peer.bootstrap

    def unsupported(self, kind: str, target: str | None = None) -> str | None:
        """Why this peer cannot have a fault of kind (at target), or None when it can."""
        if kind in UNSUPPORTED_KINDS:
            return UNSUPPORTED_KINDS[kind]
        if kind in ("kill", "pause") and kind not in self.peer.supports:
            return f"{self.peer.name} has no {kind} fault"
        return UNSUPPORTED_TARGETS.get((kind, target))

    # -- processes -----------------------------------------------------------------------------
    def alive(self, broker_id: int) -> bool:
        return self.peer.alive(broker_id)

    def signal(self, broker_id: int, sig: int) -> None:
        if sig == signal.SIGKILL:
            self.peer.kill(broker_id)
            self.paused.discard(broker_id)
        elif sig == signal.SIGSTOP:
            self.peer.pause(broker_id)
            self.paused.add(broker_id)
        elif sig == signal.SIGCONT:
            self.peer.resume(broker_id)
            self.paused.discard(broker_id)
        else:
            raise ValueError(f"no fault sends signal {sig} to a peer")

    def start_broker(self, broker_id: int) -> None:
        """Restart a killed node; a node that does not come back raises (PeerError): the run
        crashes with that reason instead of recording what a broken harness did."""
        self.peer.restart(broker_id)

    def restore(self) -> dict:
        """Every link healed, every node running: what the nemesis's final heal does."""
        self.mesh.heal()
        restarted = []
        for broker_id in self.broker_ids:
            if not self.alive(broker_id):
                self.start_broker(broker_id)
                restarted.append(broker_id)
            elif broker_id in self.paused:
                self.signal(broker_id, signal.SIGCONT)
        return {"restarted": restarted}

    def stop(self) -> None:
        try:
            self.peer.stop()
        finally:
            self.hosts.remove()

    # -- what the nodes say --------------------------------------------------------------------
    def partition_meta(self, topic: str) -> list:
        """Each partition of topic as the freshest answer among the nodes has it (the highest
        leader epoch): leader, replicas, isr. A paused or cut node does not answer in time."""
        best: dict[int, SimpleNamespace] = {}
        for broker_id in self.broker_ids:
            if broker_id in self.paused or not self.alive(broker_id):
                continue
            for p in _metadata(self.peer.nodes[broker_id], topic):
                if p.index not in best or p.epoch > best[p.index].epoch:
                    best[p.index] = p
        return [best[i] for i in sorted(best)]

    def quorum_leader(self) -> int | None:
        """The active controller (the KRaft quorum's leader), asked of any node's controller
        listener with DescribeQuorum; None when no node answers (or the peer has no quorum)."""
        ports = getattr(self.peer, "controller_ports", None)
        if not ports:
            return None
        from kafkaref.impl.client.connection import KafkaConnection

        for broker_id in self.broker_ids:
            if broker_id in self.paused or not self.alive(broker_id):
                continue
            try:
                with KafkaConnection(self.peer.nodes[broker_id].host, ports[broker_id],
                                     timeout_s=PROBE_TIMEOUT_S) as conn:
                    answer = conn.send(55, 1, {"topics": [{
                        "topic_name": CLUSTER_METADATA,
                        "partitions": [{"partition_index": 0}]}]})
                partition = answer.topics[0].partitions[0]
            except (OSError, ValueError, IndexError):
                continue
            # Only the leader answers; the others say NOT_LEADER_OR_FOLLOWER with leader 0.
            if partition.error_code == 0 and partition.leader_id in self.peer.nodes:
                return int(partition.leader_id)
        return None


def _metadata(node, topic: str) -> list[SimpleNamespace]:
    from kafkaref.impl.client.connection import KafkaConnection

    try:
        with KafkaConnection(node.host, node.port, timeout_s=PROBE_TIMEOUT_S) as conn:
            answer = conn.send(3, METADATA_VERSION, {"topics": [{"name": topic}],
                                                     "allow_auto_topic_creation": False})
    except (OSError, ValueError):
        return []
    return [SimpleNamespace(index=p.partition_index, leader=int(p.leader_id),
                            epoch=int(p.leader_epoch), replicas=[int(r) for r in p.replica_nodes],
                            isr=[int(r) for r in p.isr_nodes])
            for t in answer.topics if t.name == topic and t.error_code == 0
            for p in t.partitions]

