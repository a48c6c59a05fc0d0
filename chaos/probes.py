"""Probes: requests whose answers' order and timing a client can judge on its own.

A Jepsen tester sees more than values: a connection's answers must come back in request order,
a fetch with min_bytes >= 1 on an empty partition waits max_wait_ms (a correct broker parks it),
and a request is answered by its timeout_ms. The prober measures these on its own monotonic
clock and records them as observations in the op's value (history/format.py "observations"); the
checkers judge them (response_reorder, early_empty_fetch, hung_request).

- pipeline op (prober process): on one connection to the leader of the probe topic's
  partition (a topic nobody writes to), a Fetch at offset 0 with min_bytes 1 and max_wait W,
  then ApiVersions, both sent before either is read: {"sent": [c1, c2], "answered": [...],
  "max_wait_ms": W, "empty_fetch_ms": E} (E only when the fetch came back empty and without
  error: an error answers at once, legitimately).
- probe_broker(): after a producer gave up on a request, a fresh connection to the same broker
  asks ApiVersions: answered means the broker was alive and reachable, so the silence was its
  own (a paused broker or a cut link answers no probe either).
"""

from __future__ import annotations

import struct
import time

from kio.schema.errors import ErrorCode

from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable
from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build

PROBE_TOPIC = "chaos-probe"
FETCH_VERSION, VERSIONS_VERSION = 11, 0
PROBE_TIMEOUT_S = 1.0


def probe_broker(address: tuple[str, int], timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the broker at address answers ApiVersions on a fresh connection in time."""
    try:
        with KafkaConnection(*address, timeout_s=timeout_s, client_id="chaos-probe") as c:
            c.send(18, VERSIONS_VERSION, {})
        return True
    except (OSError, ValueError):
        return False


def _fetch_frame(correlation_id: int, epoch: int, max_wait_ms: int) -> bytes:
    return wire.encode_request(correlation_id, "chaos-probe", build(
        wire.request_class(1, FETCH_VERSION), {
            "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [],
            "topics": [{"topic": PROBE_TOPIC, "partitions": [{
                "partition": 0, "fetch_offset": 0, "current_leader_epoch": epoch,
                "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}))


def _versions_frame(correlation_id: int) -> bytes:
    return wire.encode_request(correlation_id, "chaos-probe",
                               build(wire.request_class(18, VERSIONS_VERSION), {}))


def _empty_and_clean(payload) -> bool:
    _, body = wire.decode_response(1, FETCH_VERSION, bytes(payload))
    parts = [p for t in body.responses for p in t.partitions]
    return body.error_code == ErrorCode.none and bool(parts) and all(
        p.error_code == ErrorCode.none and not p.records for p in parts)


def pipeline(view: ClusterView, max_wait_ms: int, timeout_s: float) -> dict:
    """One pipelined round against the probe partition's leader: the observation. Raises
    OSError/ValueError/NoBrokerAvailable when it cannot tell (no leader, a lost connection)."""
    view.refresh([PROBE_TOPIC])
    leader, epoch = view.leaders.get((PROBE_TOPIC, 0), (-1, -1))
    if leader < 0 or leader not in view.brokers:
        raise NoBrokerAvailable("the probe partition has no leader")
    with KafkaConnection(*view.brokers[leader], timeout_s=timeout_s,
                         client_id="chaos-probe") as connection:
        fetch_id, versions_id = (connection.next_correlation_id() for _ in range(2))
        started = time.monotonic()
        connection.send_raw(_fetch_frame(fetch_id, epoch, max_wait_ms)
                            + _versions_frame(versions_id))
        answered, empty_ms = [], None
        for _ in range(2):
            payload = connection.receive_payload()
            (correlation_id,) = struct.unpack_from(">i", payload)
            answered.append(correlation_id)
            if correlation_id == fetch_id and _empty_and_clean(payload):
                empty_ms = round((time.monotonic() - started) * 1000)
    found = {"broker": leader, "sent": [fetch_id, versions_id], "answered": answered,
             "max_wait_ms": max_wait_ms}
    if empty_ms is not None:
        found["empty_fetch_ms"] = empty_ms
    return found
