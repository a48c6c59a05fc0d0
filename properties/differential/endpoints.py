"""One system under test as the differential machine reaches it: an Endpoint is a running broker
cluster (Apache Kafka, kafkaref) by its bootstrap address, with the API versions it advertises,
its node ids, and the connections the machine's requests travel on.

Every wait is bounded. A broker that does not answer within ANSWER_TIMEOUT_S, refuses
connections or died is CouldNotCompare (never a divergence, never a pass). A broker that closes
the connection instead of answering has answered, and that answer (CLOSED) is compared: Kafka
closes the connection on a frame it cannot parse.

Requests addressed to partitions go to each partition's leader (a request naming partitions of
several leaders is split and the answers merged, as a client does); group requests that carry a
member go on that member's own connection, so one member's JoinGroup waiting in the broker does
not hold the others' requests (its answer is collected later, see Endpoint.member_call).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import enum
import socket
import time
import uuid

from kafkaref.impl.client.connection import ConnectionClosed, KafkaConnection, parse_address
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build

ANSWER_TIMEOUT_S = 15.0  # longer than any max_wait or group wait the machine asks for
CONNECT_TIMEOUT_S = 5.0
PENDING_S = 5.0  # a member's request not answered by then waits in the broker (a rebalance)
CLOSED = {"closed": True}  # the broker closed the connection instead of answering
PENDING = {"pending": True}  # a member's request still waiting in the broker
NOTHING = {"answer": "none expected"}  # acks=0, and the connection stayed open
API_VERSIONS, METADATA = 18, 3


class CouldNotCompare(Exception):
    """A broker did not answer, died, or cannot be reached: this step says nothing either way.
    The message is one line naming the broker and what failed."""


def plain(value):
    """A kio message as plain data: dataclasses as dicts, tuples as lists, ErrorCodes by name,
    durations and times in milliseconds, UUIDs as text; record bytes as bytes."""
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


# Where the partitions are in each partition-addressed request and its answer:
# api key -> (request topics, request topic name, request partitions, request index,
#             answer topics, answer topic name, answer partitions)
PARTITIONED = {
    0: ("topic_data", "name", "partition_data", "index", "responses", "name",
        "partition_responses"),
    1: ("topics", "topic", "partitions", "partition", "responses", "topic", "partitions"),
    2: ("topics", "name", "partitions", "partition_index", "topics", "name", "partitions"),
    21: ("topics", "name", "partitions", "partition_index", "topics", "name", "partitions"),
    23: ("topics", "topic", "partitions", "partition", "topics", "topic", "partitions"),
}


class Endpoint:
    """A broker cluster under test. `name` says which (apache-kafka, kafkaref)."""

    def __init__(self, name: str, bootstrap: str, version: str = "?",
                 answer_timeout_s: float = ANSWER_TIMEOUT_S):
        self.name, self.version = name, version
        self.answer_timeout_s = answer_timeout_s
        self.addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
        if not self.addresses:
            raise CouldNotCompare(f"{name}: no bootstrap address")
        self._connections: dict[tuple[str, str], KafkaConnection] = {}
        self._pending: dict[str, tuple[KafkaConnection, int, int, int]] = {}
        self.leaders: dict[tuple[str, int], str] = {}  # (topic, partition) -> leader address
        self.coordinators: dict[str, str] = {}  # group -> its coordinator's address
        self.versions = self._advertised()
        self.node_ids, self.node_addresses = self._nodes()

    def __repr__(self) -> str:
        return f"{self.name} {self.version} at {','.join(self.addresses)}"

    # -- what it is --------------------------------------------------------------------------
    def _advertised(self) -> dict[int, tuple[int, int]]:
        answer = self.call(API_VERSIONS, 3, {"client_software_name": "kafkaref-differential",
                                             "client_software_version": "1"})
        if answer.get("error_code") != "none":
            raise CouldNotCompare(f"{self.name} answered ApiVersions v3 with "
                                  f"{answer.get('error_code')}")
        return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}

    def _nodes(self) -> tuple[list[int], dict[int, str]]:
        answer = self.call(METADATA, 9, {"topics": [], "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False})
        brokers = sorted(answer["brokers"], key=lambda b: b["node_id"])
        return ([b["node_id"] for b in brokers],
                {b["node_id"]: f"{b['host']}:{b['port']}" for b in brokers})

    def node_index(self, node_id: int) -> int | None:
        """The node's position among this cluster's nodes (node ids differ by nature)."""
        return self.node_ids.index(node_id) if node_id in self.node_ids else None

    # -- one request -------------------------------------------------------------------------
    def call(self, api_key: int, version: int, values: dict, address: str | None = None,
             channel: str = "main", expect_answer: bool = True) -> dict:
        """Send one request and return its answer as plain data (CLOSED when the broker closed
        the connection instead, NOTHING when no answer is expected and the connection stays
        open)."""
        request = build(wire.request_class(api_key, version), values)
        address = address or self.addresses[0]
        connection = self._connection(address, channel)
        correlation_id = connection.next_correlation_id()
        frame = wire.encode_request(correlation_id, connection.client_id, request)
        with self._exchange(address, channel, f"did not answer api {api_key} v{version}"):
            connection.sock.settimeout(self.answer_timeout_s)
            connection.send_raw(frame)
            if not expect_answer:
                return self._still_open(address, channel)
            return plain(connection.receive(api_key, version, correlation_id))
        return CLOSED  # the connection was closed instead of an answer (_exchange)

    def raw(self, frame: bytes, decode_as: tuple[int, int] | None, channel: str = "raw") -> dict:
        """Send bytes as they are on a fresh connection; the answer decoded as (api key,
        version) when given, else its size; CLOSED when the broker closed the connection."""
        address = self.addresses[0]
        self._drop(address, channel)
        connection = self._connection(address, channel)
        payload = None
        with self._exchange(address, channel, "neither answered nor closed the connection"):
            connection.sock.settimeout(self.answer_timeout_s)
            connection.send_raw(frame)
            payload = bytes(connection.receive_payload())
        self._drop(address, channel)
        if payload is None:
            return CLOSED
        if decode_as is None:
            return {"answered_bytes": len(payload)}
        try:
            _, body = wire.decode_response(*decode_as, payload)
        except Exception as error:  # noqa: BLE001 -- kio raises many kinds on bad bytes
            return {"undecodable": type(error).__name__}
        return plain(body)

    @contextlib.contextmanager
    def _exchange(self, address: str, channel: str, silence: str):
        """Around one request and its answer: a closed connection is swallowed (the caller
        answers CLOSED) when the broker is still up; silence past the answer timeout, or a
        broker that is gone, is CouldNotCompare."""
        try:
            yield
        except (ConnectionClosed, ConnectionResetError, BrokenPipeError) as error:
            self._closed(address, channel, error)
        except TimeoutError:
            self._drop(address, channel)
            raise CouldNotCompare(f"{self.name} at {address} {silence} within "
                                  f"{self.answer_timeout_s:.0f} s") from None
        except OSError as error:
            self._drop(address, channel)
            raise CouldNotCompare(f"{self.name} at {address}: {error}") from None

    # -- requests to partitions and to group members ----------------------------------------
    def partitioned_call(self, api_key: int, version: int, values: dict, topics: dict[str, str],
                         expect_answer: bool = True) -> dict:
        """A partition-addressed request sent to each partition's leader. topics: the real
        names the request carries, for leader lookups."""
        if len(self.addresses) == 1:
            return self.call(api_key, version, values, expect_answer=expect_answer)
        parts = split_by_leader(api_key, values, lambda t, p: self._leader(t, p))
        answers = [self.call(api_key, version, part, address or self.addresses[0],
                             expect_answer=expect_answer)
                   for (address, _), part in parts.items()]
        return merge_answers(api_key, answers)

    def group_call(self, api_key: int, version: int, values: dict, group: str) -> dict:
        """A request to a group's coordinator (found with FindCoordinator, remembered)."""
        return self.call(api_key, version, values, self._coordinator(group))

    def member_call(self, member: str, group: str, api_key: int, version: int,
                    values: dict) -> dict:
        """A request on `member`'s own connection to the group's coordinator. The answer, or
        PENDING when it has not come within PENDING_S (the broker holds it: a rebalance waits
        for the other members). {"earlier": ...} carries the answer to the member's previous
        request when that was still pending."""
        earlier = self.collect(member)
        address = self._coordinator(group)
        request = build(wire.request_class(api_key, version), values)
        connection = self._connection(address, member)
        correlation_id = connection.next_correlation_id()
        try:
            connection.send_raw(wire.encode_request(correlation_id, connection.client_id,
                                                    request))
        except OSError as error:
            return self._closed(address, member, error)
        self._pending[member] = (connection, api_key, version, correlation_id)
        answer = self._receive_pending(member, PENDING_S)
        return answer if earlier is None else {"earlier": earlier, "answer": answer}

    def collect(self, member: str) -> dict | None:
        """The answer to member's pending request (waiting up to the answer timeout), None
        when none."""
        if member not in self._pending:
            return None
        wait_s = self.answer_timeout_s
        answer = self._receive_pending(member, wait_s)
        if answer is PENDING:
            self._pending.pop(member)
            self._drop_channel(member)
            raise CouldNotCompare(f"{self.name}: member {member}'s request waited more than "
                                  f"{wait_s:.0f} s")
        return answer

    def _receive_pending(self, member: str, wait_s: float) -> dict:
        connection, api_key, version, correlation_id = self._pending[member]
        try:
            ready = _readable(connection.sock, wait_s)
            if not ready:
                return PENDING
            connection.sock.settimeout(self.answer_timeout_s)
            answer = plain(connection.receive(api_key, version, correlation_id))
        except (ConnectionClosed, ConnectionResetError, BrokenPipeError) as error:
            self._pending.pop(member)
            return self._closed(connection_address(connection), member, error)
        except OSError as error:
            self._pending.pop(member)
            self._drop_channel(member)
            raise CouldNotCompare(f"{self.name}: member {member}'s connection: {error}") from None
        self._pending.pop(member)
        return answer

    def forget_members(self) -> None:
        """Close every member's connection (the end of a run: the broker expires them)."""
        for member in list(self._pending):
            self._pending.pop(member)
        for address, channel in list(self._connections):
            if channel not in ("main", "raw"):
                self._drop(address, channel)

    # -- routing -----------------------------------------------------------------------------
    def forget_routes(self) -> None:
        self.leaders.clear()
        self.coordinators.clear()

    def _leader(self, topic: str, partition: int) -> str:
        if (topic, partition) not in self.leaders:
            answer = self.call(METADATA, 9, {"topics": [{"name": topic}],
                                             "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False})
            for t in answer.get("topics", []):
                for p in t["partitions"]:
                    address = self.node_addresses.get(p["leader_id"])
                    if address is not None:
                        self.leaders[(t["name"], p["partition_index"])] = address
        return self.leaders.get((topic, partition))

    def _coordinator(self, group: str) -> str:
        if len(self.addresses) == 1:
            return self.addresses[0]
        if group not in self.coordinators:
            answer = self.call(10, 2, {"key": group, "key_type": 0})
            if answer.get("error_code") != "none":
                return self.addresses[0]  # the request itself will say what is wrong
            self.coordinators[group] = f"{answer['host']}:{answer['port']}"
        return self.coordinators[group]

    # -- connections -------------------------------------------------------------------------
    def _connection(self, address: str, channel: str) -> KafkaConnection:
        key = (address, channel)
        if key not in self._connections:
            host, port = parse_address(address)
            try:
                self._connections[key] = KafkaConnection(host, port, timeout_s=CONNECT_TIMEOUT_S,
                                                         client_id="kafkaref-differential")
            except OSError as error:
                raise CouldNotCompare(f"{self.name} at {address} cannot be reached: "
                                      f"{error}") from None
        return self._connections[key]

    def _closed(self, address: str, channel: str, error: Exception) -> dict:
        """The broker closed the connection: an answer, if the broker is still up."""
        self._drop(address, channel)
        if not _accepts(address):
            raise CouldNotCompare(f"{self.name} at {address} is down ({error})")
        return CLOSED

    def _still_open(self, address: str, channel: str) -> dict:
        """After a request that has no answer (acks=0): did the broker keep the connection? A
        second request on it says so (a closed connection fails it)."""
        answer = self.call(API_VERSIONS, 0, {}, address, channel)
        return CLOSED if answer is CLOSED else NOTHING

    def _drop(self, address: str, channel: str) -> None:
        connection = self._connections.pop((address, channel), None)
        if connection is not None:
            connection.close()

    def _drop_channel(self, channel: str) -> None:
        for address, name in list(self._connections):
            if name == channel:
                self._drop(address, name)

    def close(self) -> None:
        for address, channel in list(self._connections):
            self._drop(address, channel)


def connection_address(connection: KafkaConnection) -> str:
    return f"{connection.host}:{connection.port}"


def _readable(sock: socket.socket, wait_s: float) -> bool:
    import select

    ready, _, _ = select.select([sock], [], [], wait_s)
    return bool(ready)


def _accepts(address: str) -> bool:
    host, port = parse_address(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
        return True
    except OSError:
        return False


def split_by_leader(api_key: int, values: dict, leader) -> dict[tuple, dict]:
    """values split into one request per leader address (leader(topic, partition), None for a
    partition without one), keyed (address, led). The partitions without a leader go in a
    request of their own on each side, whatever the placement: sent beside a partition some
    broker leads, a request can fail whole where alone it would not (Fetch v13+ at an unknown
    isolation level reads nothing for unknown topics), and the two clusters place leaders
    differently."""
    topics_key, name_key, parts_key, index_key = PARTITIONED[api_key][:4]
    split: dict[tuple, dict] = {}
    for topic in values[topics_key]:
        for partition in topic[parts_key]:
            address = leader(topic[name_key], partition[index_key])
            request = split.setdefault((address, address is not None),
                                       {**values, topics_key: []})
            entries = request[topics_key]
            if not entries or entries[-1][name_key] != topic[name_key]:
                entries.append({**topic, parts_key: []})
            entries[-1][parts_key].append(partition)
    return split or {(None, False): values}


def merge_answers(api_key: int, answers: list[dict]) -> dict:
    """The answers of a split request as one: their topics' partitions together."""
    if len(answers) == 1 or any(a is CLOSED or a is NOTHING for a in answers):
        return next((a for a in answers if a is CLOSED), answers[0])
    topics_key, name_key, parts_key = PARTITIONED[api_key][4:]
    merged = dict(answers[0])
    by_name: dict[str, dict] = {}
    for answer in answers:
        for topic in answer[topics_key]:  # Fetch v13+ answers name topics by id
            name = topic.get(name_key, topic.get("topic_id"))
            entry = by_name.setdefault(name, {**topic, parts_key: []})
            entry[parts_key] = entry[parts_key] + topic[parts_key]
    merged[topics_key] = list(by_name.values())
    return merged



def wait_for(condition, timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll condition() until true or timeout_s passed; whether it became true."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)
