"""Client-level checks of threaded brokers (impl/server) with real requests on 127.0.0.1.

Each check builds its brokers in this process (KafkaServer on in-memory logs; a cluster has a
ControllerServer and clustered brokers with replica fetcher threads), drives them only through
the Kafka protocol, and returns a description of what a client saw that Kafka's contract
forbids (docs/semantics.md), or None. The mutant runner (properties/mutant_matrix.py) runs them
with each deliberate fault switched on; without faults every check must return None.

Timing is only ever checked from below (an answer may not come before max_wait), which load
cannot make fail; waits for the cluster to reach a state are bounded and polled.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import tempfile
import time
from collections.abc import Callable, Iterator

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.mutants import Mutant
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.config import ServerConfig
from kafkaref.properties.waiting import wait_until

TOPIC = "checked"
WAIT_S = 15  # bound on waiting for the cluster to reach a state


@attrs.frozen
class BrokerCheck:
    name: str
    layers: frozenset[str]
    function: Callable[[frozenset[Mutant]], str | None]


# -- brokers ----------------------------------------------------------------------------------
@contextlib.contextmanager
def single(mutants: frozenset[Mutant]) -> Iterator:
    from kafkaref.impl.server.single import single_broker

    server = single_broker("", ServerConfig(num_network_threads=1, num_io_threads=2,
                                            mutants=mutants),
                           BrokerConfig(mutants=mutants), log_factory=lambda key: MemoryLog())
    server.start()
    try:
        with server.lock:
            server.broker.create_topic(TOPIC, 1, 1, {}, lambda error, message: None)
        yield server
    finally:
        server.shutdown()


@contextlib.contextmanager
def cluster(mutants: frozenset[Mutant], brokers: int = 2, min_insync: int = 2,
            session_timeout_ms: int = 60_000, lag_ms: int = 30_000) -> Iterator[dict]:
    """brokers threaded brokers + a controller, one topic (RF = brokers) with its leader on 0."""
    from kafkaref.impl.controller.server import ControllerServer
    from kafkaref.impl.server.clustered import clustered_broker

    controller = ControllerServer(session_timeout_ms=session_timeout_ms, mutants=mutants)
    controller.start()
    servers, scratch = {}, tempfile.TemporaryDirectory(prefix="kafkaref-checks-")
    try:
        for b in range(brokers):
            servers[b] = clustered_broker(
                f"{scratch.name}/broker-{b}",
                controller.address, ServerConfig(num_network_threads=1, num_io_threads=2,
                                                 mutants=mutants),
                BrokerConfig(broker_id=b, replica_lag_time_max_ms=lag_ms, mutants=mutants),
                log_factory=lambda key: MemoryLog(), replica_fetch_wait_max_ms=100).start()
        wait_until(lambda: len(controller.metadata().brokers) == brokers, timeout_s=WAIT_S,
                   what="brokers registered")
        with KafkaConnection("127.0.0.1", servers[0].port, timeout_s=WAIT_S) as connection:
            answer = connection.send(19, 4, {"topics": [{
                "name": TOPIC, "num_partitions": 1, "replication_factor": brokers,
                "assignments": [], "configs": [{"name": "min.insync.replicas",
                                                "value": str(min_insync)}]}],
                "timeout": 10_000, "validate_only": False})
        assert answer.topics[0].error_code == 0, answer
        wait_until(lambda: len(isr(servers[0])) == brokers, timeout_s=WAIT_S, what="full ISR")
        yield servers
    finally:
        for server in servers.values():
            if not server.stopping.is_set():
                server.shutdown()
        controller.shutdown()
        scratch.cleanup()


def isr(server) -> tuple[int, ...]:
    with KafkaConnection("127.0.0.1", server.port, timeout_s=WAIT_S) as connection:
        answer = connection.send(3, 4, {"topics": [{"name": TOPIC}],
                                        "allow_auto_topic_creation": False})
    partitions = answer.topics[0].partitions
    return tuple(partitions[0].isr_nodes) if partitions else ()


# -- requests ---------------------------------------------------------------------------------
def produce(connection, acks: int, timeout_ms: int = 5000, value: bytes = b"v"):
    data = build_batch([(None, value, (), None)])
    answer = connection.send(0, 8, {"transactional_id": None, "acks": acks,
                                    "timeout": timeout_ms, "topic_data": [{
                                        "name": TOPIC, "partition_data": [
                                            {"index": 0, "records": data}]}]})
    return answer.responses[0].partition_responses[0]


def fetch(connection, offset: int = 0, max_wait_ms: int = 0, min_bytes: int = 1):
    answer = connection.send(1, 4, {
        "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": min_bytes,
        "max_bytes": 1 << 20, "isolation_level": 0, "topics": [{
            "topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": offset,
                                            "partition_max_bytes": 1 << 20}]}]})
    return answer.responses[0].partitions[0]


# -- the checks -------------------------------------------------------------------------------
def hw_and_acks_wait_for_the_isr(mutants) -> str | None:
    """RF 2, follower stopped (still in the ISR): a record on the leader alone is not committed.
    A consumer sees hw 0 and no record; acks=all times out (REQUEST_TIMED_OUT) in time."""
    with cluster(mutants) as servers:
        servers[1].shutdown()
        # 3 s for an answer due after 300 ms (plus a ticker period): never a slow machine
        with KafkaConnection("127.0.0.1", servers[0].port, timeout_s=3) as connection:
            written = produce(connection, acks=1)
            if written.error_code != 0:
                return f"acks=1 produce failed: {ErrorCode(written.error_code).name}"
            answer = fetch(connection)
            if answer.high_watermark != 0:
                return (f"hw {answer.high_watermark} reported while the only other ISR "
                        "member has nothing")
            if answer.records:
                return "a consumer fetch returned a record above the hw"
            try:
                waited = produce(connection, acks=-1, timeout_ms=300)
            except OSError:  # TimeoutError included
                return "acks=all (timeout 300 ms) with a stopped ISR member: no answer in 3 s"
            if waited.error_code == 0:
                return "acks=all acknowledged while an ISR member had not replicated it"
            if waited.error_code != ErrorCode.request_timed_out:
                return f"acks=all answered {ErrorCode(waited.error_code).name}, not a timeout"
    return None


def min_insync_replicas_enforced(mutants) -> str | None:
    """RF 2, min.insync.replicas 2, the follower fenced (ISR = {leader}): acks=all is refused
    with NOT_ENOUGH_REPLICAS, and an acks=1 write does not become committed (KIP-966)."""
    with cluster(mutants, session_timeout_ms=600) as servers:
        servers[1].shutdown()
        wait_until(lambda: isr(servers[0]) == (0,), timeout_s=WAIT_S,
                   what="ISR shrunk to the leader")
        with KafkaConnection("127.0.0.1", servers[0].port, timeout_s=5) as connection:
            answer = produce(connection, acks=-1)
            if answer.error_code != ErrorCode.not_enough_replicas:
                return (f"acks=all with ISR {{0}} below min.insync.replicas=2 answered "
                        f"{ErrorCode(answer.error_code).name}")
            produce(connection, acks=1)
            if fetch(connection).high_watermark != 0:
                return "the hw advanced while the ISR is below min.insync.replicas"
    return None


def pipelined_answers_in_request_order(mutants) -> str | None:
    """One connection, two requests in flight: a fetch parked in purgatory, then ApiVersions.
    Kafka answers a connection's requests in order."""
    with single(mutants) as server:
        fetch_frame = wire.encode_request(1, "checks", build(wire.request_class(1, 11), {
            "replica_id": -1, "max_wait": 500, "min_bytes": 1 << 20, "max_bytes": 1 << 20,
            "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                        "partition_max_bytes": 1 << 20}]}]}))
        versions = wire.encode_request(2, "checks", build(wire.request_class(18, 3), {
            "client_software_name": "checks", "client_software_version": "1"}))
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(fetch_frame + versions)
            order = [_correlation_id(sock) for _ in range(2)]
    return None if order == [1, 2] else f"answers came back in the order {order}, sent [1, 2]"


def _correlation_id(sock) -> int:
    size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
    return struct.unpack_from(">i", _recv_exactly(sock, size))[0]


def _recv_exactly(sock, n: int) -> bytes:
    chunks, remaining = [], n
    while remaining:
        chunk = sock.recv(remaining)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def fetch_waits_for_min_bytes(mutants) -> str | None:
    """A fetch for at least 1 byte of an empty partition waits max_wait_ms (400) before it is
    answered empty. (Only the lower bound is checked: load makes answers later, never earlier.)"""
    with single(mutants) as server:
        with KafkaConnection("127.0.0.1", server.port, timeout_s=10) as connection:
            start = time.monotonic()
            answer = fetch(connection, max_wait_ms=400, min_bytes=1)
            elapsed_ms = (time.monotonic() - start) * 1000
    if answer.records or elapsed_ms >= 390:
        return None
    return f"an empty fetch (min_bytes 1, max_wait 400 ms) was answered after {elapsed_ms:.0f} ms"


CHECKS = (
    BrokerCheck("broker: hw and acks=all", frozenset({"core"}), hw_and_acks_wait_for_the_isr),
    BrokerCheck("broker: min.insync", frozenset({"core"}), min_insync_replicas_enforced),
    BrokerCheck("broker: answer order", frozenset({"server"}),
                pipelined_answers_in_request_order),
    BrokerCheck("broker: fetch min_bytes", frozenset({"core"}), fetch_waits_for_min_bytes),
)
