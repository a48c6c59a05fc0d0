"""The threaded broker as a system under test for the model: ThreadedCluster, over sockets.

`ThreadedCluster(config)` runs `config.brokers` KafkaServers in this process (each the wiring of
impl/server/clustered.py: network and I/O threads, ticker, controller channel, replica fetchers)
around one ControllerServer, all on 127.0.0.1 and ephemeral ports, with storage logs in a
temporary directory. Every client event is a real Kafka request (Produce v8, Fetch v11,
ListOffsets v5; Metadata v8 for observations) sent with impl/client/connection.py. It implements
the model machine's SystemUnderTest protocol (feed(event) -> effects) for the threaded rule set,
properties/threaded_machine.py, which says what is compared and when; besides the model's events
it takes the harness events below (Awaiting, Pipelined, Isolate, Heal, Pause, Resume, Settle).

Time: each broker runs on one logical clock owned by the adapter; a Tick advances it and runs
every broker's clock-driven work (purgatory expiry, the ISR lag check) at once, so expirations
and ISR shrinks happen at the model's instants. The ISR lag check runs at Kafka's fixed rate,
every replica.lag.time.max.ms / 2 at the multiples of that interval, on both sides (the broker's
own schedule; a 1 ms period here once shrank ISRs the model kept: docs/lockstep.md). The
controller's session timeout is out of play: a crash fences the broker at once (the model's
controller "notices at once").

Faults: `CrashBroker` stops every thread of the broker without a clean shutdown and cuts each of
its segment files back to the size last fsynced (what a power loss may leave; the model's crash
loses the unflushed suffix), then fences it at the controller; `RestartBroker` opens a new
server on the same directory (recovery); `Flush` fsyncs its logs; `Isolate` / `Heal` cut a broker
off from its peers and back (its replica fetches and the fetches sent to it: replication only,
clients and controller still reach it); `Pause` / `Resume` freeze the broker's core (the adapter
holds its core lock: requests, replica fetches to and from it and its clock all stop) and thaw
it. Elections: the controller elects the first live ISR replica in assignment order when a
leader dies, so after a crash the model is fed that same Elect; the `elect` rule asks the
controller for a preferred-leader election (Kafka's ElectLeaders; not served on the wire here).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Sequence

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import ConnectionClosed, KafkaConnection
from kafkaref.impl.clock import Clock
from kafkaref.impl.controller.server import ControllerServer
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.mutants import parse_mutants
from kafkaref.impl.protocol.records import (
    build_batch_from_tuples,
    decode_batch_fields,
    split_batches,
)
from kafkaref.impl.replication.fetcher import RESPONSE_BYTES_MAX, FetcherManager, ReplicaFetcher
from kafkaref.impl.server.clustered import clustered_broker
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.server import KafkaServer
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import (
    DeleteRecordsResponse,
    Disconnected,
    Effect,
    ElectionResult,
    FetchResponse,
    ListOffsetsResponse,
    ProduceResponse,
)
from kafkaref.model.events import (
    LATEST,
    CrashBroker,
    DeleteRecords,
    Elect,
    Fetch,
    Flush,
    ListOffsets,
    Produce,
    RestartBroker,
    Tick,
)
from kafkaref.model.values import Entry
from kafkaref.properties.lockstep import fetch_version

TOPIC = "lockstep"
PRODUCE_V, FETCH_V, LIST_OFFSETS_V, METADATA_V, API_VERSIONS_V = 8, 11, 5, 8, 2
# The versions a client request goes at, by request id: odd ones at the newest versions Apache
# Kafka 4.3.1 serves (flexible encodings, topics named by id: Produce 13, Fetch 18), even ones at
# the older non-flexible versions, so that every walk checks both (issue 23).
NEWEST = {"produce": 13, "fetch": 18, "list_offsets": 11, "delete_records": 2}
OLDER = {"produce": PRODUCE_V, "fetch": FETCH_V, "list_offsets": LIST_OFFSETS_V,
         "delete_records": 0}




def versions_for(request_id: int) -> dict[str, int]:
    """Fetch's version also depends on the event: lockstep.fetch_version."""
    return NEWEST if request_id % 2 else OLDER
RESPONSE_WAIT_S = 15.0  # bound on one expected response (a loaded 2-core machine)
SETTLE_WAIT_S = 20.0  # bound on replication and metadata catching up after one step
POLL_S = 0.01


