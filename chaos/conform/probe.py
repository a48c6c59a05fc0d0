"""A Probe: one check's view of the broker under test, built on our own protocol code.

It negotiates API versions from the broker's ApiVersions answer at its level
(catalogue.LOWEST / HIGHEST: the lowest or highest version of each API the broker advertises
and the probe can speak; PREFERRED_LEVEL: our preferred, non-flexible versions when the broker
has them, else the nearest one it advertises) and notes every version it sent, keeps every
connection it opens so the runner can close them when a check overruns its deadline, and
remembers the last exchanges so a failure carries the request and response that showed it.
Requests are described once with every field any version might carry (a topic by name and by
id: impl/protocol/messages.build keeps what the version has), so one check runs at any level.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import secrets
import socket
import threading
import time
import uuid

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import (
    HIGHEST,
    LOWEST,
    PREFERRED_LEVEL,
    CheckFailed,
    Evidence,
    Skip,
)
from kafkaref.impl.client.connection import KafkaConnection, parse_address
from kafkaref.impl.protocol.list_offsets import LATEST
from kafkaref.impl.protocol.records import (
    Record,
    base_offset_of,
    build_batch,
    decode_batch,
    split_batches,
)

# Produce errors that say the batch was not appended and the leader moved or is not known yet.
RETRIABLE_PRODUCE = (ErrorCode.not_leader_or_follower, ErrorCode.leader_not_available,
                     ErrorCode.unknown_topic_or_partition)

# api key -> (name, the version we prefer at PREFERRED_LEVEL). Fetch stays below v13 there.
PREFERRED: dict[int, tuple[str, int]] = {
    0: ("Produce", 8), 1: ("Fetch", 11), 2: ("ListOffsets", 5), 3: ("Metadata", 8),
    8: ("OffsetCommit", 7), 9: ("OffsetFetch", 5), 10: ("FindCoordinator", 2),
    11: ("JoinGroup", 5), 12: ("Heartbeat", 3), 13: ("LeaveGroup", 2), 14: ("SyncGroup", 3),
    16: ("ListGroups", 2), 18: ("ApiVersions", 3), 19: ("CreateTopics", 4),
    22: ("InitProducerId", 4), 20: ("DeleteTopics", 3), 21: ("DeleteRecords", 1),
    32: ("DescribeConfigs", 3), 33: ("AlterConfigs", 1), 37: ("CreatePartitions", 1),
    42: ("DeleteGroups", 1), 44: ("IncrementalAlterConfigs", 0),
    75: ("DescribeTopicPartitions", 0),
}
VERSION_CAP = {1: 12}  # PREFERRED_LEVEL only
# The lowest version the probe sends where the broker advertises lower: Produce from v3 (kio
# has no v0-2, and Kafka 4 refuses them: KIP-896), Metadata from v4 (v0-3 create any topic they
# name, which a check asking about an absent topic must not do).
PROBE_FLOOR = {0: 3, 3: 4}
TOPIC_IDS_METADATA = 10  # the first Metadata version answering topic ids
TEXT_MAX = 700


def summarise(value, depth: int = 0):
    """A kio message (or any value) as plain JSON-able data: bytes as their size, enums by name,
    long sequences cut, so evidence stays readable."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: summarise(getattr(value, f.name), depth + 1)
                for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict):
        return {k: summarise(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [summarise(v, depth + 1) for v in value[:8]]
        return items + ([f"... {len(value) - 8} more"] if len(value) > 8 else [])
    return value if isinstance(value, int | float | str | bool | type(None)) else repr(value)


def text(value) -> str:
    out = str(summarise(value))
    return out if len(out) <= TEXT_MAX else out[:TEXT_MAX] + " ..."


def batch_now(records, **options) -> bytes:
    """A v2 batch (records.build_batch) whose records without a timestamp of their own are
    stamped now, as a producer stamps them. Stamped 1970 (build_batch's default), they are what
    time retention (retention.ms, 7 days by default) deletes at the broker's next run, which
    comes 30 s after a broker starts (log.initial.task.delay.ms): a fault check's restarted
    broker, leader after a failover, then answered a fetch at 0 OFFSET_OUT_OF_RANGE."""
    return build_batch(records, **{"base_timestamp": now_ms(), **options})


class Conn:
    """One connection to one broker, logging every exchange into its probe."""

    def __init__(self, probe: Probe, address: tuple[str, int]):
        self.probe, self.address = probe, address
        self.kafka = KafkaConnection(*address, timeout_s=probe.timeout_s, client_id="conform")
        probe._register(self.kafka.sock)

    def call(self, api_key: int, values: dict, version: int | None = None):
        version = self.probe.version(api_key) if version is None else version
        self.probe.sent(api_key, version)
        response = self.kafka.send(api_key, version, values)
        self.probe.log(api_key, version, values, response)
        return response

    def send(self, api_key: int, values: dict, version: int | None = None) -> int:
        """Send without waiting (pipelining); the correlation id."""
        version = self.probe.version(api_key) if version is None else version
        self.probe.sent(api_key, version)
        return self.kafka.send_request(api_key, version, values)

    def receive(self, api_key: int, correlation_id: int, version: int | None = None):
        version = self.probe.version(api_key) if version is None else version
        return self.kafka.receive(api_key, version, correlation_id)

    def close(self) -> None:
        self.kafka.close()


class Probe:
    def __init__(self, bootstrap: str, versions: dict[int, tuple[int, int]],
                 timeout_s: float = 10.0, replication_factor: int | None = None,
                 options: dict | None = None, created=None,
                 level: str = PREFERRED_LEVEL):
        self.bootstrap = [parse_address(a) for a in bootstrap.split(",") if a.strip()]
        self.versions = versions  # api key -> (min, max) the broker advertises
        self.level = level
        self.used: dict[str, set[int]] = {}  # API name -> the versions sent at
        self._topic_ids: dict[str, uuid.UUID] = {}
        self.timeout_s = timeout_s
        self.options = options or {}
        self.run_id = secrets.token_hex(3)
        self.exchanges: collections.deque[Evidence] = collections.deque(maxlen=6)
        self.problems: list[CheckFailed] = []  # soft failures, reported when the check ends
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._abandoned = False
        self._leaders: dict[tuple[str, int], Conn] = {}
        self._brokers: dict[int, tuple[str, int]] = {}
        self._replication_factor = replication_factor
        self.created = created  # cleanup.Leftovers: every name handed out, deleted at the end

    # -- bookkeeping ----------------------------------------------------------------------
    def _register(self, sock: socket.socket) -> None:
        with self._lock:
            if self._abandoned:
                sock.close()
                raise ConnectionError("check abandoned (deadline passed)")
            self._sockets.append(sock)

    def abandon(self) -> None:
        """Close every socket this check opened: a check blocked in recv() wakes with an error."""
        with self._lock:
            self._abandoned = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def log(self, api_key: int, version: int, request, response) -> None:
        name = PREFERRED.get(api_key, (str(api_key),))[0]
        self.exchanges.append(Evidence(f"{name} v{version}", text(request), text(response)))

    def fail(self, message: str, *, request="", response="", expected="") -> CheckFailed:
        own = Evidence(message, text(request) if request != "" else "",
                       text(response) if response != "" else "", str(expected))
        return CheckFailed(message, (own, *reversed(self.exchanges)))

    def expect(self, condition: bool, message: str, *, request="", response="",
               expected="") -> None:
        if not condition:
            raise self.fail(message, request=request, response=response, expected=expected)

    def expect_error(self, got, wanted: ErrorCode | tuple, what: str, response="",
                     soft: bool = False) -> None:
        wanted = wanted if isinstance(wanted, tuple) else (wanted,)
        got_code = ErrorCode(int(got))
        (self.soft if soft else self.expect)(
            got_code in wanted, f"{what}: broker answered {got_code.name}", response=response,
            expected=" or ".join(w.name for w in wanted))

    def soft(self, condition: bool, message: str, *, request="", response="",
             expected="") -> None:
        """Like expect, but the check goes on: every soft failure is reported at its end (for
        checks of several independent answers)."""
        if not condition:
            self.problems.append(self.fail(message, request=request, response=response,
                                           expected=expected))

    def name(self, label: str) -> str:
        """A topic or group name unique to this run (the run deletes it from the broker at
        its end: chaos/conform/cleanup.py)."""
        name = f"conform-{label}-{self.run_id}"
        if self.created is not None:
            self.created.add(name)
        return name

    # -- versions and connections -----------------------------------------------------------
    def version(self, api_key: int) -> int:
        """The version of api_key this probe sends at its level (Skip if there is none)."""
        name, preferred = PREFERRED[api_key]
        if api_key not in self.versions:
            raise Skip(f"the broker does not advertise {name} (api key {api_key})")
        low, high = self.speakable(api_key)
        if self.level == LOWEST:
            return low
        if self.level == HIGHEST:
            return high
        high = min(high, VERSION_CAP.get(api_key, high))
        if high < low:
            raise Skip(f"the broker's {name} versions {low}-{high} are all beyond the probe's")
        return max(low, min(preferred, high))

    def speakable(self, api_key: int) -> tuple[int, int]:
        """(lowest, highest) version of api_key both the broker and the probe speak."""
        name = PREFERRED[api_key][0]
        low, high = self.versions[api_key]
        known = kio_versions(api_key)
        low = max(low, known.start, PROBE_FLOOR.get(api_key, 0))
        high = min(high, known.stop - 1)
        if high < low:
            raise Skip(f"the broker's {name} versions {self.versions[api_key]} are all "
                       f"beyond the probe's")
        return low, high

    def sent(self, api_key: int, version: int) -> None:
        name = PREFERRED.get(api_key, (str(api_key),))[0]
        self.used.setdefault(name, set()).add(version)

    def versions_sent(self) -> dict[str, list[int]]:
        return {name: sorted(found) for name, found in sorted(self.used.items())}

    def supports(self, api_key: int) -> bool:
        return api_key in self.versions

    def connect(self, address: tuple[str, int] | None = None) -> Conn:
        """A connection to address, or to the first bootstrap address that accepts one."""
        if address is not None:
            return Conn(self, address)
        for candidate in self.bootstrap[:-1]:
            try:
                return Conn(self, candidate)
            except OSError:
                continue  # a broker of the cluster is down (a fault check killed it)
        return Conn(self, self.bootstrap[-1])

    def raw_socket(self, address: tuple[str, int] | None = None) -> socket.socket:
        sock = socket.create_connection(address or self.bootstrap[0], timeout=self.timeout_s)
        self._register(sock)
        return sock

    def forget_leaders(self) -> None:
        """Close the kept leader connections (after a restart, leaders may have moved)."""
        for conn in self._leaders.values():
            conn.close()
        self._leaders.clear()

    # -- metadata and topics ------------------------------------------------------------------
    def metadata(self, topics: list[str] | None, conn: Conn | None = None,
                 version: int | None = None):
        """Metadata from conn, or from the first bootstrap broker that answers (one may be
        down or restarting during a fault check)."""
        values = {"topics": None if topics is None else [{"name": t} for t in topics],
                  "allow_auto_topic_creation": False}
        if conn is not None:
            response = conn.call(3, values, version)
        else:
            for index, address in enumerate(self.bootstrap):
                try:
                    one = self.connect(address)
                    response = one.call(3, values, version)
                    one.close()
                    break
                except OSError:
                    if index == len(self.bootstrap) - 1:
                        raise
        self._brokers.update({b.node_id: (b.host, b.port) for b in response.brokers})
        for topic in response.topics:
            if getattr(topic, "topic_id", None) is not None and topic.name:
                self._topic_ids[topic.name] = topic.topic_id
        return response

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id (KIP-516), from Metadata at a version that answers it; the zero id
        when the broker's Metadata never does (then no version naming topics by id is either)."""
        if topic not in self._topic_ids and 3 in self.versions:
            if self.speakable(3)[1] >= TOPIC_IDS_METADATA:
                self.metadata([topic], version=self.speakable(3)[1])
        return self._topic_ids.get(topic, uuid.UUID(int=0))

    def named(self, topic: str, api_key: int, field: str = "name") -> dict:
        """A topic as a request names it: its name (under `field`) and, when the version this
        probe sends api_key at names topics by id, its id too (build keeps the one it has)."""
        by_id = self.version(api_key) >= TOPIC_ID_VERSIONS.get(api_key, 1 << 15)
        return {field: topic, "topic_id": self.topic_id(topic)} if by_id else {field: topic}

    def broker_count(self) -> int:
        return len(self.metadata([]).brokers)

    def replication_factor(self) -> int:
        if self._replication_factor is None:
            self._replication_factor = min(3, self.broker_count())
        return self._replication_factor

    def create_topic(self, label: str, partitions: int = 1, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, wait: bool = True) -> str:
        name = self.name(label)
        rf = replication_factor or self.replication_factor()
        request = {"topics": [{"name": name, "num_partitions": partitions,
                               "replication_factor": rf, "assignments": [],
                               "configs": [{"name": k, "value": v}
                                           for k, v in (configs or {}).items()]}],
                   "timeout": int(self.timeout_s * 1000), "validate_only": False}
        response = self.connect().call(19, request)
        error = response.topics[0].error_code
        if error != ErrorCode.none:
            raise self.fail(f"CreateTopics {name} answered {ErrorCode(int(error)).name}",
                            request=request, response=response, expected="NONE")
        if wait:
            self.wait_for_leaders(name, partitions)
        return name

    def find_coordinator(self, values: dict, version: int | None = None):
        """FindCoordinator's answer, asked again while it is COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS (retriable: Kafka answers so until __consumer_offsets
        exists and its partition has a leader that loaded it), up to timeout_s."""
        return self.call_retrying_coordinator(10, values, version)

    def init_producer_id(self, version: int | None = None):
        """InitProducerId (idempotent: no transactional id), asked again while it answers
        COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE: Apache Kafka does so until
        the broker has fetched its first block of producer ids from the controller (a few
        hundred ms after start), and its clients retry."""
        return self.call_retrying_coordinator(
            22, {"transactional_id": None, "transaction_timeout": 60_000}, version)

    def call_retrying_coordinator(self, api_key: int, values: dict, version: int | None):
        deadline = time.monotonic() + self.timeout_s
        while True:
            conn = self.connect()
            try:
                answer = conn.call(api_key, values, version=version)
            finally:
                conn.close()
            retriable = (ErrorCode.coordinator_not_available,
                         ErrorCode.coordinator_load_in_progress)
            # FindCoordinator v4+ answers a list of coordinators and no top-level error code
            codes = [getattr(c, "error_code", ErrorCode.none)
                     for c in [answer, *getattr(answer, "coordinators", ())]]
            if not any(c in retriable for c in codes) or time.monotonic() > deadline:
                return answer
            time.sleep(0.1)

    def wait_for_leaders(self, topic: str, partitions: int | None, timeout_s: float = 15.0):
        """The topic's metadata once every partition (partitions of them; None: any number)
        has a leader that serves it."""
        deadline = time.monotonic() + timeout_s
        while True:
            response = self.metadata([topic])
            found = [t for t in response.topics if t.name == topic]
            if found and found[0].error_code == ErrorCode.none and found[0].partitions and (
                    partitions is None or len(found[0].partitions) == partitions) and all(
                    p.leader_id >= 0 and p.leader_id in self._brokers
                    for p in found[0].partitions) and self._leaders_serve(topic, found[0]):
                return found[0]
            if time.monotonic() > deadline:
                raise self.fail(f"topic {topic} has no leader for every partition after "
                                f"{timeout_s:.0f}s", response=response,
                                expected=f"{partitions} partitions with leaders")
            time.sleep(0.1)

    def _leaders_serve(self, topic: str, meta) -> bool:
        """Each leader answers ListOffsets for its partition: metadata reaches brokers one by
        one, so a leader named by one broker may not know yet that it leads (Kafka clients
        retry UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER the same way)."""
        for p in meta.partitions:
            try:
                conn = self.connect(self._brokers[p.leader_id])
            except OSError:
                return False  # a restarted leader not listening yet
            try:
                answer = conn.call(2, {"replica_id": -1, "isolation_level": 0, "topics": [{
                    "name": topic, "partitions": [{"partition_index": p.partition_index,
                                                   "timestamp": LATEST,
                                                   "current_leader_epoch": -1}]}]})
            finally:
                conn.close()
            if answer.topics[0].partitions[0].error_code != ErrorCode.none:
                return False
        return True

    def broker_address(self, broker_id: int) -> tuple[str, int]:
        if broker_id not in self._brokers:
            self.metadata([])
        return self._brokers[broker_id]

    def leader(self, topic: str, partition: int = 0) -> Conn:
        """A connection (kept for the check) to the partition's leader."""
        key = (topic, partition)
        if key not in self._leaders:
            meta = self.metadata([topic])
            leader = next(p.leader_id for t in meta.topics if t.name == topic
                          for p in t.partitions if p.partition_index == partition)
            self._leaders[key] = self.connect(self._brokers[leader])
        return self._leaders[key]

    def follower(self, label: str):
        """A new one-partition topic named after label, its partition 0's metadata, a replica
        that does not lead it and a connection to that replica (Skip on a single broker)."""
        if self.replication_factor() < 2:
            raise Skip("a single broker: no follower to ask")
        topic = self.create_topic(label)
        meta = self.wait_for_leaders(topic, 1).partitions[0]
        follower = next(r for r in meta.replica_nodes if r != meta.leader_id)
        return topic, meta, follower, self.connect(self.broker_address(follower))

    # -- data ---------------------------------------------------------------------------------
    def produce_values(self, topic: str, partition: int, batch: bytes, acks: int = -1,
                       timeout_ms: int = 10_000) -> dict:
        return {"transactional_id": None, "acks": acks, "timeout": timeout_ms,
                "topic_data": [{**self.named(topic, 0), "partition_data": [
                    {"index": partition, "records": batch}]}]}

    def produce(self, topic: str, batch: bytes, partition: int = 0, acks: int = -1,
                conn: Conn | None = None, version: int | None = None):
        """The partition's produce answer (error_code, base_offset, ...)."""
        conn = conn or self.leader(topic, partition)
        response = conn.call(0, self.produce_values(topic, partition, batch, acks), version)
        return response.responses[0].partition_responses[0]

    def produce_ok(self, topic: str, batch: bytes, partition: int = 0, acks: int = -1,
                   conn: Conn | None = None) -> int:
        answer = self.produce(topic, batch, partition, acks, conn)
        self.expect_error(answer.error_code, ErrorCode.none, f"Produce to {topic}", answer)
        return answer.base_offset

    def produce_retrying(self, topic: str, batch: bytes, partition: int = 0, acks: int = -1,
                         timeout_s: float = 30.0) -> int:
        """Produce as a Kafka producer does around a leader change (after a restart the
        controller fences the broker's old incarnation and elects it again, so the leader named
        by one answer may be gone by the next): an answered NOT_LEADER_OR_FOLLOWER,
        LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION means the batch was not appended, so
        the leader is looked up again and the batch sent again, until timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            meta = self.wait_for_leaders(topic, None, timeout_s=max(1.0, deadline - time.monotonic()))
            leader = next(p.leader_id for p in meta.partitions if p.partition_index == partition)
            stale = self._leaders.pop((topic, partition), None)
            if stale is not None:
                stale.close()
            self._leaders[(topic, partition)] = self.connect(self._brokers[leader])
            answer = self.produce(topic, batch, partition, acks)
            if answer.error_code in RETRIABLE_PRODUCE and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            self.expect_error(answer.error_code, ErrorCode.none, f"Produce to {topic}", answer)
            return answer.base_offset

    def fetch_values(self, topic: str, partition: int, offset: int, max_wait_ms: int = 50,
                     min_bytes: int = 1, max_bytes: int = 1 << 20) -> dict:
        return {"replica_id": -1, "max_wait": max_wait_ms, "min_bytes": min_bytes,
                "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0,
                "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "replica_state": {"replica_id": -1, "replica_epoch": -1},
                "topics": [{**self.named(topic, 1, "topic"), "partitions": [{
                    "partition": partition, "fetch_offset": offset, "log_start_offset": -1,
                    "current_leader_epoch": -1, "last_fetched_epoch": -1,
                    "partition_max_bytes": max_bytes}]}]}

    def fetch(self, topic: str, offset: int, partition: int = 0, max_wait_ms: int = 50,
              min_bytes: int = 1, max_bytes: int = 1 << 20, conn: Conn | None = None):
        """The partition's fetch answer (error_code, high_watermark, records, ...)."""
        conn = conn or self.leader(topic, partition)
        request = self.fetch_values(topic, partition, offset, max_wait_ms, min_bytes, max_bytes)
        return self.fetch_partition(conn.call(1, request), request)

    def fetch_partition(self, response, request=""):
        """The one partition of a sessionless fetch answer; a full (sessionless) fetch answers
        every partition asked for (KIP-227), so a missing one fails the check."""
        found = [p for t in response.responses for p in t.partitions]
        self.expect(len(found) == 1, f"the Fetch answer holds {len(found)} partitions",
                    request=request, response=response,
                    expected="the partition asked for (sessionless fetch)")
        return found[0]

    def records(self, answer, what: str = "fetched records",
                end: int | None = None) -> list[Record]:
        """Every record of a fetch answer (of batches starting below end); a batch that does
        not decode fails the check."""
        data = bytes(answer.records or b"")
        error, views = split_batches(data, allow_partial_tail=True)
        self.expect(error == ErrorCode.none, f"{what}: the batches do not split ({error.name})",
                    response=answer)
        out = []
        for view in views:
            if end is not None and base_offset_of(view) >= end:
                break
            decoded = decode_batch(view)
            self.expect(decoded.error == ErrorCode.none,
                        f"{what}: a batch does not decode ({decoded.error.name})",
                        response=answer)
            if not decoded.header.is_control:
                out.extend(decoded.records)
        return out

    def read_all(self, topic: str, partition: int = 0, start: int = 0,
                 end: int | None = None) -> list[Record]:
        """Records from start up to end; end None: up to the hw of the first fetch. Waits (up
        to the socket timeout) for the hw to reach end: acks=1 records become readable only
        once the followers have them."""
        out, offset = [], start
        deadline = time.monotonic() + self.timeout_s
        while True:
            answer = self.fetch(topic, offset, partition, max_wait_ms=200)
            self.expect_error(answer.error_code, ErrorCode.none, f"Fetch {topic} at {offset}",
                              answer)
            end = answer.high_watermark if end is None else end
            got = [r for r in self.records(answer, end=end) if offset <= r.offset < end]
            out.extend(got)
            offset = got[-1].offset + 1 if got else offset
            if offset >= end:
                return out
            if time.monotonic() > deadline:
                raise self.fail(f"records {offset}..{end - 1} of {topic} not readable after "
                                f"{self.timeout_s:.0f} s", response=answer,
                                expected=f"the hw reaching {end}")

    def list_offset(self, topic: str, timestamp: int, partition: int = 0,
                    conn: Conn | None = None):
        conn = conn or self.leader(topic, partition)
        response = conn.call(2, {"replica_id": -1, "isolation_level": 0, "topics": [{
            "name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                           "current_leader_epoch": -1}]}]})
        return response.topics[0].partitions[0]

    def offset_of(self, topic: str, timestamp: int, partition: int = 0) -> int:
        """The offset ListOffsets answers, OFFSET_NOT_AVAILABLE waited out (retriable: a new
        leader's hw is still below its epoch's start, KIP-207)."""
        deadline = time.monotonic() + self.timeout_s
        answer = self.list_offset(topic, timestamp, partition)
        while (answer.error_code == ErrorCode.offset_not_available
               and time.monotonic() < deadline):
            time.sleep(0.1)
            answer = self.list_offset(topic, timestamp, partition)
        self.expect_error(answer.error_code, ErrorCode.none, f"ListOffsets {timestamp}", answer)
        return answer.offset

    def close(self) -> None:
        self.abandon()


def now_ms() -> int:
    return int(time.time() * 1000)


# The first version of each API that names topics by id only (KIP-516)
TOPIC_ID_VERSIONS = {0: 13, 1: 13, 8: 10, 9: 10, 20: 6}


@functools.cache
def kio_versions(api_key: int) -> range:
    """The request versions of api_key kio (the probe's codec) has."""
    known = []
    for version in range(64):
        try:
            load_request_schema(api_key, version)
        except Exception:  # noqa: BLE001 -- kio raises its own lookup errors for a missing one
            continue
        known.append(version)
    return range(known[0], known[-1] + 1) if known else range(0)
