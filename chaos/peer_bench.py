"""`kafkaref bench peers`: kafkaref against Apache Kafka and Tansu in one run, with one client.

Every broker is started by name (chaos/peers) on 127.0.0.1 and measured the same way with
confluent-kafka (librdkafka), 1 KiB values, one partition:

    acks=1 RF 1      one node of each broker
    acks=all RF 3    three nodes (min ISR 2); Tansu keeps one node without replication: no row

    produce MB/s     PRODUCE_MIB of 1 KiB records as fast as librdkafka batches them
    produce p99 ms   one record at a time, each waited for (flush), LATENCY_RECORDS of them
    consume MB/s     the records produced, read back from offset 0 by an assigned consumer,
                     timed from the assign (the consumer connected before) to the last record

Before anything is timed each broker takes WARMUP_MIB into a topic of its own (warm: a JVM's
code compiled, a new process's buffers faulted in). The brokers of one setup run side by side and
are measured in interleaved rounds, each figure the median of ROUNDS (see _setup_rows).

Each figure of kafkaref is then divided by the same figure of each peer: kafkaref / peer, above
1 is kafkaref faster (for latency the ratio is peer / kafkaref, so above 1 is still better).
Beside each ratio of medians are the lowest and highest ratio of one round (kafkaref's figure
over the peer's in the same round): on a shared machine a ratio whose rounds range across 1 is
within the run's noise, not a gap (docs/chaos-kafka.md).
Nothing is compared across runs: all brokers are measured in the same run on the same machine.
The client is the same process for every broker, so the client's own cost is the same in every
row; what differs is the broker.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from kafkaref.chaos.peers import PeerError, make_peer

RECORD_BYTES = 1024
PRODUCE_MIB = int(os.environ.get("KAFKAREF_BENCH_PEERS_MIB", "32"))
LATENCY_RECORDS = int(os.environ.get("KAFKAREF_BENCH_PEERS_LATENCY", "300"))
WARMUP_MIB = int(os.environ.get("KAFKAREF_BENCH_PEERS_WARMUP_MIB", "16"))
MIB = 1024 * 1024
ROUNDS = int(os.environ.get("KAFKAREF_BENCH_PEERS_ROUNDS", "3"))
BROKERS = ("kafkaref", "apache-kafka", "tansu")
SETUPS = ((1, "1"), (3, "all"))  # (nodes = replication factor, acks)
TOPIC, WARMUP_TOPIC = "bench", "warm-up"


def _log(message: str) -> None:
    print(f"[bench peers {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def bench_peers(brokers: tuple[str, ...] = BROKERS) -> dict:
    """Rows per (broker, setup) and the kafkaref / peer ratio of every figure."""
    import confluent_kafka  # noqa: F401 -- the one client: fail at once when missing

    rows = []
    with tempfile.TemporaryDirectory(prefix="kafkaref-bench-peers-") as parent:
        for nodes, acks in SETUPS:
            rows += _setup_rows(brokers, nodes, acks, parent)
    return {"title": "kafkaref against its peers: confluent-kafka, 1 KiB values, one partition "
                     f"(median of {ROUNDS} interleaved rounds)",
            "rows": [_row(r) for r in rows], "figures": _ratios(rows)}


def _setup_rows(brokers, nodes: int, acks: str, parent: str) -> list[dict]:
    """Every broker of one setup started at once and measured in ROUNDS interleaved rounds: a
    burst of load from elsewhere on a shared machine then falls on every broker alike, and the
    median of each figure is kept. Each round starts with the next broker (kafkaref, Kafka,
    Tansu; then Kafka, Tansu, kafkaref; ...): whichever broker was measured first in a round
    consumed slower (kafkaref first: kafkaref slower; Kafka first: Kafka slower;
    docs/chaos-kafka.md), so a fixed order favoured the brokers measured later."""
    rows, running = {}, {}
    try:
        for broker in brokers:
            rows[broker] = {"broker": broker, "rf": nodes, "acks": acks}
            try:
                running[broker] = _start(broker, nodes, parent)
            except PeerError as error:
                _log(f"{broker} RF {nodes}: {error}")
                rows[broker]["note"] = str(error)[:120]
        samples: dict = {broker: {} for broker in running}
        for round_ in range(ROUNDS):
            for broker, peer in _rotated(list(running.items()), round_):
                _log(f"{broker} RF {nodes} acks={acks}: round {round_ + 1}")
                for name, value in _measure(peer.bootstrap, acks, round_).items():
                    samples[broker].setdefault(name, []).append(value)
        for broker, figures in samples.items():
            rows[broker].update({k: statistics.median(v) for k, v in figures.items()})
            rows[broker]["rounds"] = figures
    finally:
        for peer in running.values():
            peer.stop()
    return list(rows.values())


def _rotated(items: list, round_: int) -> list:
    """items in round_'s order: the list turned by one place each round."""
    shift = round_ % len(items) if items else 0
    return items[shift:] + items[:shift]