# -- harness events (properties/threaded_machine.py's; never fed to the model) ----------------------------

@attrs.frozen
class Awaiting:
    """Do `event` (a model event or a fault below), then wait for the responses to the requests
    whose ids are in `request_ids` (the ones the model answers in this step)."""

    event: object
    request_ids: frozenset[int] = frozenset()


@attrs.frozen
class Pipelined:
    """ListOffsets requests to one broker sent on one connection before any answer is read:
    Kafka answers a connection's requests in order (it mutes the connection while one is
    inside), so the answers must come back in request order with the model's values."""

    events: tuple[ListOffsets, ...]


@attrs.frozen
class Isolate:
    broker: int


@attrs.frozen
class Heal:
    broker: int


@attrs.frozen
class Pause:
    broker: int


@attrs.frozen
class Resume:
    broker: int


@attrs.frozen
class PartitionView:
    """One partition at a settle point: leader (-1: none) and ISR as Metadata reports them, the
    leader's hw (ListOffsets LATEST; -1 without a reachable leader); then what only says the
    broker is quiescent (read under the core lock: no API shows it): (leo, hw) of each broker's
    replica, None when the broker is down, paused or holds none; and the followers as the leader
    knows them, (log end offset or -1 unknown, last caught-up time on the logical clock), for
    ISR members only (() without a running leader). Without the last, a follower that had not
    yet fetched from a new leader, or since a heal, looked settled, and a later cut left the
    leader believing it behind, or caught up long ago: the ISR shrank on the broker, not in the
    model. Only ISR members' positions move the hw or shrink the ISR; an outsider's is
    overwritten by its next fetch before it can join, and there the sides differ: the model
    forgets a crashed follower's position (as KIP-903's broker epochs make Kafka ignore its
    stale fetches), the broker keeps it (as Kafka's leader keeps a replica's state until a new
    leader epoch)."""

    leader: int
    isr: tuple[int, ...]
    hw: int
    replicas: tuple[tuple[int, int] | None, ...]
    followers: tuple[tuple[int, int] | None, ...] = ()


@attrs.frozen
class Observation:
    partitions: tuple[PartitionView, ...]


@attrs.frozen
class Settle:
    """Wait until the broker shows `expected` (or the bound passes); answer what it shows."""

    expected: Observation


# -- the client's view of an effect (both sides go through it) ----------------------------------

CLIENT_RESPONSES = (ProduceResponse, FetchResponse, ListOffsetsResponse, DeleteRecordsResponse,
                    Disconnected)


def client_view(effect: Effect) -> tuple:
    """What a client can see of a response: no `via`, no record ids, no batch epochs."""
    if isinstance(effect, ProduceResponse):
        # After an append, Kafka answers every error (timeout, lost leadership, ISR below the
        # minimum) with the base offset the records got; the model states it only with
        # NOT_ENOUGH_REPLICAS_AFTER_APPEND (-1 otherwise), so elsewhere it is not compared.
        shown = effect.error in (ErrorCode.none, ErrorCode.not_enough_replicas_after_append)
        return ("produce", effect.request_id, effect.error, effect.base_offset if shown else None)
    if isinstance(effect, FetchResponse):
        first = effect.first_offset if effect.records else -1
        records = tuple((first + i, e.value, e.base) for i, e in enumerate(effect.records))
        return ("fetch", effect.request_id, effect.error, effect.high_watermark, records)
    if isinstance(effect, ListOffsetsResponse):
        return ("list_offsets", effect.request_id, effect.error, effect.offset)
    if isinstance(effect, DeleteRecordsResponse):
        return ("delete_records", effect.request_id, effect.error, effect.low_watermark)
    if isinstance(effect, Disconnected):
        return ("disconnected", effect.request_id)
    if isinstance(effect, ElectionResult):
        return ("elect", effect.partition, effect.leader, effect.error)
    raise TypeError(f"not a client-visible effect: {effect!r}")


def client_views(effects: Iterable[Effect]) -> list[tuple]:
    return sorted((client_view(e) for e in effects), key=repr)


# -- the broker side ------------------------------------------------------------------------------

class LogicalClock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


