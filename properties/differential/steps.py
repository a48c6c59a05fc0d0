"""The differential machine's alphabet: a Step is one request, written with symbols (topics t0,
groups g0, producers p0, members m0, nodes n0) so the same step means the same thing to both
brokers and reads the same in a transcript:

    produce v8 {"acks": 1, "partitions": [["t0", 0, [{"records": [[null, 3, 1000]]}]]], ...}

Names (one per endpoint) turns symbols into what that broker needs (the run's topic names, its
producer ids, member ids and node ids) and back (normalise.py). KINDS maps each step kind to its
API key and its request builder; `run_step` sends a step to one endpoint and returns its
normalised answer. A builder writes the fields of every version at once (impl/protocol/messages
.build keeps those of the version sent), so a version kafkaref learns later is covered as soon as
both brokers advertise it.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable

import attrs

from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.crc import ATTRIBUTES_POS, CRC_POS, compute_crc
from kafkaref.impl.protocol.records import LOG_APPEND_TIME_FLAG, build_batch
from kafkaref.properties.differential.endpoints import (
    CLOSED,
    NOTHING,
    Endpoint,
    wait_for,
)
from kafkaref.properties.differential.normalise import normalise, this_run_only

SETTLE_S = 15.0  # how long a created / deleted / grown topic may take to show on every node
LITERAL = "="  # a name taken as it is ("=bad/name"), never prefixed: invalid names
LONG = "long:"  # "long:249": a name of that many characters
UNKNOWN_NODE_BASE = 1000  # n7 on a cluster of fewer nodes: node id 1007, which no node has


@attrs.frozen
class Step:
    kind: str
    version: int
    args: dict = attrs.field(factory=dict, eq=False, hash=False)

    def command(self) -> str:
        return f"{self.kind} v{self.version} {json.dumps(self.args, sort_keys=True)}"

    @classmethod
    def parse(cls, line: str) -> Step:
        kind, version, *rest = line.split(" ", 2) + [""] * (2 - line.count(" "))
        if kind not in KINDS or not re.fullmatch(r"v-?\d+", version):
            raise ValueError(f"not a step: {line[:80]!r} (kinds: {', '.join(sorted(KINDS))})")
        return cls(kind, int(version[1:]), json.loads(rest[0]) if rest and rest[0] else {})

    def __repr__(self) -> str:
        return self.command()


class Names:
    """One endpoint's side of the run's symbols."""

    def __init__(self, endpoint: Endpoint, prefix: str):
        self.endpoint, self.prefix = endpoint, prefix
        self.producers: dict[str, tuple[int, int]] = {}  # symbol -> (producer id, epoch)
        self.members: dict[str, str] = {}  # symbol -> member id
        self.generations: dict[str, int] = {}  # member symbol -> its last generation
        self.topic_ids: dict[str, str] = {}

    # symbols -> this broker's values
    def real(self, symbol: str) -> str:
        if symbol.startswith(LITERAL):
            return symbol[len(LITERAL):]
        if symbol.startswith(LONG):
            return (self.prefix + "long-").ljust(int(symbol[len(LONG):]), "x")
        return self.prefix + symbol

    def node(self, symbol) -> int:
        """n0, n1...: this cluster's first, second... node id; a number is taken as it is."""
        if isinstance(symbol, str) and symbol.startswith("n") and symbol[1:].isdigit():
            index = int(symbol[1:])
            ids = self.endpoint.node_ids
            return ids[index] if index < len(ids) else UNKNOWN_NODE_BASE + index
        return int(symbol)

    def resource(self, kind: int, symbol: str) -> str:
        if kind == BROKER_RESOURCE:
            return "" if symbol == "" else str(self.node(symbol))
        return self.real(symbol)

    def producer(self, symbol: str) -> tuple[int, int]:
        return self.producers.get(symbol, (-1, -1))

    def member(self, symbol: str | None) -> str:
        return "" if symbol is None else self.members.get(symbol, "")

    def generation(self, member: str | None, generation) -> int:
        if generation == "current":
            return self.generations.get(member, -1)
        return int(generation)

    def topic_id(self, real: str) -> str | None:
        if real not in self.topic_ids:
            answer = self.endpoint.call(3, 12, {"topics": [{"name": real, "topic_id": None}],
                                                "allow_auto_topic_creation": False,
                                                "include_topic_authorized_operations": False})
            for topic in answer.get("topics", []):
                self.topic_ids[real] = topic["topic_id"]
        return self.topic_ids.get(real)

    # this broker's values -> symbols
    def symbol(self, text: str) -> str:
        if text.startswith(self.prefix):
            rest = text[len(self.prefix):]
            return f"{LONG}{len(text)}" if rest.startswith("long-") else rest
        return text

    def topic_id_symbol(self, topic_id: str) -> str:
        """A topic id as its topic's symbol, when a step looked it up (topic_id); else "id"."""
        for real, known in self.topic_ids.items():
            if known == topic_id:
                return self.symbol(real)
        return "id"

    def node_symbol(self, node) -> str:
        """A node id as the symbol steps name it by (n0, n1... n7 for ids no node has)."""
        text = str(node)
        if not text.isdigit():
            return text
        index = self.endpoint.node_index(int(text))
        if index is None and int(text) >= UNKNOWN_NODE_BASE:
            index = int(text) - UNKNOWN_NODE_BASE
        return f"n{index}" if index is not None else "unknown node"

    def producer_symbol(self, producer_id: int):
        for symbol, (pid, _) in self.producers.items():
            if pid == producer_id:
                return symbol
        return producer_id if producer_id < 0 else "unknown producer"

    def member_symbol(self, member_id: str) -> str:
        for symbol, mid in self.members.items():
            if mid == member_id:
                return symbol
        return member_id if member_id == "" else "unknown member"


