"""What a client knows of the cluster: brokers, partition leaders, one connection per broker."""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection, parse_address

METADATA_VERSION = 8


PROBE_TIMEOUT_S = 2.0


class NoBrokerAvailable(ConnectionError):
    pass


def brokers_seen(host: str, port: int) -> int:
    """How many brokers one node's Metadata answer lists; 0 when it does not answer (yet).
    A broker learns the others from the controller after it starts serving, so a cluster is
    ready for clients only once every node lists them all."""
    try:
        with KafkaConnection(host, port, timeout_s=PROBE_TIMEOUT_S) as conn:
            answer = conn.send(3, METADATA_VERSION, {"topics": [],
                                                     "allow_auto_topic_creation": False})
            return len(answer.brokers)
    except (OSError, ValueError):
        return 0


class ClusterView:
    def __init__(self, bootstrap: str, client_id: str = "kafkaref", timeout_s: float = 10.0):
        self.bootstrap = [parse_address(a) for a in bootstrap.split(",") if a.strip()]
        if not self.bootstrap:
            raise ValueError("no bootstrap address")
        self.client_id, self.timeout_s = client_id, timeout_s
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[tuple[str, int], tuple[int, int]] = {}  # -> (leader id, epoch)
        self.partition_counts: dict[str, int] = {}
        self.connections: dict[int, KafkaConnection] = {}

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()

    # -- metadata ---------------------------------------------------------------------------
    def refresh(self, topics: list[str] | None = None, auto_create: bool = False):
        """Ask any reachable broker for metadata; returns the response."""
        addresses = list(self.brokers.values()) + self.bootstrap
        last_error: Exception | None = None
        for host, port in addresses:
            try:
                with KafkaConnection(host, port, self.timeout_s, self.client_id) as connection:
                    response = connection.send(3, METADATA_VERSION, {
                        "topics": None if topics is None else [{"name": t} for t in topics],
                        "allow_auto_topic_creation": auto_create})
            except (OSError, ValueError) as exc:
                last_error = exc
                continue
            self._adopt(response)
            return response
        raise NoBrokerAvailable(f"no broker reachable: {last_error}")

    def _adopt(self, response) -> None:
        self.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        for topic in response.topics:
            if topic.error_code != ErrorCode.none:
                continue
            self.partition_counts[topic.name] = len(topic.partitions)
            for p in topic.partitions:
                self.leaders[(topic.name, p.partition_index)] = (p.leader_id, p.leader_epoch)

    def partitions_for(self, topic: str, wait_s: float = 10.0) -> int:
        deadline = time.monotonic() + wait_s
        while topic not in self.partition_counts:
            self.refresh([topic], auto_create=True)
            if topic in self.partition_counts or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if topic not in self.partition_counts:
            raise KeyError(f"unknown topic {topic}")
        return self.partition_counts[topic]

    # -- connections ------------------------------------------------------------------------
    def leader_connection(self, key: tuple[str, int]) -> tuple[KafkaConnection, int]:
        """(connection to the leader of key, leader epoch); refreshes metadata when needed."""
        leader = self.leaders.get(key)
        if leader is None or leader[0] < 0 or leader[0] not in self.brokers:
            self.refresh([key[0]])
            leader = self.leaders.get(key)
        if leader is None or leader[0] < 0:
            raise NoBrokerAvailable(f"no leader for {key}")
        return self.connection(leader[0]), leader[1]

    def connection(self, broker_id: int) -> KafkaConnection:
        connection = self.connections.get(broker_id)
        if connection is None:
            host, port = self.brokers[broker_id]
            connection = KafkaConnection(host, port, self.timeout_s, self.client_id)
            self.connections[broker_id] = connection
        return connection

    def drop(self, broker_id: int | None = None) -> None:
        """Forget a connection (after an error) and what we believed about leaders."""
        for bid in [broker_id] if broker_id is not None else list(self.connections):
            connection = self.connections.pop(bid, None)
            if connection is not None:
                connection.close()
        self.leaders.clear()