class Links:
    """Which brokers are cut off from their peers (replication traffic only)."""

    def __init__(self) -> None:
        self.isolated: set[int] = set()
        # A paused broker's links are cut too: a fetch sent to a paused leader would wait in its
        # request queue and be handled at resume, when the model's follower may be paused itself.
        self.paused: set[int] = set()
        # Held while a fetch is checked and sent, and while the adapter cuts or heals: once
        # Isolate returns, no fetch leaves over a cut link (a fetcher that had planned its round
        # before, for example while its broker was paused, is refused at the send).
        self.lock = threading.Lock()

    def cut(self, a: int, b: int) -> bool:
        return (a in self.isolated or b in self.isolated or a in self.paused
                or b in self.paused)

    def set_isolated(self, broker: int, isolated: bool) -> None:
        with self.lock:
            (self.isolated.add if isolated else self.isolated.discard)(broker)

    def set_paused(self, broker: int, paused: bool) -> None:
        with self.lock:
            (self.paused.add if paused else self.paused.discard)(broker)


class _LinkConnection(KafkaConnection):
    """A follower's connection to its leader that refuses to send over a cut link."""

    links: Links
    follower: int
    leader: int

    def send_raw(self, frame: bytes) -> None:
        with self.links.lock:
            if self.links.cut(self.follower, self.leader):
                raise ConnectionClosed(f"link {self.follower}-{self.leader} is cut")
            super().send_raw(frame)


class CuttableFetcher(ReplicaFetcher):
    """A replica fetcher that neither sends nor applies fetches over a cut link (the send is
    checked under Links.lock). A response that arrives after the cut is dropped, as if lost; its
    request left before the cut, from a settled state, so it told the leader nothing new."""

    def _cut(self) -> bool:
        return self.server.links.cut(self.server.broker.broker_id, self.leader_id)

    def _plan(self):
        return None if self._cut() else super()._plan()

    def _fetch(self, address, fetches):
        if self.connection is None or self.address != address:
            self._disconnect()
            connection = _LinkConnection(
                *address, timeout_s=10, client_id=f"replica-{self.server.broker.broker_id}",
                response_bytes_max=RESPONSE_BYTES_MAX)
            connection.links, connection.leader = self.server.links, self.leader_id
            connection.follower = self.server.broker.broker_id
            self.connection, self.address = connection, address
        return super()._fetch(address, fetches)

    def _apply(self, fetches, answers) -> bool:
        return False if self._cut() else super()._apply(fetches, answers)


class CuttableFetcherManager(FetcherManager):
    fetcher_class = CuttableFetcher


def start_broker(broker_id: int, data_dir: str, controller: str, clock: LogicalClock,
                 links: Links, config: ClusterConfig, mutants=frozenset()) -> KafkaServer:
    """impl/server/clustered.py's broker on the adapter's clock (both readings), without the
    retention task (its offsets are the storage's, not the walk's: docs/lockstep.md), with cuttable fetchers that poll (max
    wait 0: a follower learns a new hw on its next fetch, not after a logical timeout that never
    comes). The ISR lag check keeps the broker's own fixed rate (every replica.lag.time.max.ms /
    2, at the multiples of that interval on the logical clock, as the model: docs/lockstep.md,
    threaded rule 1)."""
    server = clustered_broker(
        data_dir, controller, ServerConfig(num_network_threads=1, num_io_threads=2,
                                           mutants=mutants),
        BrokerConfig(broker_id=broker_id, auto_create_topics=False,
                     replica_lag_time_max_ms=config.replica_lag_time_max_ms, mutants=mutants,
                     log_retention_check_interval_ms=None),
        clock=Clock(monotonic_ms=clock, wall_ms=clock))
    server.links = links
    server.extra_threads.remove(server.fetchers)
    server.fetchers = CuttableFetcherManager(server, max_wait_ms=0)
    server.extra_threads.append(server.fetchers)
    return server.start()


@attrs.define
class _Pending:
    request_id: int
    broker: int
    connection: KafkaConnection
    api_key: int
    version: int
    correlation_id: int
    partition: int