@attrs.frozen
class Kind:
    api_key: int
    build: Callable[[dict, Names, int], dict]
    route: str = "any"  # any | partitions | group | member | every node | raw


TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


# -- record batches ---------------------------------------------------------------------------
def value_bytes(index: int, size: int) -> bytes:
    """A record value of `size` bytes, the same for both brokers, compressible like text."""
    return (f"v{index}-" * (size // 3 + 1)).encode()[:size]


def batch_bytes(spec: dict, names: Names) -> bytes:
    """One record batch from its spec: records [[key or null, value size, timestamp]], codec
    (0-4, or 5-7: no such codec), producer symbol with epoch and sequence, stamped (the
    producer set the LogAppendTime bit itself), corrupt (a bit of the last record flipped: the
    CRC no longer matches)."""
    pid, _ = names.producer(spec["producer"]) if spec.get("producer") else (-1, -1)
    codec = spec.get("codec", 0)
    data = bytearray(build_batch(
        [(None if key is None else key.encode(), value_bytes(i, size), (), ts)
         for i, (key, size, ts) in enumerate(spec["records"])],
        compression=Compression(codec) if codec < 5 else Compression.none,
        producer_id=pid, producer_epoch=spec.get("epoch", -1) if pid >= 0 else -1,
        base_sequence=spec.get("sequence", -1) if pid >= 0 else -1,
        base_timestamp=spec["records"][0][2] if spec["records"] else 0))
    bits = (codec if codec >= 5 else 0) | (LOG_APPEND_TIME_FLAG if spec.get("stamped") else 0)
    if bits:
        attributes = struct.unpack_from(">h", data, ATTRIBUTES_POS)[0]
        struct.pack_into(">h", data, ATTRIBUTES_POS, attributes | bits)
        struct.pack_into(">I", data, CRC_POS, compute_crc(data))
    if spec.get("corrupt"):
        data[-1] ^= 1
    return bytes(data)


def _partitioned(entries, shape):
    """[[topic, partition, ...], ...] grouped by topic, in first-seen order: [(topic, [entry])]"""
    grouped: dict[str, list] = {}
    for entry in entries:
        grouped.setdefault(entry[0], []).append(entry)
    return [(topic, [shape(e) for e in group]) for topic, group in grouped.items()]


# -- the data plane ---------------------------------------------------------------------------
def produce_values(args: dict, names: Names, version: int) -> dict:
    topics = _partitioned(args["partitions"], lambda e: {
        "index": e[1], "records": b"".join(batch_bytes(b, names) for b in e[2])})
    return {"transactional_id": None, "acks": args["acks"], "timeout": args.get("timeout_ms", 5000),
            "topic_data": [{"name": names.real(t), "topic_id": _topic_id(names, t, version, 13),
                            "partition_data": parts} for t, parts in topics]}


def fetch_values(args: dict, names: Names, version: int) -> dict:
    topics = _partitioned(args["partitions"], lambda e: {
        "partition": e[1], "fetch_offset": e[2], "partition_max_bytes": e[3],
        "current_leader_epoch": e[4], "log_start_offset": -1, "last_fetched_epoch": -1})
    return {"replica_id": -1, "max_wait": args["max_wait_ms"], "min_bytes": args["min_bytes"],
            "max_bytes": args["max_bytes"], "isolation_level": args["isolation"],
            "session_id": args.get("session", (0, -1))[0],
            "session_epoch": args.get("session", (0, -1))[1],
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": names.real(t), "topic_id": _topic_id(names, t, version, 13),
                        "partitions": parts} for t, parts in topics]}


