"""kafkaref speaks the protocol Apache Kafka 4.x speaks (issue 23): for every API kafkaref
serves, its ApiVersions answer gives exactly the range a real Apache Kafka node's answer gives
(read off the node each run, never copied from a list), and the two brokers treat a request
outside what they serve alike (the same answer, or the same closed connection)."""

from __future__ import annotations

import socket
import struct

import pytest
from kio.index import load_request_schema

from kafkaref.chaos.peers import apache_kafka
from kafkaref.impl.client.connection import KafkaConnection, parse_address
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build

CLIENT = {"client_software_name": "kafkaref-tests", "client_software_version": "1"}


def advertised(address: str) -> dict[int, tuple[int, int]]:
    with KafkaConnection.to(address, timeout_s=10) as conn:
        answer = conn.send(18, 3, CLIENT)
    assert answer.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


def test_kafkarefs_ranges_are_apache_kafkas_for_every_api_it_serves(peer, broker):
    kafka, ours = advertised(peer.bootstrap), advertised(broker.address)
    assert set(ours) == set(wire.SUPPORTED)
    missing = sorted(set(ours) - set(kafka))
    assert not missing, f"kafkaref serves APIs {apache_kafka.KAFKA_VERSION} does not: {missing}"
    differing = {wire.SUPPORTED[k][0]: {"kafkaref": ours[k], "kafka": kafka[k]}
                 for k in ours if ours[k] != kafka[k]}
    assert not differing, differing
    print(f"{len(ours)} APIs, each at Apache Kafka {apache_kafka.KAFKA_VERSION}'s range: "
          + ", ".join(f"{wire.SUPPORTED[k][0]} {lo}-{hi}" for k, (lo, hi) in sorted(ours.items())))


def answer_or_closed(address: str, payload: bytes) -> bytes | None:
    """The response payload to one request frame, or None when the broker closed instead."""
    with socket.create_connection(parse_address(address), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        head = sock.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return None
        return sock.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)


def with_version(frame: bytes, version: int) -> bytes:
    payload = bytearray(frame[4:])
    payload[2:4] = version.to_bytes(2, "big")
    return bytes(payload)


def produce_v3() -> bytes:
    return wire.encode_request(5, "t", build(load_request_schema(0, 3), {
        "transactional_id": None, "acks": 1, "timeout": 1000, "topic_data": []}))


def metadata_v12(tags: bytes = b"\0") -> bytes:
    frame = wire.encode_request(5, "t", build(load_request_schema(3, 12), {
        "topics": [], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False}))
    return frame[4:-1] + tags


CASES = {
    # KIP-896 removed Produce v0-2; Kafka 4 advertises them (KAFKA-18659) and closes
    "produce v2 (advertised, removed)": with_version(produce_v3(), 2),
    "produce v0 (advertised, removed)": with_version(produce_v3(), 0),
    "fetch v3 (below the range)": with_version(wire.encode_request(5, "t", build(
        load_request_schema(1, 4), {"replica_id": -1, "max_wait": 0, "min_bytes": 1,
                                    "max_bytes": 1, "isolation_level": 0, "topics": []})), 3),
    "api versions v5 (above the range: answered)": with_version(wire.encode_request(
        5, "t", build(load_request_schema(18, 4), CLIENT)), 5),
    "metadata v14 (above the range)": with_version(metadata_v12(), 14)[:-1] + b"\0",
    "an unknown tagged field": metadata_v12(bytes([1, 9, 2, 0xAB, 0xCD])),
    "a tagged field past the end": metadata_v12(bytes([1, 9, 40, 0xAB])),
}


@pytest.mark.parametrize("case", CASES)
def test_requests_outside_what_is_served_are_treated_alike(peer, broker, case):
    """Kafka closes the connection of a request at a version it does not serve (only
    ApiVersions answers UNSUPPORTED_VERSION), skips tags it does not know and closes on one
    that runs past the end; kafkaref does the same to the same bytes."""
    kafka = answer_or_closed(peer.bootstrap, CASES[case])
    ours = answer_or_closed(broker.address, CASES[case])
    assert (kafka is None) == (ours is None), {"kafka": kafka, "kafkaref": ours}
