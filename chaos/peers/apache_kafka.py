"""Apache Kafka as a peer: KRaft in combined mode (every node a broker and a voter), from the jars
Maven resolves (chaos/peers/apache-kafka.pom.xml), on 127.0.0.1.

One node, or three: 3 voters, default replication factor 3, min.insync.replicas 2, unclean leader
election off, the internal topics replicated the same way. Each node: its own node.id, client and
controller ports, log.dirs; formatted once with the cluster's id (kafka.tools.StorageTool format,
what bin/kafka-storage.sh runs), started with kafka.Kafka (bin/kafka-server-start.sh).

Heap: 2 cores and 24 GiB shared with the clients, kafkaref brokers and Spark, so each node gets a
small heap and the serial collector (one GC thread instead of one per core, and no concurrent
marking stealing the other core): 512 MiB for one node, 384 MiB each for three.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
import uuid

from kafkaref.chaos.peers.fetched import PeerError, java_major_version, maven_classpath
from kafkaref.chaos.peers.peer import Node, Peer, free_port

KAFKA_VERSION = "4.3.1"
POM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apache-kafka.pom.xml")
JAVA_MIN = 17
FORMAT_TIMEOUT_S = 120
START_ATTEMPTS = 3
# A restarted node registers only once its previous session expired: see properties().
BROKER_SESSION_TIMEOUT_MS = 3000
NETNS_PORTS = (9092, 9093)  # client, controller: a node alone in its namespace has them free

LOG4J2_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn">
  <Appenders>
    <Console name="out" target="SYSTEM_OUT">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Logger name="kafka.server.KafkaConfig" level="warn"/>
    <Logger name="org.apache.kafka.common.config.AbstractConfig" level="warn"/>
    <Logger name="kafka.request.logger" level="warn"/>
    <Root level="info"><AppenderRef ref="out"/></Root>
  </Loggers>
</Configuration>
"""


def classpath() -> str:
    """The pinned Apache Kafka's jars (fetched once with Maven), checking Java first."""
    if java_major_version() < JAVA_MIN:
        raise PeerError(f"Apache Kafka {KAFKA_VERSION} needs Java {JAVA_MIN} or newer; "
                        "set JAVA_HOME / PATH to one")
    return maven_classpath(POM)


def java_command(main_class: str, *args: str, heap_mb: int = 256,
                 jvm_options: tuple[str, ...] = ()) -> list[str]:
    """`java` running one of Kafka's main classes (broker, storage tool, or one of its tools)
    from the pinned jars."""
    return ["java", f"-Xmx{heap_mb}m", "-Xms64m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
            "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true", *jvm_options,
            "-cp", classpath(), main_class, *args]