def list_offsets_values(args: dict, names: Names, version: int) -> dict:
    topics = _partitioned(args["partitions"], lambda e: {
        "partition_index": e[1], "timestamp": e[2], "current_leader_epoch": e[3]})
    return {"replica_id": -1, "isolation_level": args["isolation"], "timeout": 5000,
            "topics": [{"name": names.real(t), "partitions": parts} for t, parts in topics]}


def leader_epoch_values(args: dict, names: Names, version: int) -> dict:
    topics = _partitioned(args["partitions"], lambda e: {
        "partition": e[1], "leader_epoch": e[2], "current_leader_epoch": e[3]})
    return {"replica_id": -1,
            "topics": [{"topic": names.real(t), "partitions": parts} for t, parts in topics]}


def delete_records_values(args: dict, names: Names, version: int) -> dict:
    topics = _partitioned(args["partitions"], lambda e: {"partition_index": e[1], "offset": e[2]})
    return {"timeout": args.get("timeout_ms", 5000),
            "topics": [{"name": names.real(t), "partitions": parts} for t, parts in topics]}


def describe_log_dirs_values(args: dict, names: Names, version: int) -> dict:
    topics = None if args["partitions"] is None else [
        {"topic": names.real(t), "partitions": [e[1] for e in group]}
        for t, group in _partitioned(args["partitions"], lambda e: e)]
    return {"topics": topics}


def init_producer_values(args: dict, names: Names, version: int) -> dict:
    return {"transactional_id": None, "transaction_timeout": args.get("timeout_ms", 60_000),
            "producer_id": -1, "producer_epoch": -1}


# -- topics and configs -----------------------------------------------------------------------
def metadata_values(args: dict, names: Names, version: int) -> dict:
    topics = None if args["topics"] is None else [
        {"name": names.real(t), "topic_id": None} for t in args["topics"]]
    return {"topics": topics, "allow_auto_topic_creation": args.get("auto_create", False),
            "include_topic_authorized_operations": False,
            "include_cluster_authorized_operations": False}


def describe_cluster_values(args: dict, names: Names, version: int) -> dict:
    return {"include_cluster_authorized_operations": False,
            "endpoint_type": args.get("endpoint_type", 1),
            "include_fenced_brokers": args.get("fenced", False)}


