"""The one normalisation of answers before they are compared: what may differ between Apache Kafka
and kafkaref by nature, and nothing else. Every rule is one line of RULES below; everything not
named there must be equal (error codes, offsets, high watermarks, log start offsets, record
batches, partition counts, config values and sources, group states and generations).

    answer (plain data, endpoints.plain) --normalise(answer, names)--> comparable plain data

`names` is the endpoint's side of the run's symbols (steps.Names): it turns the identities each
broker hands out (producer ids, member ids) and the run's topic prefix back into the symbols the
steps use, so both answers read `p0`, `m1`, `t0` whichever broker gave them.
"""

from __future__ import annotations

import hashlib
import time

from kafkaref.impl.protocol.records import (
    LOG_APPEND_TIME_FLAG,
    decode_batch,
    parse_header,
    peek_offset_and_size,
)
from kafkaref.properties.differential import kept

# field name -> why it is not compared. Dropped wherever it appears.
DROPPED = {
    "throttle_time": "quota throttling is a broker's own business",
    "error_message": "texts: the error code is compared",
    "batch_index_error_message": "texts: the batch index is compared",
    "cluster_id": "each cluster draws its own",
    "host": "addresses: the node is compared by position (NODE_FIELDS)",
    "port": "addresses",
    "supported_features": "KRaft feature levels (metadata.version, ...): kafkaref has none "
                          "(docs/divergences.md)",
    "finalized_features": "as supported_features",
    "finalized_features_epoch": "as supported_features",
    "zk_migration_ready": "ZooKeeper migration: no such thing in kafkaref",
    "log_dir": "paths: each broker's own directory",
    "total_bytes": "the disk's size (DescribeLogDirs v4+)",
    "usable_bytes": "the disk's free space",
}
# Node ids are numbered differently (Kafka's from 1, kafkaref's from 0) and a 3-node cluster may
# place leaders elsewhere: a node id reads "node", no node (-1) stays -1. Counts stay compared.
NODE_FIELDS = frozenset({"node_id", "leader_id", "controller_id", "replica_nodes", "isr_nodes",
                         "offline_replicas", "preferred_read_replica", "broker_id",
                         "eligible_leader_replicas", "last_known_elr"})
# Wall-clock times: a value within a day of now reads "wall clock" (the steps only ever send
# timestamps far from now, so such a value is the broker's clock: LogAppendTime).
TIME_FIELDS = frozenset({"log_append_time", "timestamp", "base_timestamp", "max_timestamp"})
WALL_CLOCK_WINDOW_MS = 24 * 3600 * 1000
IDENTITY = ("resource_type", "resource_name", "name", "topic", "topic_id", "group_id",
            "partition_index", "partition", "index", "api_key", "member_id")
# Identities a broker hands out: compared as the symbol the run gave them.
TOPIC_ID = "topic_id"  # a real id reads as its topic's symbol when the run looked it up (a
# step naming topics by id), else "id"; null and the zero id stay as they are
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
BROKER_RESOURCE = 4  # a config resource named by a node id (compared as its symbol, n0...)


def normalise(answer, names) -> object:
    """The comparable form of one answer (see the module docstring)."""
    return _walk(answer, names, None)


def _walk(value, names, field: str | None):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in DROPPED or key in kept.UNCOMPARED_FIELDS:
                continue
            if key == "api_keys":
                item = _api_keys(value)
            if key == "resource_name" and value.get("resource_type") == BROKER_RESOURCE:
                item = names.node_symbol(item)  # a node id (NODE_FIELDS)
            out[key] = _walk(item, names, key)
        if "config_source" in out and out.get("name") in kept.DEPLOYMENT_CONFIGS:
            for deployed in ("value", "config_source", "synonyms"):
                out.pop(deployed, None)
        return out
    if isinstance(value, list):
        value = _merged_topics([v for v in value if not _uncompared_config(v)])
        items = [_walk(v, names, field) for v in value]
        # Lists of structs (topics, partitions, configs, members...) come from hash maps on
        # Kafka's side: their order is not part of the answer. Sorted by identity first, so
        # that the same topic / partition / resource is compared with the same.
        if items and all(isinstance(v, dict) for v in items):
            items.sort(key=lambda v: (tuple(repr(v.get(k)) for k in IDENTITY), repr(v)))
        return items
    if isinstance(value, (bytes, bytearray)):
        return records(bytes(value), names) if field == "records" else _bytes(value)
    return _scalar(value, names, field)


