"""Checks of the wire protocol itself: version negotiation, metadata, framing, ordering, size and
CRC validation. Kafka protocol guide: https://kafka.apache.org/protocol (cited as "protocol")."""

from __future__ import annotations

import socket
import struct

from kio.index import UnknownEntity
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import PREFERRED_LEVEL, check
from kafkaref.chaos.conform.faults import serves
from kafkaref.chaos.conform.probe import PREFERRED, Probe, batch_now
from kafkaref.impl.protocol import wire

REQUIRED_APIS = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 18: "ApiVersions"}


@check("api_versions", "protocol",
       "KIP-35 (ApiVersions), KIP-511 (v3); protocol: 'Versioning and Compatibility'")
def api_versions(probe: Probe):
    """ApiVersions lists every API with min <= max, the core data-plane APIs among them, and an
    ApiVersions request of a version the broker does not know is answered UNSUPPORTED_VERSION
    with a v0 body still listing the versions (so the client can retry)."""
    with_versions = probe.connect()
    response = with_versions.call(18, {"client_software_name": "kafkaref-conform",
                                       "client_software_version": "1"})
    probe.expect_error(response.error_code, ErrorCode.none, "ApiVersions", response)
    listed = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    bad = {k: v for k, v in listed.items() if v[0] > v[1] or v[0] < 0}
    probe.expect(not bad, f"ApiVersions lists ranges with min > max: {bad}", response=response,
                 expected="0 <= min_version <= max_version")
    missing = [name for key, name in REQUIRED_APIS.items() if key not in listed]
    probe.expect(not missing, f"ApiVersions does not list {missing}", response=response,
                 expected="Produce, Fetch, ListOffsets, Metadata, ApiVersions")
    # A version from the future: the broker answers with header v0 and a v0 body. The request
    # is framed as such a client frames it: ApiVersions is flexible from v3, so header v2 (its
    # tagged fields after the client id) and a v3-shaped body. Apache Kafka parses the header
    # by its version and closes the connection when it cannot (a header v1 here, say).
    sock = probe.raw_socket()
    sock.sendall(FUTURE_API_VERSIONS)
    payload = _read_frame(sock)
    if payload is None:
        raise probe.fail("ApiVersions v127: the broker closed the connection",
                         request="ApiVersions v127 (correlation id 4242)",
                         expected="an UNSUPPORTED_VERSION answer with header and body v0")
    try:
        correlation_id, body = wire.decode_response(18, 0, payload)
    except Exception as error:  # noqa: BLE001 -- kio raises several kinds on bad bytes
        raise probe.fail(f"ApiVersions v127 answered with something that is not header v0 + "
                         f"an ApiVersions v0 body ({error!r})", response=payload.hex()[:200],
                         request="ApiVersions v127 (correlation id 4242)",
                         expected="header v0, then error_code and api_keys (v0)") from None
    probe.expect(correlation_id == 4242 and body.error_code == ErrorCode.unsupported_version
                 and len(body.api_keys) > 0,
                 "ApiVersions v127 not answered UNSUPPORTED_VERSION with the supported versions",
                 request="ApiVersions v127 (correlation id 4242)", response=body,
                 expected="correlation id 4242, UNSUPPORTED_VERSION, api_keys listed")


def _future_api_versions_frame() -> bytes:
    header = struct.pack(">hhih", 18, 127, 4242, 7) + b"conform" + b"\x00"  # no tagged fields
    body = b"\x11kafkaref-conform" + b"\x021" + b"\x00"  # compact strings (length + 1), tags
    return struct.pack(">i", len(header) + len(body)) + header + body


FUTURE_API_VERSIONS = _future_api_versions_frame()


def _read_frame(sock: socket.socket) -> bytes | None:
    """One response payload, or None if the connection closed first."""
    data = b""
    try:
        while len(data) < 4:
            chunk = sock.recv(4 - len(data))
            if not chunk:
                return None
            data += chunk
        (size,) = struct.unpack(">i", data)
        if size < 0 or size > 64 << 20:
            return None
        payload = b""
        while len(payload) < size:
            chunk = sock.recv(size - len(payload))
            if not chunk:
                return None
            payload += chunk
    except (ConnectionResetError, TimeoutError):
        return None
    return payload