def describe_topic_partitions_values(args: dict, names: Names, version: int) -> dict:
    cursor = args.get("cursor")
    return {"topics": [{"name": names.real(t)} for t in args["topics"]],
            "response_partition_limit": args.get("limit", 2000),
            "cursor": None if cursor is None else {"topic_name": names.real(cursor[0]),
                                                   "partition_index": cursor[1]}}


def create_topics_values(args: dict, names: Names, version: int) -> dict:
    return {"timeout": args.get("timeout_ms", 10_000), "validate_only": args.get("validate_only", False),
            "topics": [{
                "name": names.real(t["name"]), "num_partitions": t["partitions"],
                "replication_factor": t["rf"],
                "assignments": [{"partition_index": i,
                                 "broker_ids": [names.node(n) for n in nodes]}
                                for i, nodes in enumerate(t.get("assignments") or [])],
                "configs": [{"name": k, "value": v} for k, v in sorted(t.get("configs", {}).items())],
            } for t in args["topics"]]}


def delete_topics_values(args: dict, names: Names, version: int) -> dict:
    reals = [names.real(t) for t in args["topics"]]
    return {"timeout": args.get("timeout_ms", 10_000), "topic_names": reals,
            "topics": [{"name": r, "topic_id": None} for r in reals]}


def create_partitions_values(args: dict, names: Names, version: int) -> dict:
    return {"timeout": args.get("timeout_ms", 10_000), "validate_only": args.get("validate_only", False),
            "topics": [{"name": names.real(t["name"]), "count": t["count"],
                        "assignments": None if t.get("assignments") is None else [
                            {"broker_ids": [names.node(n) for n in nodes]}
                            for nodes in t["assignments"]]}
                       for t in args["topics"]]}


def describe_configs_values(args: dict, names: Names, version: int) -> dict:
    return {"include_synonyms": args.get("synonyms", False),
            "include_documentation": args.get("documentation", False),
            "resources": [{"resource_type": kind, "resource_name": names.resource(kind, name),
                           "configuration_keys": keys} for kind, name, keys in args["resources"]]}


def alter_configs_values(args: dict, names: Names, version: int) -> dict:
    return {"validate_only": args.get("validate_only", False),
            "resources": [{"resource_type": kind, "resource_name": names.resource(kind, name),
                           "configs": [{"name": k, "value": v} for k, v in sorted(configs.items())]}
                          for kind, name, configs in args["resources"]]}


def incremental_alter_values(args: dict, names: Names, version: int) -> dict:
    return {"validate_only": args.get("validate_only", False),
            "resources": [{"resource_type": kind, "resource_name": names.resource(kind, name),
                           "configs": [{"name": k, "config_operation": op, "value": v}
                                       for k, op, v in ops]}
                          for kind, name, ops in args["resources"]]}


# -- groups -----------------------------------------------------------------------------------
def find_coordinator_values(args: dict, names: Names, version: int) -> dict:
    key = names.real(args["group"])
    return {"key": key, "key_type": 0, "coordinator_keys": [key]}


def join_group_values(args: dict, names: Names, version: int) -> dict:
    member = names.member(args["member"]) if args.get("known_id", True) else ""
    return {"group_id": names.real(args["group"]), "member_id": member,
            "session_timeout": args.get("session_timeout_ms", 30_000),
            "rebalance_timeout": args.get("rebalance_timeout_ms", 10_000),
            "group_instance_id": None, "protocol_type": args.get("protocol_type", "consumer"),
            "reason": None,
            "protocols": [{"name": name, "metadata": bytes.fromhex(meta)}
                          for name, meta in args.get("protocols", [["range", "00"]])]}


def sync_group_values(args: dict, names: Names, version: int) -> dict:
    member = args["member"]
    return {"group_id": names.real(args["group"]), "member_id": names.member(member),
            "generation_id": names.generation(member, args.get("generation", "current")),
            "group_instance_id": None, "protocol_type": "consumer",
            "protocol_name": args.get("protocol", "range"),
            "assignments": [{"member_id": names.member(m), "assignment": bytes.fromhex(a)}
                            for m, a in args.get("assignments", [])]}