class ThreadedCluster:
    """The system under test: N threaded brokers, spoken to over sockets. See the module doc."""

    def __init__(self, config: ClusterConfig, directory: str | None = None, mutants=frozenset()):
        """mutants: deliberate faults (impl/mutants.py) of every broker and the controller."""
        if config.unclean_leader_election or config.bugs:
            raise ValueError("the threaded lockstep runs clean elections and no model bugs")
        self.config = config
        self.mutants = parse_mutants(mutants)
        self.own_directory = directory is None
        self.directory = directory or tempfile.mkdtemp(prefix="kafkaref-lockstep-")
        self.clock, self.links = LogicalClock(), Links()
        self.controller = ControllerServer(session_timeout_ms=3_600_000, tick_ms=50,
                                           mutants=self.mutants).start()
        self.servers: dict[int, KafkaServer | None] = {}
        self.idle: dict[int, list[KafkaConnection]] = {b: [] for b in range(config.brokers)}
        self.pending: dict[int, _Pending] = {}
        self.pauses: dict[int, tuple[threading.Event, threading.Thread]] = {}
        self.arrived: list[Effect] = []
        try:
            for b in range(config.brokers):
                self._start(b)
            self._wait_registered(set(range(config.brokers)))
            self._create_topic()
        except BaseException:
            self.close()
            raise

    # -- lifecycle --------------------------------------------------------------------------
    def _start(self, b: int) -> None:
        self.servers[b] = start_broker(b, os.path.join(self.directory, f"broker-{b}"),
                                       self.controller.address, self.clock, self.links,
                                       self.config, self.mutants)

    def _wait_registered(self, ids: set[int]) -> None:
        deadline = time.monotonic() + SETTLE_WAIT_S
        while {e.broker_id for e in self.controller.metadata().brokers} < ids:
            if time.monotonic() > deadline:
                raise TimeoutError(f"brokers {sorted(ids)} did not register")
            time.sleep(POLL_S)

    def _create_topic(self) -> None:
        c = self.config
        with self._fresh_connection(0) as connection:
            answer = connection.send(19, 4, {"topics": [{
                "name": TOPIC, "num_partitions": c.partitions,
                "replication_factor": c.replication_factor, "assignments": [],
                "configs": [{"name": "min.insync.replicas", "value": str(c.min_insync_replicas)}]}],
                "timeout": 30_000, "validate_only": False})
        error = ErrorCode(answer.topics[0].error_code)
        if error != ErrorCode.none:
            raise RuntimeError(f"creating the lockstep topic: {error.name}")
        meta = self.controller.metadata().topic(TOPIC)
        self.topic_id = uuid.UUID(meta.topic_id)  # Produce 13 and Fetch 13+ name it so
        for p, partition in enumerate(meta.partitions):
            if partition.replicas != c.assignment(p):
                raise RuntimeError(f"partition {p} on {partition.replicas}, the model says "
                                   f"{c.assignment(p)}")

    def close(self) -> None:
        for event, thread in self.pauses.values():
            event.set()
            thread.join(5)
        self.pauses.clear()
        for pending in self.pending.values():
            pending.connection.close()
        self.pending.clear()
        for connections in self.idle.values():
            for connection in connections:
                connection.close()
            connections.clear()
        for server in self.servers.values():
            if server is not None:
                server.shutdown()
        self.servers.clear()
        self.controller.shutdown()
        if self.own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the SystemUnderTest protocol ---------------------------------------------------------
    def feed(self, event) -> Sequence[Effect]:
        if isinstance(event, Settle):
            return (self.settle(event.expected),)
        if not isinstance(event, Awaiting):
            event = Awaiting(event)
        inner = event.event
        immediate = self._do(inner)
        self._wait_for(event.request_ids)
        out, self.arrived = [*immediate, *self.arrived], []
        return out

    def _do(self, event) -> list[Effect]:
        if isinstance(event, Produce):
            return self._produce(event)
        versions = versions_for(getattr(event, "request_id", 0))
        if isinstance(event, Fetch):
            return self._send(event.request_id, event.broker, event.partition, 1,
                              fetch_version(event), {
                "replica_id": -1, "max_wait": event.max_wait_ms, "min_bytes": event.min_bytes,
                "max_bytes": 50 << 20, "isolation_level": 0, "session_id": 0,
                "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
                "topics": [{"topic": TOPIC, "topic_id": self.topic_id, "partitions": [{
                    "partition": event.partition, "fetch_offset": event.offset,
                    "current_leader_epoch": event.current_leader_epoch, "log_start_offset": -1,
                    "partition_max_bytes": event.max_bytes}]}]})
        if isinstance(event, Pipelined):
            return self._pipelined(event.events)
        if isinstance(event, ListOffsets):
            return self._send(event.request_id, event.broker, event.partition, 2,
                              versions["list_offsets"], _list_offsets_request(event.partition,
                                                                              event.timestamp))
        if isinstance(event, DeleteRecords):
            return self._send(event.request_id, event.broker, event.partition, 21,
                              versions["delete_records"], {
                                  "timeout": event.timeout_ms, "topics": [{
                                      "name": TOPIC, "partitions": [{
                                          "partition_index": event.partition,
                                          "offset": event.offset}]}]})
        if isinstance(event, Tick):
            self._tick(event.ms)
        elif isinstance(event, CrashBroker):
            return self._crash(event.broker)
        elif isinstance(event, RestartBroker):
            self._restart(event.broker)
        elif isinstance(event, Flush):
            server = self._server(event.broker)
            with server.lock:
                for partition in server.broker.replica_manager.partitions.values():
                    partition.log.flush()
        elif isinstance(event, Elect):
            with self.controller.lock:
                error = self.controller.state.elect_leader(TOPIC, event.partition, event.leader)
            return [ElectionResult(event.partition, event.leader, error)]
        elif isinstance(event, Isolate):
            self.links.set_isolated(event.broker, True)
        elif isinstance(event, Heal):
            self.links.set_isolated(event.broker, False)
        elif isinstance(event, Pause):
            self._pause(event.broker)
        elif isinstance(event, Resume):
            release, thread = self.pauses.pop(event.broker)
            release.set()
            thread.join(5)
            self.links.set_paused(event.broker, False)
        else:
            raise TypeError(f"the threaded lockstep has no rule for {event!r}")
        return []

    def _server(self, b: int) -> KafkaServer:
        server = self.servers.get(b)
        if server is None:
            raise ValueError(f"broker {b} is down")
        return server

    # -- client requests ----------------------------------------------------------------------
    def _connection(self, b: int) -> KafkaConnection:
        idle = self.idle[b]
        return idle.pop() if idle else self._fresh_connection(b)

    def _fresh_connection(self, b: int) -> KafkaConnection:
        return KafkaConnection("127.0.0.1", self._server(b).port, timeout_s=RESPONSE_WAIT_S,
                               client_id="lockstep")

    def _produce(self, event: Produce) -> list[Effect]:
        batch = build_batch_from_tuples([(None, v, (), None) for v in event.values])
        if self.servers.get(event.broker) is None:
            return [] if event.acks == 0 else [Disconnected(event.request_id)]
        connection = self._connection(event.broker)
        version = versions_for(event.request_id)["produce"]
        try:
            correlation_id = connection.send_produce_request(
                version, event.acks, event.timeout_ms, TOPIC, event.partition, batch
            ) if version <= PRODUCE_V else connection.send_request(0, version, {
                "transactional_id": None, "acks": event.acks, "timeout": event.timeout_ms,
                "topic_data": [{"topic_id": self.topic_id, "partition_data": [
                    {"index": event.partition, "records": batch}]}]})
            if event.acks == 0:
                # No answer comes; a request behind it on the same connection is handled after
                # it, so its answer says the produce was handled (or the connection was closed).
                connection.send(18, API_VERSIONS_V, {})
                self.idle[event.broker].append(connection)
                return []
        except OSError:
            connection.close()
            return [] if event.acks == 0 else [Disconnected(event.request_id)]
        self.pending[correlation_id_key(event.broker, connection, correlation_id)] = _Pending(
            event.request_id, event.broker, connection, 0, version, correlation_id,
            event.partition)
        return []

    def _send(self, request_id: int, b: int, partition: int, api_key: int, version: int,
              values: dict) -> list[Effect]:
        if self.servers.get(b) is None:
            return [Disconnected(request_id)]
        connection = self._connection(b)
        try:
            correlation_id = connection.send_request(api_key, version, values)
        except OSError:
            connection.close()
            return [Disconnected(request_id)]
        self.pending[correlation_id_key(b, connection, correlation_id)] = _Pending(
            request_id, b, connection, api_key, version, correlation_id, partition)
        return []

    def _pipelined(self, events: Sequence[ListOffsets]) -> list[Effect]:
        """Send every request, then read the answers in order; an answer out of order (its
        correlation id not the next one) closes the connection: every request disconnected."""
        b = events[0].broker
        if self.servers.get(b) is None:
            return [Disconnected(e.request_id) for e in events]
        connection = self._connection(b)
        try:
            sent = [connection.send_request(2, LIST_OFFSETS_V, _list_offsets_request(
                e.partition, e.timestamp)) for e in events]
            answers = [decode_answer(e.request_id, 2, connection.receive(2, LIST_OFFSETS_V, c))
                       for e, c in zip(events, sent, strict=True)]
        except OSError:
            connection.close()
            return [Disconnected(e.request_id) for e in events]
        self.idle[b].append(connection)
        return answers

    def _wait_for(self, request_ids: frozenset[int]) -> None:
        """Receive until every expected request is answered (bounded), then whatever else has
        already arrived."""
        deadline = time.monotonic() + RESPONSE_WAIT_S
        while True:
            answered = {e.request_id for e in self.arrived}
            waiting = [p for p in self.pending.values() if p.request_id in request_ids
                       and p.request_id not in answered]
            timeout = 0.0 if not waiting else max(0.0, deadline - time.monotonic())
            if not self._receive_ready(timeout) and (not waiting or timeout == 0.0):
                return

    def _receive_ready(self, timeout: float) -> bool:
        """Receive every response readable within timeout; False if none was."""
        if not self.pending:
            return False
        by_socket = {p.connection.sock: key for key, p in self.pending.items()}
        ready, _, _ = select.select(list(by_socket), [], [], timeout)
        for sock in ready:
            pending = self.pending.pop(by_socket[sock])
            self.arrived.append(self._receive(pending))
        return bool(ready)

    def _receive(self, pending: _Pending) -> Effect:
        try:
            body = pending.connection.receive(pending.api_key, pending.version,
                                              pending.correlation_id)
        except OSError:
            pending.connection.close()
            return Disconnected(pending.request_id)
        self.idle[pending.broker].append(pending.connection)
        return decode_answer(pending.request_id, pending.api_key, body)

    # -- faults and time ----------------------------------------------------------------------
    def _tick(self, ms: int) -> None:
        self.clock.now_ms += ms
        for b, server in self.servers.items():
            if server is not None and b not in self.pauses:
                with server.lock:
                    server.broker.advance_clock(self.clock.now_ms)

    def _crash(self, b: int) -> list[Effect]:
        server = self.servers.get(b)
        if server is None:
            return []
        self._receive_ready(0.0)  # whatever it answered before it died is an answer
        server.stopping.set()
        server._tick_wake.set()
        server.requests.wake_idle(len(server.io_threads))
        for thread in (*server.extra_threads, server.acceptor, *server.network_threads,
                       *server.io_threads, server.ticker):
            thread.join(10)
        lost = []
        for key, pending in list(self.pending.items()):
            if pending.broker == b:
                pending.connection.close()
                del self.pending[key]
                lost.append(Disconnected(pending.request_id))
        for connection in self.idle[b]:
            connection.close()
        self.idle[b].clear()
        with server.lock:  # power loss: each segment file keeps what was fsynced
            for partition in server.broker.replica_manager.partitions.values():
                for path, size in partition.log.crash().items():
                    with contextlib.suppress(FileNotFoundError):
                        os.truncate(path, size)
        self.servers[b] = None
        self.links.set_isolated(b, False)  # a restarted broker comes back connected
        with self.controller.lock:
            self.controller.state.fence(b)
        return lost

    def _restart(self, b: int) -> None:
        if self.servers.get(b) is None:
            self._start(b)

    def _pause(self, b: int) -> None:
        server, held, release = self._server(b), threading.Event(), threading.Event()
        self.links.set_paused(b, True)

        def hold() -> None:
            with server.lock:
                held.set()
                release.wait(600)

        thread = threading.Thread(target=hold, name=f"lockstep-pause-{b}", daemon=True)
        thread.start()
        held.wait(RESPONSE_WAIT_S)
        self.pauses[b] = (release, thread)

    # -- settle points ------------------------------------------------------------------------
    def settle(self, expected: Observation) -> Observation:
        deadline = time.monotonic() + SETTLE_WAIT_S
        while True:
            seen = self.observe()
            if seen == expected or time.monotonic() > deadline:
                self._receive_ready(0.0)
                return seen
            time.sleep(POLL_S)  # polling replication progress, bounded by the deadline

    def observe(self) -> Observation:
        running = [b for b, s in self.servers.items() if s is not None and b not in self.pauses]
        metadata = {b: self._metadata(b) for b in running}
        views = []
        for p in range(self.config.partitions):
            answers = {metadata[b].get(p) for b in running}
            leader, isr = answers.pop() if len(answers) == 1 and None not in answers else (
                -2, tuple(sorted(map(repr, answers))))  # the brokers disagree (for now)
            hw = self._leader_hw(leader, p) if leader in running else -1
            replicas = tuple(self._replica_state(b, p) if b in running else None
                             for b in range(self.config.brokers))
            known = self._known_followers(leader, p) if leader in running else ()
            views.append(PartitionView(leader, isr, hw, replicas, known))
        return Observation(tuple(views))

    def _metadata(self, b: int) -> dict[int, tuple[int, tuple[int, ...]]]:
        try:
            with self._fresh_connection(b) as connection:
                answer = connection.send(3, METADATA_V, {"topics": [{"name": TOPIC}],
                                                         "allow_auto_topic_creation": False})
        except OSError:
            return {}
        out = {}
        for topic in answer.topics:
            for p in topic.partitions:
                out[p.partition_index] = (p.leader_id, tuple(sorted(p.isr_nodes)))
        return out

    def _leader_hw(self, leader: int, p: int) -> int:
        try:
            with self._fresh_connection(leader) as connection:
                answer = connection.send(2, LIST_OFFSETS_V, _list_offsets_request(p, LATEST))
        except OSError:
            return -1
        part = answer.topics[0].partitions[0]
        return part.offset if part.error_code == ErrorCode.none else -1

    def _known_followers(self, leader: int, p: int) -> tuple[int, ...]:
        server = self.servers[leader]
        with server.lock:
            partition = server.broker.replica_manager.partition((TOPIC, p))
            if partition is None or not partition.is_leader:
                return ()
            followers = partition.followers
            return tuple(None if b not in partition.isr
                         else (followers[b].log_end_offset, followers[b].last_caught_up_ms)
                         if b in followers else (-2, -2)
                         for b in sorted(partition.replicas) if b != leader)

    def _replica_state(self, b: int, p: int) -> tuple[int, int] | None:
        server = self.servers[b]
        with server.lock:
            partition = server.broker.replica_manager.partition((TOPIC, p))
            if partition is None:
                return None
            return partition.log_end_offset, partition.high_watermark