def _scalar(value, names, field: str | None):
    if field in NODE_FIELDS and isinstance(value, int):
        return "node" if value >= 0 else value
    if field in TIME_FIELDS and isinstance(value, int) and _wall_clock(value):
        return "wall clock"
    if field == TOPIC_ID:  # a topic the steps named by id reads as its symbol
        return names.topic_id_symbol(value) if value not in (None, ZERO_UUID) else value
    if field == "producer_id" and isinstance(value, int):
        return names.producer_symbol(value)
    if field in ("member_id", "leader") and isinstance(value, str):
        return names.member_symbol(value)
    if isinstance(value, str):
        return names.symbol(value)
    return value


def _api_keys(answer: dict):
    """ApiVersions: the ranges each broker advertises differ by design (kafkaref implements a
    subset; the machine reads them to choose versions), so a successful answer's list is not
    compared; an error answer lists which keys it names."""
    if answer.get("error_code") == "none":
        return "advertised ranges (not compared)"
    return sorted(k["api_key"] for k in answer.get("api_keys") or [])


PARTITION_LISTS = ("partitions", "partition_responses")


def _merged_topics(entries: list) -> list:
    """Per-topic entries of one topic merged into one: Kafka groups a response's partitions
    by topic only where they are adjacent in its map, so a topic can appear twice (a Fetch
    naming an unknown partition of it: the request's errors come first); a topic named by id
    is keyed by its id."""
    merged: dict = {}
    out = []
    for entry in entries:
        key = _topic_key(entry)
        if key is None:
            out.append(entry)
        elif key in merged:
            first, field = merged[key]
            first[field] = first[field] + entry[field]
        else:
            field = next(f for f in PARTITION_LISTS if f in entry)
            merged[key] = (dict(entry), field)
            out.append(merged[key][0])
    return out


def _topic_key(entry):
    """A per-topic entry's topic: its name, or its id when the version names topics by id
    (OffsetCommit v10 answers two topics of one unknown id in one entry, kafkaref in two)."""
    if not isinstance(entry, dict) or not any(f in entry for f in PARTITION_LISTS):
        return None
    if "topic" not in entry and "name" not in entry and "topic_id" in entry:
        return ("id", entry["topic_id"])
    return entry.get("topic", entry.get("name"))


def _uncompared_config(entry) -> bool:
    """A DescribeConfigs entry kept out while its row of docs/divergences.md stands."""
    return isinstance(entry, dict) and "config_source" in entry and (
        entry.get("name") in kept.UNCOMPARED_CONFIGS)


def _wall_clock(ms: int) -> bool:
    return abs(ms - time.time() * 1000) < WALL_CLOCK_WINDOW_MS


def _bytes(data: bytes) -> str:
    if len(data) <= 24:
        return data.hex() or "(empty)"
    return f"{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()[:12]}"


def _maybe_bytes(data: bytes | None) -> str | None:
    return None if data is None else _bytes(data)


def records(data: bytes, names) -> list:
    """A records field as its batches: each batch's header and records; a trailing partial
    batch (a fetch may end inside one) by its size."""
    out, pos = [], 0
    while pos < len(data):
        peeked = peek_offset_and_size(data, pos)
        if peeked is None or peeked[1] < 61 or pos + peeked[1] > len(data):
            if kept.PARTIAL_BATCHES_COMPARED:
                out.append({"partial_batch_bytes": len(data) - pos})
            break
        out.append(_batch(data[pos:pos + peeked[1]], names))
        pos += peeked[1]
    return out


def _batch(data: bytes, names) -> dict:
    header = parse_header(data)
    batch = {name: _scalar(value, names, name) for name, value in header._asdict().items()}
    if header.attributes & LOG_APPEND_TIME_FLAG:
        batch.pop("crc")  # covers max_timestamp, which is the broker's clock here
    decoded = decode_batch(data)
    if decoded.error.name != "none":
        batch["undecodable"] = decoded.error.name
        return batch
    batch["records"] = [
        [r.offset, _scalar(r.timestamp, names, "timestamp"), _maybe_bytes(r.key),
         _maybe_bytes(r.value), [[k, _maybe_bytes(v)] for k, v in r.headers]]
        for r in decoded.records]
    return batch


def this_run_only(answer: dict, prefix: str) -> dict:
    """An answer listing every topic or group, cut to this run's (the brokers are shared by
    every run of a walk, and hold internal topics such as __consumer_offsets)."""
    out = dict(answer)
    for key, name in (("topics", "name"), ("groups", "group_id")):
        if isinstance(out.get(key), list):
            out[key] = [e for e in out[key] if str(e.get(name, "")).startswith(prefix)]
    if isinstance(out.get("results"), list):  # DescribeLogDirs: each dir's topics
        out["results"] = [this_run_only(r, prefix) if isinstance(r, dict) else r
                          for r in out["results"]]
    return out
