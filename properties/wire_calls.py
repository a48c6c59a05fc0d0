"""One request through an in-process core broker exactly as the server would carry it: the
request encoded and decoded from its frame, handled, the response encoded and decoded back.
Used by the core tests that speak to a Broker without sockets."""

from __future__ import annotations

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import CLOSE_CONNECTION, Broker, BrokerConfig
from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.replication.apply import apply_fetch_response, start_at_leader_log_start
from kafkaref.properties.clock import ManualClock

CORRELATION_ID = 42


def call(broker, api_key: int, version: int, values: dict, client_id: str = "test",
         client_host: str = ""):
    """The decoded response body; None when the broker answered "send nothing" (acks=0);
    CLOSE_CONNECTION when it closes the connection instead; "pending" when it has not answered
    yet (the request waits in a purgatory). client_host: the peer the server would name."""
    request = build(load_request_schema(api_key, version), values)
    decoded = wire.decode_request(wire.encode_request(CORRELATION_ID, client_id, request)[4:],
                                  client_host)
    out = []
    broker.handle(decoded, out.append)
    if not out or out[0] is None or out[0] is CLOSE_CONNECTION:
        return out[0] if out else "pending"
    frame = wire.encode_response(decoded.correlation_id, out[0])
    correlation_id, body = wire.decode_response(api_key, version, frame[4:])
    assert correlation_id == CORRELATION_ID
    return body


def call_later(broker, api_key: int, version: int, values: dict) -> list:
    """Hand a request that may wait (a purgatory) to an in-process broker: the list its
    decoded response body lands in when answered (empty while it waits)."""
    request = build(load_request_schema(api_key, version), values)
    out = []

    def respond(answer):
        frame = wire.encode_response(CORRELATION_ID, answer)
        out.append(wire.decode_response(api_key, version, frame[4:])[1])

    broker.handle(wire.decode_request(wire.encode_request(CORRELATION_ID, "test", request)[4:]),
                  respond)
    return out


def core_brokers(count: int = 1, log_factory=None, **config) -> list[Broker]:
    """count core brokers (ids 0.., ports 9092..) sharing one LocalController and one
    ManualClock, on MemoryLogs unless log_factory says otherwise; config: BrokerConfig fields."""
    controller, clock = LocalController(), ManualClock()
    found = []
    for broker_id in range(count):
        b = Broker(BrokerConfig(broker_id=broker_id, **config), clock,
                   log_factory or (lambda key: MemoryLog()))
        controller.register(b, "127.0.0.1", 9092 + broker_id)
        found.append(b)
    return found


def create_topic(broker, name: str, partitions: int = 1, replication_factor: int = 1,
                 assignments: tuple = ()) -> None:
    """CreateTopics v4 of one topic without configs (-1: the broker's defaults; assignments:
    the replicas of each partition, with partitions and replication factor -1); it must succeed."""
    body = call(broker, 19, 4, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": replication_factor,
        "assignments": [{"partition_index": i, "broker_ids": list(replicas)}
                        for i, replicas in enumerate(assignments)], "configs": []}],
        "timeout": 5000, "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none, body.topics[0]


TOPIC_RESOURCE = 2  # ConfigResource type of a topic (4: a broker)


def alter_incremental(broker, name: str, ops, kind: int = TOPIC_RESOURCE) -> int:
    """IncrementalAlterConfigs v0 of one resource; ops are (name, operation, value) with
    operation 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT. The resource's error code."""
    body = call(broker, 44, 0, {"resources": [{
        "resource_type": kind, "resource_name": name,
        "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
        "validate_only": False})
    return body.responses[0].error_code


def replicate_once(leader: Broker, follower: Broker, key) -> object:
    """One replica fetch round of `follower` from `leader` for partition `key`, as the fetcher
    thread does it (impl/replication/apply.py applies the answer)."""
    partition = follower.replica_manager.partition(key)
    request = FetchPartition(partition.log_end_offset, 1 << 20, partition.leader_epoch,
                             partition.log.epochs.latest_epoch, partition.log.log_start_offset)
    answers = []
    leader.replica_manager.fetch(follower.broker_id, 0, 1, 1 << 20, {key: request}, answers.append)
    r = answers[0][key]
    if r.error == ErrorCode.offset_out_of_range:
        start = leader.replica_manager.list_offset(key, -2, replica_id=follower.broker_id).offset
        outcome = start_at_leader_log_start(partition, start)
    else:
        outcome = apply_fetch_response(partition, r.error, r.diverging_epoch, r.records,
                                       r.high_watermark, r.log_start_offset)
    return outcome