def _start(broker: str, nodes: int, parent: str):
    """A started peer with its warm-up done: a JVM's code compiled by then and a new process's
    buffers faulted in, so every broker is measured warm."""
    if broker == "tansu" and nodes > 1:
        raise PeerError("tansu runs one node: no replication to measure")
    _log(f"{broker}: starting {nodes} node(s)")
    peer = make_peer(broker, nodes=nodes, directory=os.path.join(parent, f"{broker}-{nodes}"))
    peer.start()
    try:
        _create_topic(peer.bootstrap, WARMUP_TOPIC, nodes)
        _produce(peer.bootstrap, "all", WARMUP_MIB * MIB // RECORD_BYTES, WARMUP_TOPIC)
        _consume(peer.bootstrap, WARMUP_MIB * MIB // RECORD_BYTES, WARMUP_TOPIC)
    except BaseException:
        peer.stop()
        raise
    return peer


def _measure(bootstrap: str, acks: str, round_: int) -> dict:
    """One round's figures on a topic of the round's own (replicated like the warm-up's)."""
    topic = f"{TOPIC}-{round_}"
    replicas = 1 if acks == "1" else 3
    _create_topic(bootstrap, topic, replicas)
    count = PRODUCE_MIB * MIB // RECORD_BYTES
    produce = _produce(bootstrap, acks, count, topic)
    consume = _consume(bootstrap, count, topic)
    p50, p99 = _latency(bootstrap, acks, LATENCY_RECORDS, topic)
    return {"produce MB/s": produce, "consume MB/s": consume, "p50 ms": p50, "p99 ms": p99}


def _create_topic(bootstrap: str, topic: str, replicas: int, timeout_s: float = 60.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": str(min(2, replicas))}
    deadline = time.monotonic() + timeout_s
    while True:
        futures = admin.create_topics([NewTopic(topic, 1, replicas, config=config)],
                                      operation_timeout=30)
        try:
            futures[topic].result(30)
            break
        except Exception as error:  # noqa: BLE001 -- KafkaException: retried until the deadline
            if "already exists" in str(error).lower():
                break
            if time.monotonic() > deadline:
                raise PeerError(f"cannot create topic {topic}: {error}") from None
            time.sleep(0.5)
    _produce(bootstrap, "all", 10, topic)  # acknowledged by every replica: leader known


def _producer(bootstrap: str, acks: str, **extra):
    import confluent_kafka

    return confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": False,
        "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 1 << 20,
        "delivery.report.only.error": True, "message.timeout.ms": 60_000, **extra})


def _produce(bootstrap: str, acks: str, count: int, topic: str) -> float:
    """MB/s of count 1 KiB records produced to partition 0, every one acknowledged."""
    from kafkaref.impl.server.bench import produce_all

    producer = _producer(bootstrap, acks)
    value = os.urandom(RECORD_BYTES)
    started = time.perf_counter()
    failed, left = produce_all(producer, topic, value, count)
    elapsed = time.perf_counter() - started
    if failed or left:
        raise PeerError(f"produce: {len(failed)} failed ({failed[:1]}), {left} undelivered")
    return count * RECORD_BYTES / elapsed / MIB


def _consume(bootstrap: str, count: int, topic: str) -> float:
    """MB/s of reading count records of partition 0 from offset 0 (assign, no group)."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
        "fetch.max.bytes": 8 * MIB, "max.partition.fetch.bytes": 4 * MIB})
    try:
        consumer.list_topics(topic, timeout=30)  # connected and metadata known: not timed
        got, got_bytes, started = 0, 0, time.perf_counter()
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 120
        while got < count and time.monotonic() < deadline:
            # Never ask for more than is left: consume() waits its whole timeout for a batch it
            # cannot fill, which added ~1 s to every broker's figure (all read ~29 MB/s).
            messages = consumer.consume(min(10_000, count - got), timeout=1.0)
            for message in messages:
                if message.error() is None:
                    got += 1
                    got_bytes += len(message.value() or b"")
        if got < count:
            raise PeerError(f"consume: read {got} of {count} records")
        return got_bytes / (time.perf_counter() - started) / MIB
    finally:
        consumer.close()


def _latency(bootstrap: str, acks: str, count: int, topic: str) -> tuple[float, float]:
    """(p50, p99) ms of one record produced and waited for, count times."""
    producer = _producer(bootstrap, acks, **{"linger.ms": 0})
    value = os.urandom(RECORD_BYTES)
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        producer.produce(topic, value, partition=0)
        if producer.flush(30):
            raise PeerError("latency: a record was not acknowledged within 30 s")
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return samples[len(samples) // 2], samples[min(len(samples) - 1, len(samples) * 99 // 100)]


FIGURES = ("produce MB/s", "consume MB/s", "p99 ms")


def _ratios(rows: list[dict]) -> dict:
    """kafkaref / peer for every figure both measured (p99: peer / kafkaref, higher = better)."""
    ours = {(r["rf"]): r for r in rows if r["broker"] == "kafkaref"}
    figures = {}
    for row in rows:
        if row["broker"] == "kafkaref" or row["rf"] not in ours:
            continue
        for name in FIGURES:
            mine, theirs = ours[row["rf"]].get(name), row.get(name)
            if not mine or not theirs:
                continue
            key = (f"rf{row['rf']}_{name.split()[0]}_{'latency' if 'ms' in name else 'mb_s'}"
                   f"_kafkaref_over_{row['broker'].replace('-', '_')}")
            figures[key] = _ratio(name, mine, theirs)
            per_round = [_ratio(name, m, t) for m, t in zip(
                ours[row["rf"]].get("rounds", {}).get(name, []),
                row.get("rounds", {}).get(name, []), strict=False) if m and t]
            if per_round:
                figures[f"{key}_lowest_round"] = min(per_round)
                figures[f"{key}_highest_round"] = max(per_round)
    for row in rows:
        for name in FIGURES:
            if row.get(name):
                unit = "ms" if name.endswith("ms") else "mb_s"
                figures[f"{row['broker'].replace('-', '_')}_rf{row['rf']}_"
                        f"{name.split()[0]}_{unit}"] = row[name]
    return figures


def _ratio(name: str, mine: float, theirs: float) -> float:
    """kafkaref / peer, or peer / kafkaref for a latency: above 1, kafkaref is better."""
    return theirs / mine if name.endswith("ms") else mine / theirs


def _row(row: dict) -> dict:
    """Every row with the same columns (a missing figure is '-')."""
    return {"broker": row["broker"], "rf": row["rf"], "acks": row["acks"],
            **{name: row.get(name, "-") for name in ("produce MB/s", "consume MB/s",
                                                     "p50 ms", "p99 ms")},
            "note": row.get("note", "")}
