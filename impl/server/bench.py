"""`kafkaref bench broker`: produce and fetch throughput, acks=all latency, peak broker RSS.

Produce rows: "kafkaref" is our producer with 5 requests in flight, "kafkaref-1-in-flight" the
same with one, "kafkaref-send_many" the same producer given every record in one bulk call,
"confluent-kafka" librdkafka, "protocol" pre-built Produce requests sent one at a
time (the broker's share alone, with no client-side record encoding: the fair match for the
pump, which also sends pre-built frames one at a time; the median of PROTOCOL_ROUNDS runs).
Figures <client>_rf3_over_rf1_<batch> are issue 6's replication target (at least 1/3).

Each produce row also says where the CPU went during its timed sections: microseconds of CPU
per 1 KiB record in the client process (all its threads: librdkafka's too) and in the brokers
(`CpuProbe`), and the ratio to the pump those two figures allow at best ("CPU ceiling ratio":
every core busy with client or broker work, nothing else). A client needing more than ~1.3 us
per record cannot reach 25% of a ~3 GB/s pump on 2 cores however fast the broker is; the
ceiling shows which rows are bound that way.

Every throughput is set against a raw loopback socket pump measured in the same run: the same
frame sizes sent over 127.0.0.1 to a thread that reads them and answers a 4-byte ack, one frame
in flight, as a producer with one request in flight does. Brokers run as separate processes
(`LocalCluster`), so their RSS is theirs alone; each row, the latency and the fetch figures get
a cluster of their own (`fresh_cluster`), so no row pays for the topics of the rows before it.

Between rows the bench writes the brokers' dirty pages out and drops their files from the page
cache (`drop_page_cache`). On these VMs page-cache memory not touched before costs a host fault
per page: writes run at ~5 GB/s into recycled pages but ~340 MB/s once the cache has grown past a
few hundred MiB, so without this each row would be throttled by the bytes earlier rows wrote (RF3
rows, writing three copies, ran at a third of their speed depending only on their place in the
order). Dropping the cache makes every row start alike; the log bytes stay on disk.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import statistics
import struct
import tempfile
import threading
import time

import psutil

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.client.consumer import Consumer
from kafkaref.impl.client.producer import Producer
from kafkaref.impl.progress import SilentProgress
from kafkaref.impl.server.local_cluster import LocalCluster

RECORD_BYTES = 1024
PROTOCOL_ROUNDS = 5
POLL_EVERY = 1000  # confluent-kafka: records between poll() calls
PUMP_ROUNDS, PUMP_LENGTH = 5, 4
CLIENT_ROUNDS = 3  # runs per client row (median)
KIB, MIB = 1024, 1024 * 1024


class Timed:
    elapsed = 0.0  # wall seconds of a CpuProbe section, set when it ends


class CpuProbe:
    """CPU seconds of this process (the client; its RSS sampler thread adds well under 1%) and
    of the broker processes, summed over the timed sections of the runs, with the bytes those
    sections moved."""

    def __init__(self):
        self.brokers: list[psutil.Process] = []
        self.reset()

    def reset(self) -> None:
        self.client_s = self.broker_s = 0.0
        self.bytes = 0

    @staticmethod
    def _cpu(process: psutil.Process) -> float:
        """CPU seconds of all of a process's threads, from schedstat's nanosecond counters (the
        10 ms ticks of cpu_times are too coarse for sections of ~0.1 s)."""
        total = 0
        try:
            for task in os.listdir(f"/proc/{process.pid}/task"):
                with open(f"/proc/{process.pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile: its time is lost, a few ticks at most
        return total / 1e9

    @contextlib.contextmanager
    def section(self, moved_bytes: int):
        """A timed section moving moved_bytes: `with PROBE.section(n) as timed: ...`, then
        n / timed.elapsed is its throughput; its CPU is added to the probe's."""
        timed = Timed()
        client, brokers = time.process_time(), sum(self._cpu(p) for p in self.brokers)
        started = time.perf_counter()
        yield timed
        timed.elapsed = time.perf_counter() - started
        self.client_s += time.process_time() - client
        self.broker_s += sum(self._cpu(p) for p in self.brokers) - brokers
        self.bytes += moved_bytes

    def per_record_us(self) -> tuple[float, float]:
        records = self.bytes / RECORD_BYTES
        if not records:
            return float("nan"), float("nan")
        return self.client_s / records * 1e6, self.broker_s / records * 1e6


PROBE = CpuProbe()


class RssSampler(threading.Thread):
    def __init__(self, pids):
        super().__init__(daemon=True)
        self.processes = [psutil.Process(pid) for pid in pids]
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.05):
            for process in self.processes:
                try:
                    self.peak = max(self.peak, process.memory_info().rss)
                except psutil.Error:
                    pass