def heartbeat_values(args: dict, names: Names, version: int) -> dict:
    member = args["member"]
    return {"group_id": names.real(args["group"]), "member_id": names.member(member),
            "generation_id": names.generation(member, args.get("generation", "current")),
            "group_instance_id": None}


def leave_group_values(args: dict, names: Names, version: int) -> dict:
    member = names.member(args["member"])
    return {"group_id": names.real(args["group"]), "member_id": member,
            "members": [{"member_id": member, "group_instance_id": None, "reason": None}]}


def describe_groups_values(args: dict, names: Names, version: int) -> dict:
    return {"groups": [names.real(g) for g in args["groups"]],
            "include_authorized_operations": False}


def list_groups_values(args: dict, names: Names, version: int) -> dict:
    return {"states_filter": [], "types_filter": []}


def offset_commit_values(args: dict, names: Names, version: int) -> dict:
    member = args.get("member")
    topics = _partitioned(args["partitions"], lambda e: {
        "partition_index": e[1], "committed_offset": e[2], "committed_leader_epoch": -1,
        "committed_metadata": e[3]})
    return {"group_id": names.real(args["group"]), "member_id": names.member(member),
            "generation_id_or_member_epoch": names.generation(member, args.get("generation", -1)),
            "group_instance_id": None, "retention_time": -1,
            "topics": [{"name": names.real(t), "topic_id": _topic_id(names, t, version, 10),
                        "partitions": parts} for t, parts in topics]}