# Requests that are valid at every version with these values (absent fields take defaults).
SIMPLE_REQUESTS = {
    18: {"client_software_name": "kafkaref-conform", "client_software_version": "1"},
    3: {"topics": [], "allow_auto_topic_creation": False},
    10: {"key": "conform-versions", "key_type": 0, "coordinator_keys": ["conform-versions"]},
    22: {"transactional_id": None, "transaction_timeout": 60_000},
}


@check("advertised_versions_answer", "protocol", "KIP-35 / KIP-511: a broker advertises in "
       "ApiVersions the versions it serves", levels=(PREFERRED_LEVEL,))  # sends every version
def advertised_versions_answer(probe: Probe):
    """Every advertised version of ApiVersions, Metadata, FindCoordinator and InitProducerId
    (requests that need no state) is answered without an error code (FindCoordinator and
    InitProducerId asked again while they answer the retriable COORDINATOR_NOT_AVAILABLE /
    COORDINATOR_LOAD_IN_PROGRESS)."""
    wrong, tried, unknown = [], 0, []
    for api_key, values in SIMPLE_REQUESTS.items():
        if api_key not in probe.versions:
            continue
        low, high = probe.versions[api_key]
        for version in range(low, high + 1):
            if not _encodable(api_key, version):  # newer than our codec: not ours to judge
                unknown.append(f"{PREFERRED[api_key][0]} v{version}")
                continue
            conn = probe.connect()
            try:  # the coordinators' retriable answers are asked again (Kafka's clients do)
                answer = (probe.find_coordinator(values, version) if api_key == 10
                          else probe.init_producer_id(version) if api_key == 22
                          else conn.call(api_key, values, version=version))
            except (OSError, ValueError, KeyError) as exc:
                wrong.append(f"{PREFERRED[api_key][0]} v{version}: {exc!r}")
                continue
            finally:
                conn.close()
            tried += 1
            errors = _error_codes(answer)
            if errors:
                wrong.append(f"{PREFERRED[api_key][0]} v{version}: {errors}")
    probe.expect(not wrong, f"{len(wrong)} advertised versions fail: {wrong[:4]}",
                 response=str(wrong), expected="every advertised version answered NONE")
    untried = f"; not tried (newer than kafkaref's codec): {', '.join(unknown)}" if unknown else ""
    return f"{tried} versions answered{untried}"


def _encodable(api_key: int, version: int) -> bool:
    """Our codec (kio, generated from Kafka's schemas) has this request version."""
    try:
        wire.request_class(api_key, version)
        return True
    except UnknownEntity:
        return False


def _error_codes(answer) -> list[str]:
    """Non-NONE error codes at the top level and in coordinators / topics."""
    found = []
    for item in [answer, *getattr(answer, "coordinators", ())]:
        code = getattr(item, "error_code", ErrorCode.none)
        if code != ErrorCode.none:
            found.append(ErrorCode(int(code)).name)
    return found