def cpu_ceiling(client_us: float, broker_us: float) -> float:
    """MB/s that client and brokers could reach at their measured CPU per record if every
    core of this machine ran one of them all the time: a row whose ceiling is below a target
    is bound by the CPU its parts spend per record, however they were scheduled."""
    per_record = client_us + broker_us
    if not per_record > 0:
        return float("nan")
    return (os.cpu_count() or 1) * 1e6 / per_record * RECORD_BYTES / MIB


def drop_page_cache(directory: str) -> None:
    """Flush dirty pages, then drop every file under directory from the page cache."""
    os.sync()
    for root, _, names in os.walk(directory):
        for name in names:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue  # deleted meanwhile (a rolled temp file)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def raw_pump(frame_bytes: int, total_bytes: int) -> float:
    """MB/s of size-prefixed frames over loopback, each answered with 4 bytes."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def sink():
        conn, _ = server.accept()
        with conn:
            buffer = bytearray(1 << 20)
            while True:
                header = conn.recv(4, socket.MSG_WAITALL)
                if len(header) < 4:
                    return
                (size,) = struct.unpack(">i", header)
                remaining = size
                while remaining:
                    got = conn.recv_into(buffer, min(remaining, len(buffer)))
                    if not got:
                        return
                    remaining -= got
                conn.sendall(b"\0\0\0\0")

    thread = threading.Thread(target=sink, daemon=True)
    thread.start()
    frame = struct.pack(">i", frame_bytes) + os.urandom(frame_bytes)
    count = max(1, total_bytes // frame_bytes)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        started = time.perf_counter()
        for _ in range(count):
            sock.sendall(frame)
            sock.recv(4, socket.MSG_WAITALL)
        elapsed = time.perf_counter() - started
    thread.join(5)
    server.close()
    return count * frame_bytes / elapsed / MIB


def create_topic(bootstrap: str, name: str, replication_factor: int) -> None:
    with KafkaConnection.to(bootstrap.split(",")[0]) as connection:
        connection.send(19, 4, {"topics": [{
            "name": name, "num_partitions": 1, "replication_factor": replication_factor,
            "assignments": [], "configs": [{"name": "min.insync.replicas",
                                            "value": str(min(2, replication_factor))}]}],
            "timeout": 10_000, "validate_only": False})
    wait_isr(bootstrap, name, replication_factor)


def wait_isr(bootstrap, topic, size, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with KafkaConnection.to(bootstrap.split(",")[0]) as connection:
            md = connection.send(3, 8, {"topics": [{"name": topic}]})
        parts = md.topics[0].partitions
        if parts and len(parts[0].isr_nodes) == size and parts[0].leader_id >= 0:
            return
        time.sleep(0.05)
    raise TimeoutError(f"{topic}: ISR never reached {size}")


def ours(bootstrap, topic, acks, batch_bytes, total_bytes, max_in_flight=5,
         bulk=False) -> float:
    """Our producer; by default with 5 requests in flight (Kafka's and librdkafka's default),
    one send() per record, or (bulk) one send_many() for them all."""
    value = os.urandom(RECORD_BYTES)
    count = total_bytes // RECORD_BYTES
    with Producer(bootstrap, acks=acks, batch_size=batch_bytes, linger_ms=10_000,
                  max_in_flight=max_in_flight) as producer:
        # Untimed warm-up, as for the protocol row: right after creation the leader may not
        # know the topic yet, and a retry's 100 ms backoff would halve a 0.2 s run.
        producer.send(topic, value, partition=0)
        producer.flush()
        with PROBE.section(count * RECORD_BYTES) as timed:
            if bulk:
                futures = producer.send_many(topic, [value] * count, partition=0)
            else:
                futures = [producer.send(topic, value, partition=0) for _ in range(count)]
            producer.flush()
            futures[-1].result()
    for future in futures:  # every record acknowledged (raises otherwise), checked untimed
        future.result()
    return count * RECORD_BYTES / timed.elapsed / MIB


def ours_one_in_flight(bootstrap, topic, acks, batch_bytes, total_bytes) -> float:
    return ours(bootstrap, topic, acks, batch_bytes, total_bytes, max_in_flight=1)


def ours_bulk(bootstrap, topic, acks, batch_bytes, total_bytes) -> float:
    return ours(bootstrap, topic, acks, batch_bytes, total_bytes, bulk=True)


def produce_raw(bootstrap, topic, acks, batch_bytes, total_bytes) -> float:
    """MB/s of record batches the broker takes in Produce v8 requests built once and sent one
    at a time (no client-side record encoding): the broker's own share, like the raw pump."""
    from kio.index import load_request_schema

    from kafkaref.impl.protocol import wire
    from kafkaref.impl.protocol.messages import build
    from kafkaref.impl.protocol.records import NewRecord, build_batch

    value = os.urandom(RECORD_BYTES)
    batch = build_batch([NewRecord(value=value, timestamp=int(time.time() * 1000))
                         for _ in range(max(1, batch_bytes // (RECORD_BYTES + 12)))])
    request = build(load_request_schema(0, 8), {
        "transactional_id": None, "acks": -1 if acks == "all" else int(acks),
        "timeout": 30_000, "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": batch}]}]})
    frame = wire.encode_request(1, "bench", request)
    count = max(1, total_bytes // len(batch))
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    leader = _leader_address(bootstrap, topic) or (host, int(port))
    with socket.create_connection(leader) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def produce_once() -> int:
            sock.sendall(frame)
            (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
            _, answer = wire.decode_response(0, 8, sock.recv(size, socket.MSG_WAITALL))
            return answer.responses[0].partition_responses[0].error_code

        deadline = time.monotonic() + 30
        while produce_once() != 0:  # untimed warm-up: the leader may not know the topic yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"produce to {topic} kept failing")
            time.sleep(0.05)
        with PROBE.section(count * len(batch)) as timed:
            for _ in range(count):
                error = produce_once()
                if error != 0:  # only accepted batches count
                    raise RuntimeError(f"produce to {topic} failed: {error!r}")
    return count * len(batch) / timed.elapsed / MIB


def produce_raw_median(bootstrap, topic, acks, batch_bytes, total_bytes,
                       rounds=PROTOCOL_ROUNDS, directory=None) -> float:
    """Median of `rounds` protocol runs (page cache dropped before each). A run of 32 requests
    lasts ~0.04-0.15 s, so one stall on a shared 2-core machine (another process's burst, a
    10 ms checkpoint fsync) moves a single run by tens of percent; the median does not."""
    runs = []
    for _ in range(rounds):
        if directory is not None:
            drop_page_cache(directory)
        runs.append(produce_raw(bootstrap, topic, acks, batch_bytes, total_bytes))
    return sorted(runs)[len(runs) // 2]


def _leader_address(bootstrap, topic):
    with KafkaConnection.to(bootstrap.split(",")[0]) as connection:
        md = connection.send(3, 8, {"topics": [{"name": topic}]})
    brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
    parts = md.topics[0].partitions
    return brokers.get(parts[0].leader_id) if parts else None


def confluent(bootstrap, topic, acks, batch_bytes, total_bytes) -> float | None:
    try:
        import confluent_kafka
    except ImportError:
        return None
    value = os.urandom(RECORD_BYTES)
    count = total_bytes // RECORD_BYTES
    # Tuned for throughput as librdkafka documents it: delivery reports for failures only (a
    # Python callback per record cost ~0.2 us of the client's ~2 us per record) and poll()
    # every POLL_EVERY records. Every record is still checked: flush() must leave none
    # undelivered and no failure may be reported.
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "batch.size": batch_bytes,
        "linger.ms": 5, "message.max.bytes": max(batch_bytes * 2, 1_000_000),
        "queue.buffering.max.kbytes": 1 << 20, "enable.idempotence": False,
        "delivery.report.only.error": True})
    produce_all(producer, topic, value, 1)  # untimed warm-up
    with PROBE.section(count * RECORD_BYTES) as timed:
        failed, left = produce_all(producer, topic, value, count)
    if failed or left:
        raise RuntimeError(f"confluent-kafka: {len(failed)} failed, {left} undelivered")
    return count * RECORD_BYTES / timed.elapsed / MIB


def produce_all(producer, topic: str, value: bytes, count: int) -> tuple[list, int]:
    """count records of value to partition 0 through a confluent-kafka producer, polled every
    POLL_EVERY records, then flushed: (the delivery errors, the records still undelivered)."""
    failed = []

    def delivered(error, _message):
        if error is not None:
            failed.append(error)

    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        if i % POLL_EVERY == 0:
            producer.poll(0)
    return failed, producer.flush(120)


def latency(bootstrap, topic, rate_per_s=100, seconds=3.0) -> tuple[float, float]:
    samples = []
    value = os.urandom(RECORD_BYTES)
    with Producer(bootstrap, acks="all", batch_size=1) as producer:
        producer.send(topic, value, partition=0).result()  # warm up metadata and connection
        interval = 1 / rate_per_s
        next_at = time.perf_counter()
        end = next_at + seconds
        while next_at < end:
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            started = time.perf_counter()
            producer.send(topic, value, partition=0).result()
            samples.append((time.perf_counter() - started) * 1000)
            next_at += interval
    samples.sort()
    return samples[len(samples) // 2], samples[min(len(samples) - 1, len(samples) * 99 // 100)]


def fetch(bootstrap, topic, total_bytes) -> float:
    with Consumer(bootstrap, max_partition_fetch_bytes=4 * MIB) as consumer:
        consumer.assign([(topic, 0)])
        consumer.seek(topic, 0, 0)
        consumer.poll(0)  # connect
        consumer.seek(topic, 0, 0)
        got, started = 0, time.perf_counter()
        while got < total_bytes:
            records = consumer.poll(max_wait_ms=100)
            if not records:
                break
            got += sum(len(r.value or b"") for r in records)
        return got / (time.perf_counter() - started) / MIB


def fetch_raw(bootstrap, topic, total_bytes) -> float:
    """MB/s of record bytes served by Fetch v11 requests (no client-side record decoding)."""
    with KafkaConnection.to(bootstrap.split(",")[0]) as connection:
        offset, got, started = 0, 0, time.perf_counter()
        while got < total_bytes:
            answer = connection.send(1, 11, {
                "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 8 * MIB,
                "isolation_level": 0, "topics": [{"topic": topic, "partitions": [{
                    "partition": 0, "fetch_offset": offset, "current_leader_epoch": -1,
                    "partition_max_bytes": 4 * MIB}]}]})
            part = answer.responses[0].partitions[0]
            data = part.records or b""
            if not data:
                break
            got += len(data)
            offset = _next_offset(data)
        return got / (time.perf_counter() - started) / MIB


def _next_offset(data: bytes) -> int:
    from kafkaref.impl.core.batches import positioned_headers

    _, positioned = positioned_headers(data)
    return positioned[-1][1].next_offset


CLIENTS = (("kafkaref", ours), ("kafkaref-send_many", ours_bulk),
           ("kafkaref-1-in-flight", ours_one_in_flight), ("confluent-kafka", confluent),
           ("protocol", produce_raw_median))


@contextlib.contextmanager
def fresh_cluster(brokers: int, parent: str, name: str):
    """A LocalCluster of its own for one measurement (0.5-0.7 s to start and stop), its RSS
    sampled and its CPU probed; its directory is removed afterwards. One per row: every row's
    topic adds an idle partition to every later follower fetch (~10% of acks=all throughput
    with 9 of them, measured), so on a shared cluster a row's figure depended on its place."""
    directory = os.path.join(parent, name)
    cluster = LocalCluster(brokers, directory)
    cluster.start()
    rss = RssSampler([p.pid for p in cluster.processes.values()])
    rss.start()
    PROBE.brokers = [psutil.Process(p.pid) for p in cluster.processes.values()]
    try:
        yield cluster, rss
    finally:
        rss.stop.set()
        rss.join(1)
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)


def produce_row(brokers, acks, batch, total, client, run, parent) -> tuple[float | None, int]:
    """(MB/s or None if the client is missing, peak broker RSS) of one produce row."""
    topic = f"b-{brokers}-{batch}-{client}"
    with fresh_cluster(brokers, parent, topic) as (cluster, rss):
        create_topic(cluster.bootstrap, topic, brokers)
        # Untimed: a new broker process is cold (its buffers not yet faulted in, its code not
        # yet specialised); the timed runs are meant to see it in its steady state.
        produce_raw(cluster.bootstrap, topic, acks, batch, total)
        PROBE.reset()
        if run is produce_raw_median:
            mb_s = run(cluster.bootstrap, topic, acks, batch, total, directory=parent)
        else:  # single runs of a client row spread +-15% (645-953 MB/s for send_many RF1)
            runs = []
            for _ in range(CLIENT_ROUNDS):
                drop_page_cache(parent)
                runs.append(run(cluster.bootstrap, topic, acks, batch, total))
            mb_s = None if None in runs else sorted(runs)[len(runs) // 2]
    return mb_s, rss.peak


def bench_broker(progress=None) -> dict:
    """progress: a progress display (impl/progress.py; `kafkaref bench` hands in a bar)."""
    rows, figures, peaks = [], {}, {1: 0, 3: 0}
    plan = [(16 * KIB, 8 * MIB), (1 * MIB, 64 * MIB)]
    # The pump, the denominator of every ratio, runs PUMP_ROUNDS times PUMP_LENGTH times as
    # long as a row: 32 MiB pumps lasted ~10 ms and ranged 780-4,800 MB/s (a median of three
    # moved by 50% between runs); 128 MiB ones keep within ~10% of their median.
    pumps = {batch: statistics.median(raw_pump(batch, total * PUMP_LENGTH)
                                      for _ in range(PUMP_ROUNDS))
             for batch, total in plan}
    with tempfile.TemporaryDirectory() as directory, progress or SilentProgress() as progress:
        task = progress.add_task("broker bench", total=2 * len(plan) * len(CLIENTS) + 2)
        for brokers, acks in ((1, "1"), (3, "all")):
            for batch, total in plan:
                for client, run in CLIENTS:
                    progress.update(task, description=f"RF{brokers} {batch // KIB} KiB {client}")
                    mb_s, peak = produce_row(brokers, acks, batch, total, client, run,
                                             directory)
                    progress.advance(task)
                    peaks[brokers] = max(peaks[brokers], peak)
                    if mb_s is None:
                        continue
                    client_us, broker_us = PROBE.per_record_us()
                    rows.append({"client": client, "rf": brokers, "acks": acks,
                                 "batch": f"{batch // KIB} KiB", "MB/s": mb_s,
                                 "records/s": mb_s * MIB / RECORD_BYTES,
                                 "raw pump MB/s": pumps[batch],
                                 "ratio": mb_s / pumps[batch],
                                 "client CPU us/rec": client_us,
                                 "brokers CPU us/rec": broker_us,
                                 "CPU ceiling ratio": cpu_ceiling(client_us, broker_us)
                                 / pumps[batch]})
                    name = f"{client}_rf{brokers}_{batch // KIB}k"
                    figures[f"{name}_client_cpu_us"] = client_us
                    figures[f"{name}_broker_cpu_us"] = broker_us
                    figures[f"{name}_mb_s"] = mb_s
        progress.update(task, description="acks=all latency")
        with fresh_cluster(3, directory, "latency") as (cluster, rss):
            create_topic(cluster.bootstrap, "latency", 3)
            p50, p99 = latency(cluster.bootstrap, "latency")
        figures["acks_all_rf3_latency_p50_ms"] = p50
        figures["acks_all_rf3_latency_p99_ms"] = p99
        progress.advance(task)
        progress.update(task, description="fetch")
        with fresh_cluster(1, directory, "fetch") as (cluster, rss):
            create_topic(cluster.bootstrap, "fetch", 1)
            produce_raw(cluster.bootstrap, "fetch", "1", MIB, 32 * MIB)  # the log to read
            fetch_raw(cluster.bootstrap, "fetch", 32 * MIB)  # untimed: warm the cache
            raw_mb_s = fetch_raw(cluster.bootstrap, "fetch", 32 * MIB)
            fetch_mb_s = fetch(cluster.bootstrap, "fetch", 32 * MIB)
        figures["fetch_protocol_mb_s"] = raw_mb_s
        figures["fetch_protocol_ratio_vs_pump"] = raw_mb_s / pumps[MIB]
        figures["fetch_consumer_mb_s"] = fetch_mb_s
        figures["fetch_consumer_ratio_vs_pump"] = fetch_mb_s / pumps[MIB]
    for brokers, peak in peaks.items():
        figures[f"peak_rss_mb_rf{brokers}"] = peak / MIB
    for batch in (16 * KIB, MIB):
        figures[f"raw_pump_{batch // KIB}k_mb_s"] = pumps[batch]
    rf1 = figures.get(f"kafkaref_rf1_{MIB // KIB}k_mb_s", 0.0)
    rf3 = figures.get(f"kafkaref_rf3_{MIB // KIB}k_mb_s", 0.0)
    figures["rf1_1m_ratio_vs_pump"] = rf1 / pumps[MIB]
    figures["rf3_over_rf1_1m"] = rf3 / rf1 if rf1 else 0.0
    raw1 = figures.get(f"protocol_rf1_{MIB // KIB}k_mb_s", 0.0)
    figures["protocol_rf1_1m_ratio_vs_pump"] = raw1 / pumps[MIB]
    # issue 6's replication target: acks=all RF3 at least a third of acks=1 RF1, per client
    for client in ("protocol", "kafkaref", "kafkaref-send_many", "confluent-kafka"):
        for batch in (16 * KIB, MIB):
            one = figures.get(f"{client}_rf1_{batch // KIB}k_mb_s")
            three = figures.get(f"{client}_rf3_{batch // KIB}k_mb_s")
            if one and three is not None:
                figures[f"{client}_rf3_over_rf1_{batch // KIB}k"] = three / one
    return {"title": "broker: produce (1 KiB records) and fetch throughput vs a raw loopback pump",
            "rows": rows, "figures": figures}