def offset_fetch_values(args: dict, names: Names, version: int) -> dict:
    topics = None if args["partitions"] is None else [
        {"name": names.real(t), "partition_indexes": [e[1] for e in group]}
        for t, group in _partitioned(args["partitions"], lambda e: e)]
    by_id = None if topics is None else [  # v8+: the group's topics; by id from v10
        {**topic, "topic_id": _topic_id(names, names.symbol(topic["name"]), version, 10)}
        for topic in topics]
    group = names.real(args["group"])
    return {"group_id": group, "topics": topics, "require_stable": False,
            "groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                        "topics": by_id}]}


def _topic_id(names: Names, topic: str, version: int, first_by_id: int) -> str | None:
    """The topic's id from the version that names topics by id (KIP-516, KIP-848), else None."""
    return names.topic_id(names.real(topic)) if version >= first_by_id else None


def api_versions_values(args: dict, names: Names, version: int) -> dict:
    return {"client_software_name": args.get("software", "kafkaref-differential"),
            "client_software_version": "1"}


KINDS: dict[str, Kind] = {
    "produce": Kind(0, produce_values, "partitions"),
    "fetch": Kind(1, fetch_values, "partitions"),
    "list_offsets": Kind(2, list_offsets_values, "partitions"),
    "metadata": Kind(3, metadata_values),
    "offset_commit": Kind(8, offset_commit_values, "group"),
    "offset_fetch": Kind(9, offset_fetch_values, "group"),
    "find_coordinator": Kind(10, find_coordinator_values),
    "join_group": Kind(11, join_group_values, "member"),
    "heartbeat": Kind(12, heartbeat_values, "member"),
    "leave_group": Kind(13, leave_group_values, "member"),
    "sync_group": Kind(14, sync_group_values, "member"),
    "describe_groups": Kind(15, describe_groups_values, "group"),
    "list_groups": Kind(16, list_groups_values, "every node"),
    "api_versions": Kind(18, api_versions_values, "raw"),
    "create_topics": Kind(19, create_topics_values),
    "delete_records": Kind(21, delete_records_values, "partitions"),
    "describe_log_dirs": Kind(35, describe_log_dirs_values, "every node"),
    "describe_cluster": Kind(60, describe_cluster_values),
    "describe_topic_partitions": Kind(75, describe_topic_partitions_values),
    "delete_topics": Kind(20, delete_topics_values),
    "init_producer_id": Kind(22, init_producer_values),
    "offset_for_leader_epoch": Kind(23, leader_epoch_values, "partitions"),
    "describe_configs": Kind(32, describe_configs_values),
    "alter_configs": Kind(33, alter_configs_values),
    "create_partitions": Kind(37, create_partitions_values),
    "incremental_alter_configs": Kind(44, incremental_alter_values),
    "malformed": Kind(-1, lambda args, names, version: {}, "raw"),
}
API_NAMES = {kind.api_key: name for name, kind in KINDS.items() if kind.api_key >= 0}


# -- sending a step ---------------------------------------------------------------------------
def run_step(step: Step, names: Names) -> object:
    """Send step to names.endpoint; its normalised answer (CouldNotCompare propagates)."""
    kind = KINDS[step.kind]
    endpoint = names.endpoint
    if kind.route == "raw":
        answer = raw_answer(step, endpoint)
    else:
        values = kind.build(step.args, names, step.version)
        answer = _send(step, kind, values, names)
    learn(step, answer, names)
    settle(step, answer, names)
    settle_group(step, names)
    settle_replicas(step, names)
    if is_listing(step):
        answer = this_run_only(answer, names.prefix)
    return normalise(answer, names)


def is_listing(step: Step) -> bool:
    """Steps whose answer lists every topic or group of the cluster, other runs' included."""
    return step.kind == "list_groups" or (
        step.kind in ("metadata", "describe_log_dirs") and step.args.get(
            "topics", step.args.get("partitions")) is None)


def _send(step: Step, kind: Kind, values: dict, names: Names) -> dict:
    endpoint = names.endpoint
    if kind.route == "partitions":
        expect = not (step.kind == "produce" and step.args["acks"] == 0)
        return endpoint.partitioned_call(kind.api_key, step.version, values, {},
                                         expect_answer=expect)
    if kind.route == "group":
        group = names.real(step.args.get("group") or step.args["groups"][0])
        return endpoint.group_call(kind.api_key, step.version, values, group)
    if kind.route == "member":
        return endpoint.member_call(step.args["member"], names.real(step.args["group"]),
                                    kind.api_key, step.version, values)
    if kind.route == "every node":  # each broker lists its groups, its log dirs
        answers = [endpoint.call(kind.api_key, step.version, values, address)
                   for address in endpoint.node_addresses.values()]
        if any(a is CLOSED for a in answers):
            return CLOSED
        listed = "groups" if step.kind == "list_groups" else "results"
        return {**answers[0], listed: [g for a in answers for g in a.get(listed, [])]}
    return endpoint.call(kind.api_key, step.version, values)


def raw_answer(step: Step, endpoint: Endpoint) -> dict:
    """ApiVersions at any version (kio has no schema for those past Kafka's newest) and frames
    that are not requests at all, sent as bytes."""
    from kafkaref.properties.differential.frames import frame_for

    frame, decode_as = frame_for(step, endpoint)
    return endpoint.raw(frame, decode_as)


def learn(step: Step, answer: dict, names: Names) -> None:
    """Remember what the answer handed out: a producer id, a member id, a generation."""
    for part in (answer.get("earlier"), answer.get("answer", answer)):
        if not isinstance(part, dict):
            continue
        if step.kind == "init_producer_id" and part.get("error_code") == "none":
            names.producers[step.args["producer"]] = (part["producer_id"], part["producer_epoch"])
        if step.kind == "join_group" and part.get("member_id"):
            names.members[step.args["member"]] = part["member_id"]
            if part.get("error_code") == "none":
                names.generations[step.args["member"]] = part["generation_id"]
    if step.kind in ("create_topics", "delete_topics"):
        names.topic_ids.clear()
        names.endpoint.forget_routes()


# -- waiting for topic changes to reach every node --------------------------------------------
SETTLING = ("create_topics", "delete_topics", "create_partitions", "metadata")


def settle(step: Step, answer: dict, names: Names) -> None:
    """After a topic is created, deleted or grown, wait (bounded) until every node's metadata
    shows it, as a client would before its next request; otherwise the next step would compare
    how fast two brokers propagate metadata. A change that never shows is left to the next
    steps to reveal."""
    expected = _expected_topics(step, answer, names)
    if not expected:
        return
    endpoint = names.endpoint
    endpoint.forget_routes()
    wait_for(lambda: all(_shows(endpoint, address, expected)
                         for address in endpoint.node_addresses.values())
             and _leaders_serve(endpoint, expected), SETTLE_S)


def _expected_topics(step: Step, answer: dict, names: Names) -> dict[str, int | None]:
    """real topic name -> partitions it must show with a leader each (None: absent)."""
    if step.kind not in SETTLING or answer in (CLOSED, NOTHING) or step.args.get("validate_only"):
        return {}
    results = {names.symbol(r["name"]): r["error_code"]
               for r in answer.get("topics") or answer.get("responses") or answer.get("results")
               or [] if "name" in r and "error_code" in r}
    if step.kind == "create_topics":
        return {names.real(t["name"]): t["partitions"] if t["partitions"] > 0 else 1
                for t in step.args["topics"] if results.get(t["name"]) == "none"}
    if step.kind == "delete_topics":
        return {names.real(t): None for t in step.args["topics"] if results.get(t) == "none"}
    if step.kind == "create_partitions":
        return {names.real(t["name"]): t["count"] for t in step.args["topics"]
                if results.get(t["name"]) == "none"}
    if step.kind == "metadata" and step.args.get("auto_create") and step.args["topics"]:
        return {names.real(t): 1 for t in step.args["topics"]
                if not t.startswith((LITERAL, LONG))}
    return {}


def _leaders_serve(endpoint: Endpoint, expected: dict[str, int | None]) -> bool:
    """Every partition of the topics that must exist is served by its leader: Kafka's metadata
    can name a leader a moment before that broker's replica manager has the partition
    (NOT_LEADER_OR_FOLLOWER meanwhile), longer on a loaded machine."""
    topics = [{"name": name, "partitions": [
        {"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
        for p in range(count)]} for name, count in expected.items() if count]
    if not topics:
        return True
    endpoint.forget_routes()
    answer = endpoint.partitioned_call(2, 1, {"replica_id": -1, "isolation_level": 0,
                                              "topics": topics}, {})
    return all(p.get("error_code") == "none" for t in answer.get("topics", [])
               for p in t["partitions"])


def _shows(endpoint: Endpoint, address: str, expected: dict[str, int | None]) -> bool:
    answer = endpoint.call(3, 9, {"topics": [{"name": n} for n in expected],
                                  "allow_auto_topic_creation": False,
                                  "include_topic_authorized_operations": False}, address)
    seen = {t["name"]: t for t in answer.get("topics", [])}
    for name, partitions in expected.items():
        topic = seen.get(name)
        known = topic is not None and topic["error_code"] == "none"
        if partitions is None:
            if known:
                return False
            continue
        if not known or len(topic["partitions"]) < partitions or any(
                p["leader_id"] < 0 for p in topic["partitions"]):
            return False
    return True


# -- waiting for a join's records to be committed ------------------------------------------------
# Apache Kafka's group coordinator answers a JoinGroup from inside the operation, before the
# records it wrote are committed (GroupMetadataManager.classicGroupJoinToClassicGroup: a group
# a join creates is written as an empty group record, MEMBER_ID_REQUIRED answered at once),
# while DescribeGroups and ListGroups read the state at the last committed offset of the
# group's __consumer_offsets partition (CoordinatorRuntime.scheduleReadOperation). On three
# nodes that record waits for the followers: such a group reads Dead for 10-500 ms, then Empty
# (docs/divergences.md, `three-node-new-group-state`). An OffsetFetch with require_stable is
# a write operation that writes nothing and is answered only once everything written before
# it is committed (GroupCoordinatorService.fetchOffsets): the barrier a client has, sent to
# the group's coordinator after every join. It reads, and changes nothing, on either broker;
# its answer is not compared.
COMMITTED_BARRIER_VERSION = 8  # OffsetFetch: require_stable (v7+), the groups array (v8+)


def settle_group(step: Step, names: Names) -> None:
    """After a JoinGroup, wait until its group coordinator has committed what it wrote (see
    above), so that the next step compares group states rather than replication speed."""
    if step.kind != "join_group":
        return
    group = names.real(step.args["group"])
    names.endpoint.group_call(9, COMMITTED_BARRIER_VERSION, {
        "require_stable": True, "groups": [{"group_id": group, "member_id": None,
                                            "member_epoch": -1, "topics": None}]}, group)


# -- waiting for the followers after a produce ----------------------------------------------------
# Apache Kafka answers a Produce with acks 0 or 1 once the leader has appended
# (ReplicaManager.appendRecords: no DelayedProduce unless acks is -1); the followers fetch the
# records after that (ReplicaFetcherThread), and the high watermark moves when they have
# (Partition.maybeIncrementLeaderHW). For that moment a follower's DescribeLogDirs size, and the
# leader's high watermark, lag the write: measured on 4.3.1's three nodes, a follower still
# answered size 0 right after an acks=1 produce 4 times in 8, never after a 0.5 s pause
# (docs/divergences.md, `replication-timing`). On several nodes the step waits (bounded), as an
# acks=-1 answer does, until each partition's high watermark has reached its leader's log end:
# every in-sync follower then holds every record. A partition that errs is not waited for.
def settle_replicas(step: Step, names: Names) -> None:
    endpoint = names.endpoint
    if step.kind != "produce" or step.args["acks"] == -1 or len(endpoint.node_addresses) < 2:
        return
    partitions = sorted({(names.real(t), p) for t, p, _ in step.args["partitions"]})
    wait_for(lambda: _replicated(endpoint, partitions), SETTLE_S)


def _replicated(endpoint: Endpoint, partitions: list[tuple[str, int]]) -> bool:
    """Each partition's high watermark (ListOffsets latest) at least its leader's log end
    (OffsetForLeaderEpoch of its current epoch), the log end read first."""
    metadata = endpoint.call(3, 9, {"topics": [{"name": t} for t, _ in partitions],
                                    "allow_auto_topic_creation": False,
                                    "include_topic_authorized_operations": False})
    epochs = {(t["name"], p["partition_index"]): p["leader_epoch"]
              for t in metadata.get("topics", []) for p in t["partitions"]
              if p["error_code"] == "none"}
    known = [key for key in partitions if key in epochs]
    if not known:
        return True
    by_topic: dict[str, list[int]] = {}
    for t, p in known:
        by_topic.setdefault(t, []).append(p)
    ends = _offsets(endpoint.partitioned_call(23, 3, {"replica_id": -1, "topics": [
        {"topic": t, "partitions": [{"partition": p, "current_leader_epoch": -1,
                                     "leader_epoch": epochs[(t, p)]} for p in ps]}
        for t, ps in by_topic.items()]}, {}), "topic", "partition", "end_offset")
    marks = _offsets(endpoint.partitioned_call(2, 4, {
        "replica_id": -1, "isolation_level": 0, "topics": [
            {"name": t, "partitions": [{"partition_index": p, "current_leader_epoch": -1,
                                        "timestamp": -1} for p in ps]}
            for t, ps in by_topic.items()]}, {}), "name", "partition_index", "offset")
    return all(marks.get(key, end) >= end for key, end in ends.items())


def _offsets(answer: dict, topic: str, partition: str, offset: str) -> dict:
    """(topic, partition) -> offset of an answer's partitions that did not err."""
    return {(t[topic], p[partition]): p[offset] for t in answer.get("topics", [])
            for p in t["partitions"] if p["error_code"] == "none"}