@check("metadata_consistency", "protocol", "protocol: Metadata API; KIP-101 (leader epochs)")
def metadata_consistency(probe: Probe):
    """Metadata is self-consistent: every leader and replica is a listed broker, the leader is in
    the ISR, the ISR is a subset of the replicas, a created topic shows its partition count, and
    asking for a topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION."""
    topic = probe.create_topic("meta", partitions=3)
    response = probe.metadata(None)
    brokers = {b.node_id for b in response.brokers}
    probe.expect(len(brokers) > 0, "Metadata lists no broker", response=response,
                 expected="at least one broker")
    probe.expect(response.controller_id in brokers | {-1},
                 f"controller {response.controller_id} is not a listed broker",
                 response=response, expected=f"one of {sorted(brokers)} or -1")
    ours = [t for t in response.topics if t.name == topic]
    probe.expect(len(ours) == 1, f"Metadata(all topics) does not list {topic}",
                 response=response, expected=f"{topic} listed once")
    for t in response.topics:
        for p in t.partitions:
            if t.error_code != ErrorCode.none or p.leader_id < 0:
                continue
            replicas, isr = set(p.replica_nodes), set(p.isr_nodes)
            probe.expect(p.leader_id in brokers and replicas <= brokers,
                         f"{t.name}/{p.partition_index}: leader or replicas not among brokers",
                         response=p, expected=f"ids in {sorted(brokers)}")
            probe.expect(isr <= replicas and p.leader_id in isr,
                         f"{t.name}/{p.partition_index}: leader not in ISR or ISR not within "
                         "replicas", response=p, expected="leader in ISR, ISR within replicas")
    probe.expect(sorted(p.partition_index for p in ours[0].partitions) == [0, 1, 2],
                 f"{topic} does not have partitions 0, 1, 2", response=ours[0],
                 expected="partitions [0, 1, 2]")
    missing = probe.name("absent")
    answer = probe.metadata([missing])
    probe.expect(len(answer.topics) == 1 and answer.topics[0].error_code
                 == ErrorCode.unknown_topic_or_partition,
                 "Metadata for a topic that does not exist (auto-create off) is not "
                 "UNKNOWN_TOPIC_OR_PARTITION", response=answer,
                 expected=f"{missing}: UNKNOWN_TOPIC_OR_PARTITION")


@check("metadata_invalid_topic", "protocol",
       "protocol: Metadata; Kafka Topic.validate (legal characters [a-zA-Z0-9._-], max 249)")
def metadata_invalid_topic(probe: Probe):
    """Metadata for an illegal topic name answers INVALID_TOPIC_EXCEPTION, not
    UNKNOWN_TOPIC_OR_PARTITION (a client retries the latter for ever)."""
    for name in ("bad name with spaces", "x" * 250, "slash/topic"):
        answer = probe.metadata([name])
        got = [t for t in answer.topics if t.name == name]
        probe.expect(len(got) == 1, f"Metadata does not answer for {name!r}", response=answer,
                     expected=f"{name!r}: INVALID_TOPIC_EXCEPTION")
        probe.expect_error(got[0].error_code, ErrorCode.invalid_topic_exception,
                           f"Metadata for illegal name {name[:20]!r}", got[0])


@check("pipelined_response_order", "protocol",
       "protocol: 'the server guarantees that on a single TCP connection, requests will be "
       "processed in the order they are sent and responses will return in that order'")
def pipelined_response_order(probe: Probe):
    """Responses on one connection come back in request order even when an early request is
    slow (a Fetch parked in purgatory) and later ones are instant."""
    topic = probe.create_topic("order")
    conn = probe.leader(topic)
    sent = []
    for _ in range(3):
        slow = probe.fetch_values(topic, 0, 0, max_wait_ms=300, min_bytes=1 << 20)
        sent.append((1, conn.send(1, slow)))
        for _ in range(4):
            sent.append((18, conn.send(18, {"client_software_name": "conform",
                                            "client_software_version": "1"})))
            sent.append((3, conn.send(3, {"topics": [{"name": topic}],
                                          "allow_auto_topic_creation": False})))
    got = []
    for _api_key, _ in sent:
        payload = conn.kafka.receive_payload()
        (correlation_id,) = struct.unpack_from(">i", payload, 0)
        got.append(correlation_id)
    expected = [c for _, c in sent]
    probe.expect(got == expected, "responses came back out of request order",
                 request=f"{len(sent)} pipelined requests (Fetch max_wait 300 ms first)",
                 response=f"correlation ids {got}", expected=f"correlation ids {expected}")


@check("crc_rejected", "protocol",
       "KIP-98 record batch v2 (CRC-32C over attributes..end); protocol error CORRUPT_MESSAGE")