class ApacheKafka(Peer):
    name = "apache-kafka"
    version = KAFKA_VERSION
    supports = frozenset({"kill", "restart", "pause", "tear"})

    def __init__(self, directory: str, nodes: int = 3, keep: bool = False,
                 overrides: dict[str, str] | None = None, hosts=None):
        """nodes: 1 or 3 (KRaft voters must be a majority; two would stop at one loss).
        overrides: server.properties entries that replace the defaults below.
        hosts: a created chaos.netns.Hosts for node ids 1..nodes: each node then runs in its
        own network namespace at its own address (Kafka's usual ports, nothing to pick), so
        partitions cut its replication and quorum traffic too."""
        super().__init__(directory, keep)
        if nodes not in (1, 3):
            raise PeerError(f"apache-kafka runs 1 or 3 nodes, not {nodes}")
        self.overrides = dict(overrides or {})
        self.heap_mb = 512 if nodes == 1 else 384
        self.hosts = hosts
        ids = range(1, nodes + 1)
        self.controller_ports = {i: NETNS_PORTS[1] if hosts else free_port() for i in ids}
        for node_id in ids:
            data = os.path.join(self.directory, f"node-{node_id}")
            host, port = ((hosts.address(node_id), NETNS_PORTS[0]) if hosts
                          else ("127.0.0.1", free_port()))
            self.nodes[node_id] = Node(node_id, host, port, [],
                                       os.path.join(self.directory, f"node-{node_id}.log"),
                                       os.path.join(data, "data"))

    # -- configuration -------------------------------------------------------------------------
    def properties(self, node: Node) -> dict[str, str]:
        replicas = len(self.nodes)
        min_isr = str(min(2, replicas))
        voters = ",".join(f"{i}@{self.nodes[i].host}:{p}"
                          for i, p in self.controller_ports.items())
        host = node.host
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": (f"PLAINTEXT://{host}:{node.port},"
                          f"CONTROLLER://{host}:{self.controller_ports[node.node_id]}"),
            "advertised.listeners": f"PLAINTEXT://{host}:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": node.data_dir,
            "num.partitions": "1",
            "default.replication.factor": str(replicas),
            "min.insync.replicas": min_isr,
            "unclean.leader.election.enable": "false",
            "offsets.topic.replication.factor": str(replicas),
            "transaction.state.log.replication.factor": str(replicas),
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": str(replicas),
            "share.coordinator.state.topic.min.isr": min_isr,
            # tests join groups at once; Kafka's shipped server.properties says 0 too
            "group.initial.rebalance.delay.ms": "0",
            # A restarted node may register only once its previous session expired
            # (DuplicateBrokerRegistrationException before): Kafka's 9 s would make every
            # restart of a fault schedule take 10 s. 3 s, heartbeats every 0.5 s.
            "broker.session.timeout.ms": str(BROKER_SESSION_TIMEOUT_MS),
            "broker.heartbeat.interval.ms": "500",
        }
        props.update(self.overrides)
        return props

    def _write_config(self, node: Node) -> str:
        folder = os.path.dirname(node.data_dir)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "server.properties")
        with open(path, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in self.properties(node).items())
        log4j = os.path.join(self.directory, "log4j2.xml")
        if not os.path.exists(log4j):
            with open(log4j, "w") as f:
                f.write(LOG4J2_XML)
        return path

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ApacheKafka:
        """Format and start every node. Ports are picked free before the JVMs bind them; should
        another process take one in between, the nodes are formatted again on fresh ports."""
        try:
            for attempt in range(1, START_ATTEMPTS + 1):
                self._prepare()
                try:
                    self.start_nodes()
                    return self
                except PeerError:
                    if attempt == START_ATTEMPTS or not self._lost_a_port():
                        raise
                self._new_ports()
        except BaseException:
            self.stop()
            raise
        return self

    def _prepare(self) -> None:
        cluster_id = _cluster_id()
        log4j = f"-Dlog4j2.configurationFile={os.path.join(self.directory, 'log4j2.xml')}"
        configs = {}
        for node in self.nodes.values():
            shutil.rmtree(os.path.dirname(node.data_dir), ignore_errors=True)
            configs[node.node_id] = self._write_config(node)
            node.command = java_command("kafka.Kafka", configs[node.node_id],
                                        heap_mb=self.heap_mb, jvm_options=(log4j,))
            if self.hosts is not None:
                node.command = self.hosts.wrap(node.node_id, node.command)
        with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:  # a JVM each
            for done in [pool.submit(self._format, node, configs[node.node_id], cluster_id)
                         for node in self.nodes.values()]:
                done.result()

    def _lost_a_port(self) -> bool:
        if self.hosts is not None:
            return False  # a namespace of our own: nobody else binds there
        return any("Address already in use" in _read(n.log_path) for n in self.nodes.values())

    def _new_ports(self) -> None:
        self.controller_ports = {i: free_port() for i in self.controller_ports}
        for node in self.nodes.values():
            node.port = free_port()
            with open(node.log_path, "a") as log:
                log.write("--- started again on fresh ports: one was taken ---\n")

    def _format(self, node: Node, config: str, cluster_id: str) -> None:
        command = java_command("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", config)
        done = subprocess.run(command, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S,
                              check=False)
        if done.returncode != 0:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise PeerError(f"formatting node {node.node_id}'s storage failed: {last[0][:300]}")

    def ready(self, node: Node) -> bool:
        """The node answers Metadata naming every node of the cluster (the quorum formed and
        every broker registered and unfenced)."""
        from kafkaref.impl.client.cluster_view import brokers_seen

        return brokers_seen(node.host, node.port) >= len(self.nodes)


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _cluster_id() -> str:
    """A cluster id as StorageTool random-uuid makes it: 16 random bytes, URL-safe base64, never
    starting with "-" (Kafka's Uuid.randomUuid draws again then: `format -t -X...` reads the id
    as an option, and one chaos run in 64 per node failed to start that way)."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
