"""`kafkaref bench groups`: the cost of durable offset commits in the core broker (no sockets).

- commit: OffsetCommit requests (one partition each) handled by a broker that is its group's
  coordinator, each an acks=all append to __consumer_offsets; baseline: Produce requests with
  acks=all of one record of the same size to an ordinary topic (the same append path without
  the group's checks and cache).
- load: a new leader replaying an offsets partition of N commits into its cache; baseline:
  reading and decoding the same batches without interpreting the records.
"""

from __future__ import annotations

import time

from kio.index import load_request_schema

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core import offsets_topic
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.committed_offsets import CommittedOffsets
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol import records, wire
from kafkaref.impl.protocol.messages import build

COMMITS = 5_000
LOADED = 50_000


def _broker():
    now = [0]
    logs = {}
    broker = Broker(BrokerConfig(offsets_topic_num_partitions=1), lambda: now[0],
                    lambda key: logs.setdefault(key, MemoryLog()))
    controller = LocalController()
    controller.register(broker, "127.0.0.1", 9092)
    controller.create_topic("t", 1, 1, {}, lambda error, message: None)
    controller.create_topic(offsets_topic.NAME, 1, 1, {}, lambda error, message: None)
    return broker, logs


def _frame(api_key: int, version: int, values: dict) -> bytes:
    return wire.encode_request(1, "bench", build(load_request_schema(api_key, version),
                                                 values))[4:]


def _rate(broker, frame: bytes, count: int) -> float:
    answers = []
    started = time.perf_counter()
    for _ in range(count):
        broker.handle(wire.decode_request(frame), answers.append)
    elapsed = time.perf_counter() - started
    assert len(answers) == count
    return count / elapsed


def _commit_rates() -> tuple[float, float]:
    broker, _ = _broker()
    commit = _frame(8, 7, {
        "group_id": "bench", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": "t", "partitions": [{
            "partition_index": 0, "committed_offset": 12345, "committed_leader_epoch": 3,
            "committed_metadata": ""}]}]})
    key = offsets_topic.encode_key(offsets_topic.OffsetKey("bench", "t", 0))
    value = offsets_topic.encode_value(offsets_topic.CommittedOffset(12345, 3, "", 0))
    produce = _frame(0, 8, {"acks": -1, "timeout": 5000, "transactional_id": None,
                            "topic_data": [{"name": "t", "partition_data": [{
                                "index": 0, "records": records.build_batch(
                                    [(key, value, (), 0)])}]}]})
    return _rate(broker, commit, COMMITS), _rate(broker, produce, COMMITS)


def _load_times() -> tuple[float, float]:
    broker, logs = _broker()
    log = logs[(offsets_topic.NAME, 0)]
    for i in range(LOADED):
        key = offsets_topic.encode_key(offsets_topic.OffsetKey(f"g{i % 100}", "t", i % 10))
        value = offsets_topic.encode_value(offsets_topic.CommittedOffset(i, 0, "", i))
        broker.replica_manager.partition((offsets_topic.NAME, 0)).append_as_leader(
            records.build_batch([(key, value, (), i)]), 1)
    cache = CommittedOffsets()
    started = time.perf_counter()
    cache.lead({0: 99}, lambda index: log)
    while cache.status(0) != 0:
        cache.load_step(lambda index: log)
    loading = time.perf_counter() - started
    started, position = time.perf_counter(), 0
    while position < log.log_end_offset:
        for view in records.split_batches(log.read(position, 1 << 20, log.log_end_offset))[1]:
            batch = records.decode_batch(view)
            position = batch.header.base_offset + batch.header.last_offset_delta + 1
    return loading, time.perf_counter() - started


def bench_groups() -> dict:
    commits, produces = _commit_rates()
    loading, reading = _load_times()
    rows = [
        {"what": "OffsetCommit (acks=all to __consumer_offsets)", "per_s": commits,
         "baseline": "Produce acks=all, same record", "baseline_per_s": produces,
         "ratio": commits / produces},
        {"what": f"load {LOADED:,} commits into the cache", "per_s": LOADED / loading,
         "baseline": "read + decode the same batches", "baseline_per_s": LOADED / reading,
         "ratio": reading / loading},
    ]
    return {"title": "durable offset commits (core broker, RF 1, in memory)", "rows": rows,
            "figures": {"commits_per_s": commits, "produce_baseline_per_s": produces,
                        "commit_vs_produce": commits / produces,
                        "load_commits_per_s": LOADED / loading,
                        "load_vs_decode": reading / loading}}