def correlation_id_key(broker: int, connection: KafkaConnection, correlation_id: int) -> int:
    return id(connection) * 1_000_003 + correlation_id


def _list_offsets_request(partition: int, timestamp: int) -> dict:
    return {"replica_id": -1, "isolation_level": 0, "timeout": 30_000, "topics": [{
        "name": TOPIC, "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                       "current_leader_epoch": -1}]}]}


def decode_answer(request_id: int, api_key: int, body) -> Effect:
    """A decoded response as the model's effect value (what is not on the wire left default)."""
    if api_key == 0:
        part = body.responses[0].partition_responses[0]
        error = ErrorCode(part.error_code)
        return ProduceResponse(request_id, error, part.base_offset)
    if api_key == 2:
        part = body.topics[0].partitions[0]
        error = ErrorCode(part.error_code)
        if error != ErrorCode.none:
            return ListOffsetsResponse(request_id, error)
        return ListOffsetsResponse(request_id, error, part.offset, part.timestamp)
    if api_key == 21:
        part = body.topics[0].partitions[0]
        return DeleteRecordsResponse(request_id, ErrorCode(part.error_code), part.low_watermark)
    part = body.responses[0].partitions[0]
    error = ErrorCode(part.error_code)
    entries: list[Entry] = []
    status, batches = split_batches(part.records or b"", allow_partial_tail=True)
    for batch in batches:
        _, header, fields = decode_batch_fields(batch)
        entries.extend(Entry(-1, header.partition_leader_epoch, bytes(f[3] or b""),
                             header.base_offset) for f in fields)
    first = entries[0].base if entries else -1
    return FetchResponse(request_id, error, part.high_watermark, first, tuple(entries))