def crc_rejected(probe: Probe):
    """A batch whose CRC-32C does not match is refused with CORRUPT_MESSAGE and nothing of it
    is written (the log end offset does not move)."""
    topic = probe.create_topic("crc")
    probe.produce_ok(topic, batch_now([(None, b"before", (), None)]))
    before = probe.offset_of(topic, -1)
    batch = bytearray(batch_now([(None, b"x", (), None), (None, b"y", (), None)]))
    batch[-1] ^= 0xFF
    answer = probe.produce(topic, bytes(batch))
    probe.expect_error(answer.error_code, ErrorCode.corrupt_message,
                       "Produce of a batch with a wrong CRC", answer)
    after = probe.offset_of(topic, -1)
    probe.expect(after == before, f"the corrupt batch moved the log end {before} -> {after}",
                 expected=f"log end offset stays {before}")


# A frame too short for its API's body, an unknown API key (0x7f7f), 40 bytes of counting.
GARBAGE_FRAMES = (struct.pack(">i", 12) + b"\x00\x03\x00\x08" + b"\xff" * 8,
                  struct.pack(">i", 6) + b"\x7f\x7f\x00\x00\x00\x01",
                  struct.pack(">i", 40) + bytes(range(40)))


@check("malformed_frame_isolated", "protocol",
       "protocol: a request the broker cannot parse closes that connection (Kafka "
       "SocketServer/KafkaApis: InvalidRequestException closes the channel)")
def malformed_frame_isolated(probe: Probe):
    """A malformed frame closes (or is answered on) only its own connection: another connection
    opened before it keeps being served, and new connections are accepted."""
    bystander = probe.connect()
    bystander.call(18, {"client_software_name": "c", "client_software_version": "1"})
    outcomes = []
    for garbage in GARBAGE_FRAMES:
        sock = probe.raw_socket()
        sock.sendall(garbage)
        sock.settimeout(3)
        outcomes.append("closed" if _read_frame(sock) is None else "answered")
        sock.close()
    try:
        answer = bystander.call(18, {"client_software_name": "c", "client_software_version": "1"})
    except OSError as error:  # the broker dropped a connection that sent nothing wrong
        sent = ", ".join(frame.hex() for frame in GARBAGE_FRAMES)
        down = "" if serves(probe) else "; no new connection is served either (the broker died?)"
        raise probe.fail(f"the bystander connection was closed after the garbage frames "
                         f"({error!r}){down}", request=f"garbage frames (hex): {sent}",
                         expected="the bystander served ApiVersions NONE") from None
    probe.expect(answer.error_code == ErrorCode.none,
                 "the bystander connection stopped being served", response=answer,
                 expected="NONE")
    fresh = probe.connect()
    answer = fresh.call(3, {"topics": [], "allow_auto_topic_creation": False})
    probe.expect(len(answer.brokers) > 0, "a new connection is not served after garbage",
                 response=answer, expected="brokers listed")
    return f"garbage frames: {outcomes}; bystander and new connections served"


@check("message_too_large", "protocol",
       "Kafka config max.message.bytes (default 1048588); protocol error MESSAGE_TOO_LARGE")
def message_too_large(probe: Probe):
    """A batch larger than the topic's max.message.bytes is refused with MESSAGE_TOO_LARGE and
    not written (topic created with max.message.bytes=10000, a 20000-byte batch sent)."""
    topic = probe.create_topic("large", configs={"max.message.bytes": "10000"})
    probe.produce_ok(topic, batch_now([(None, b"small", (), None)]))
    before = probe.offset_of(topic, -1)
    batch = batch_now([(None, bytes(20_000), (), None)])
    answer = probe.produce(topic, batch)
    probe.expect_error(answer.error_code, ErrorCode.message_too_large,
                       f"Produce of a {len(batch)}-byte batch (max.message.bytes=10000)", answer)
    probe.expect(probe.offset_of(topic, -1) == before, "the refused batch was written",
                 expected=f"log end offset stays {before}")
