"""Checks of the partition log as clients see it: offsets, acks, the high watermark, offset
lookups, codecs, record fields, topic creation."""

from __future__ import annotations

import struct
import threading
import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import PREFERRED_LEVEL, Skip, check
from kafkaref.chaos.conform.faults import (
    KILL,
    RESTART,
    Target,
    down,
    inflict,
    replica_faults,
    target_of,
    wait_serving,
)
from kafkaref.chaos.conform.probe import Probe, batch_now, now_ms
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST

# The checks that stop a broker run once, at the preferred versions, as the faults group's:
# each kill and restart costs seconds, and a restarted broker under a loaded machine may miss
# its session and leave the cluster again for a while (what broke the next check's topic).
FAULTED = (PREFERRED_LEVEL,)


def values_batch(prefix: bytes, count: int, **options) -> bytes:
    return batch_now([(None, b"%s-%d" % (prefix, i), (), None) for i in range(count)],
                       **options)


@check("dense_offsets", "log", "KIP-98 / protocol: Produce base_offset; Kafka log: offsets are "
       "assigned consecutively per partition")
def dense_offsets(probe: Probe):
    """Concurrent producers on separate connections get disjoint offset ranges that together
    cover 0..n-1 with no gap, and a read returns exactly those records at those offsets."""
    topic = probe.create_topic("dense")
    writers, batches_each = 4, 15
    assigned: dict[int, tuple[int, bytes]] = {}
    errors: list[str] = []
    lock = threading.Lock()

    def write(w: int) -> None:
        try:
            conn = probe.connect(probe.leader(topic).address)
            for b in range(batches_each):
                count = 1 + (w + b) % 4
                batch = values_batch(b"w%d-b%d" % (w, b), count)
                base = probe.produce_ok(topic, batch, acks=1, conn=conn)
                with lock:
                    assigned[base] = (count, b"w%d-b%d" % (w, b))
        except Exception as exc:  # noqa: BLE001 -- reported as evidence below
            errors.append(repr(exc))

    threads = [threading.Thread(target=write, args=(w,), daemon=True) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(probe.timeout_s * 3)
    probe.expect(not errors, f"a producer failed: {errors[:2]}", expected="every Produce NONE")
    expected_offset, layout = 0, []
    for base in sorted(assigned):
        count, _ = assigned[base]
        probe.expect(base == expected_offset, f"base offset {base} where {expected_offset} "
                     "was next (gap or overlap)", response=f"bases {sorted(assigned)[:20]}",
                     expected="each batch starts where the previous one ended")
        expected_offset += count
        layout.append(base)
    records = probe.read_all(topic, end=expected_offset)
    offsets = [r.offset for r in records]
    probe.expect(offsets == list(range(expected_offset)), "read offsets are not 0..n-1",
                 response=f"offsets {offsets[:30]}", expected=f"0..{expected_offset - 1}")
    for base, (count, prefix) in assigned.items():
        got = [r.value for r in records[base:base + count]]
        want = [b"%s-%d" % (prefix, i) for i in range(count)]
        probe.expect(got == want, f"records at {base} are not the batch acknowledged there",
                     response=str(got), expected=str(want))
    return f"{len(assigned)} batches from {writers} connections, offsets 0..{expected_offset - 1}"


@check("acks_0", "log", "protocol: Produce 'acks=0: the server will not send any response'")
def acks_0(probe: Probe):
    """A Produce with acks=0 gets no response (the next request's answer is the next frame), and
    its records are written."""
    topic = probe.create_topic("acks0")
    conn = probe.leader(topic)
    produced = conn.send(0, probe.produce_values(topic, 0, values_batch(b"a0", 3), acks=0))
    correlation_id = conn.send(18, {"client_software_name": "c", "client_software_version": "1"})
    payload = conn.kafka.receive_payload()
    (first,) = struct.unpack_from(">i", payload, 0)
    probe.expect(first == correlation_id, "the acks=0 Produce was answered" if first == produced
                 else f"an answer with correlation id {first} came first",
                 request=f"Produce acks=0 (correlation id {produced}), then ApiVersions "
                 f"({correlation_id})", response=f"first answer: correlation id {first}",
                 expected=f"the ApiVersions answer ({correlation_id}) first")
    records = probe.read_all(topic, end=3)
    probe.expect([r.value for r in records] == [b"a0-0", b"a0-1", b"a0-2"],
                 "the acks=0 records were not written", response=str(records),
                 expected="a0-0, a0-1, a0-2 at offsets 0..2")


@check("acks_1", "log", "protocol: Produce acks=1 (leader append) answers the base offset")
def acks_1(probe: Probe):
    """acks=1 answers NONE with the batch's base offset, and the records are readable there."""
    topic = probe.create_topic("acks1")
    first = probe.produce_ok(topic, values_batch(b"a", 2), acks=1)
    second = probe.produce_ok(topic, values_batch(b"b", 3), acks=1)
    probe.expect((first, second) == (0, 2), f"base offsets {first}, {second}",
                 expected="0 then 2")
    values = [r.value for r in probe.read_all(topic, end=5)]
    probe.expect(values == [b"a-0", b"a-1", b"b-0", b"b-1", b"b-2"], "records not as produced",
                 response=str(values), expected="a-0 a-1 b-0 b-1 b-2")


@check("acks_all_visible", "log",
       "Kafka docs 'acks=all': the leader answers once every in-sync replica has the record, "
       "i.e. the high watermark has passed it (KIP-101 / replication design)")
def acks_all_visible(probe: Probe):
    """An acks=all answer means the records are committed: right after it, the high watermark
    is past them (ListOffsets LATEST, read_uncommitted, answers the hw at once) and a consumer
    fetch returns them (20 rounds).

    The hw is read with ListOffsets, not from a fetch: a consumer fetch at an offset above the
    hw may wait in purgatory until the hw passes it (Kafka does, and so does kafkaref), so its
    answer would report an hw that replication reached while it waited. One record per round:
    LATEST after a multi-record batch is a check of its own (list_offsets), not this one's."""
    topic = probe.create_topic("acksall", configs={"min.insync.replicas": str(
        min(2, probe.replication_factor()))})
    conn = probe.leader(topic)
    for i in range(20):
        base = probe.produce_ok(topic, values_batch(b"r%d" % i, 1), acks=-1, conn=conn)
        latest = probe.list_offset(topic, LATEST, conn=conn)
        probe.expect(latest.error_code == ErrorCode.none and latest.offset >= base + 1,
                     f"round {i}: acks=all answered offset {base} but the hw (ListOffsets "
                     f"LATEST) is {latest.offset}", response=latest,
                     expected=f"hw >= {base + 1} once acknowledged")
        answer = probe.fetch(topic, base, max_wait_ms=1, conn=conn)
        values = [r.value for r in probe.records(answer) if r.offset >= base]
        probe.expect(values[:1] == [b"r%d-0" % i],
                     f"round {i}: acknowledged record not readable right after the ack",
                     response=answer, expected=f"record r{i}-0 at {base}")
    return f"20 acks=all rounds, replication factor {probe.replication_factor()}"


@check("min_insync_replicas", "log",
       "Kafka config min.insync.replicas; producer config acks=all; protocol error "
       "NOT_ENOUGH_REPLICAS (Kafka Partition.appendRecordsToLeader)", deadline_s=150.0,
       levels=FAULTED)
def min_insync_replicas(probe: Probe):
    """Once a replica has left the ISR so that it is smaller than min.insync.replicas, acks=all
    is refused with NOT_ENOUGH_REPLICAS while acks=1 is still accepted; once the replica is
    restarted and back in the ISR, acks=all is accepted again (needs --kill-cmd and
    --restart-cmd: Kafka's effective minimum is min(min.insync.replicas, replication factor),
    so a client alone cannot get the ISR below it)."""
    replica_faults(probe, "min.insync.replicas needs a broker that replicates",
                   "to take a replica out of the ISR")
    rf = probe.replication_factor()
    topic = probe.create_topic("minisr", replication_factor=rf,
                               configs={"min.insync.replicas": str(rf)})
    probe.produce_ok(topic, values_batch(b"before", 1), acks=-1)
    target = follower(probe, topic)
    inflict(probe, KILL, target)
    try:
        answers = acks_all_until(probe, topic, ErrorCode.not_enough_replicas, "after the kill")
        probe.produce_ok(topic, values_batch(b"one", 1), acks=1, conn=probe.leader(topic))
    finally:
        inflict(probe, RESTART, target)
        wait_serving(probe, target)
    # min.insync.replicas is the replication factor: an acks=all NONE means a full ISR again
    back = acks_all_until(probe, topic, ErrorCode.none, "after the restart", timeout_s=60.0)
    return (f"acks=all answers after killing broker {target.broker_id}: {answers}; after its "
            f"restart: {back}")


def follower(probe: Probe, topic: str) -> Target:
    """A replica of partition 0 that is not its leader."""
    meta = probe.wait_for_leaders(topic, 1).partitions[0]
    return target_of(probe, next(r for r in meta.replica_nodes if r != meta.leader_id))


@check("hw_waits_for_isr", "log", "Kafka replication design / KIP-101: the high watermark is "
       "the smallest log end offset of the ISR; replica.lag.time.max.ms", deadline_s=150.0,
       levels=FAULTED)
def hw_waits_for_isr(probe: Probe):
    """While a stopped follower is still in the ISR, the high watermark does not pass what that
    follower has: a record written after the stop (acks=1) is not readable before the ISR
    shrinks (needs --kill-cmd / --restart-cmd and a replicating broker)."""
    replica_faults(probe, "no follower to stop", "to stop a follower")
    topic = probe.create_topic("hwisr", replication_factor=probe.replication_factor())
    base = probe.produce_ok(topic, values_batch(b"in", 1), acks=-1)
    target = follower(probe, topic)
    inflict(probe, KILL, target)
    try:
        if not down(target.address):
            raise Skip(f"--kill-cmd left broker {target.broker_id} serving (it must stop the broker "
                       "named by CONFORM_BROKER_ID)")
        conn = probe.leader(topic)
        probe.produce_ok(topic, values_batch(b"after", 1), acks=1, conn=conn)
        answer = probe.fetch(topic, base + 1, max_wait_ms=1, conn=conn)
        visible = [r.offset for r in probe.records(answer) if r.offset > base]
        isr = probe.metadata([topic], conn=conn).topics[0].partitions[0].isr_nodes
        if target.broker_id not in isr:
            return (f"inconclusive: the ISR {list(isr)} had already dropped broker "
                    f"{target.broker_id}")
        probe.expect(not visible and answer.high_watermark <= base + 1,
                     f"offsets {visible} readable (hw {answer.high_watermark}) while stopped "
                     f"broker {target.broker_id} is still in the ISR {list(isr)}", response=answer,
                     expected=f"hw stays at {base + 1} until the ISR shrinks")
    finally:
        inflict(probe, RESTART, target)
        wait_serving(probe, target)
    return f"hw held at {base + 1} while broker {target.broker_id} was stopped and in the ISR"


def acks_all_until(probe: Probe, topic: str, wanted: ErrorCode, after: str,
                   timeout_s: float = 90.0) -> list[str]:
    """Produce acks=all until the broker answers `wanted`; the answers seen (the others must be
    retriable on the way: a leader moving, the ISR changing)."""
    deadline, answers = time.monotonic() + timeout_s, []
    retriable = {ErrorCode.not_leader_or_follower, ErrorCode.unknown_topic_or_partition,
                 ErrorCode.leader_not_available, ErrorCode.request_timed_out,
                 ErrorCode.not_enough_replicas_after_append, ErrorCode.none,
                 ErrorCode.not_enough_replicas} - {wanted}
    while time.monotonic() < deadline:
        try:
            conn = probe.leader(topic)
            answer = conn.call(0, probe.produce_values(topic, 0, values_batch(b"all", 1), -1,
                                                       timeout_ms=2000))
        except OSError:
            probe.forget_leaders()
            time.sleep(0.5)
            continue
        error = ErrorCode(int(answer.responses[0].partition_responses[0].error_code))
        if not answers or answers[-1] != error.name:
            answers.append(error.name)
        if error == wanted:
            return answers
        probe.expect(error in retriable, f"acks=all {after} answered {error.name}",
                     response=answer, expected=f"{wanted.name} once the ISR changed")
        if error != ErrorCode.none:
            probe.forget_leaders()
        time.sleep(0.2)
    raise probe.fail(f"no {wanted.name} within {timeout_s:.0f} s {after}",
                     response=f"answers {answers}", expected=wanted.name)


@check("acks_all_timeout", "log", "protocol: Produce timeout_ms ('the time to await a "
       "response'); Kafka DelayedProduce answers REQUEST_TIMED_OUT", deadline_s=150.0,
       levels=FAULTED)
def acks_all_timeout(probe: Probe):
    """An acks=all Produce that cannot complete (a stopped follower still in the ISR) is
    answered REQUEST_TIMED_OUT after its timeout_ms (400 ms), not held for ever (needs
    --kill-cmd / --restart-cmd and a replicating broker)."""
    replica_faults(probe, "every acks=all completes at once", "to stop a follower")
    topic = probe.create_topic("timeout", replication_factor=probe.replication_factor())
    probe.produce_ok(topic, values_batch(b"in", 1), acks=-1)
    target = follower(probe, topic)
    inflict(probe, KILL, target)
    try:
        conn = probe.leader(topic)
        started = time.monotonic()
        request = probe.produce_values(topic, 0, values_batch(b"t", 1), -1, timeout_ms=400)
        answer = conn.call(0, request).responses[0].partition_responses[0]
        elapsed = time.monotonic() - started
        isr = probe.metadata([topic], conn=conn).topics[0].partitions[0].isr_nodes
        if answer.error_code == ErrorCode.none:
            # Past its timeout a correct broker has already answered REQUEST_TIMED_OUT; a NONE
            # that late means the request waited until the ISR shrank.
            probe.expect(elapsed < 0.4, f"acks=all answered NONE after {elapsed * 1000:.0f} ms, "
                         "past its 400 ms timeout", response=answer,
                         expected="REQUEST_TIMED_OUT at about 400 ms")
            probe.expect(target.broker_id not in isr, f"acks=all completed while stopped broker "
                         f"{target.broker_id} is in the ISR {list(isr)}", response=answer,
                         expected="REQUEST_TIMED_OUT")
            return f"inconclusive: the ISR {list(isr)} dropped broker {target.broker_id} first"
        probe.expect_error(answer.error_code, ErrorCode.request_timed_out,
                           f"acks=all (timeout 400 ms) with broker {target.broker_id} stopped, answered "
                           f"after {elapsed * 1000:.0f} ms", answer)
        probe.expect(elapsed < 0.4 + 2.0, f"REQUEST_TIMED_OUT after {elapsed:.2f} s",
                     expected="about 400 ms")
    finally:
        inflict(probe, RESTART, target)
        wait_serving(probe, target)
    return f"REQUEST_TIMED_OUT after {elapsed * 1000:.0f} ms (timeout 400 ms)"


@check("hw_caps_reads", "log", "Kafka replication design: consumers read only up to the high "
       "watermark; KIP-101; hw never decreases for an observer of one leader")
def hw_caps_reads(probe: Probe):
    """A consumer fetch never returns a record at or past the high watermark it reports, and
    the hw one observer sees never goes down (acks=1 produce pipelined with fetches)."""
    topic = probe.create_topic("hw")
    conn = probe.leader(topic)
    observer = probe.connect(conn.address)
    last_hw, checked = 0, 0
    for i in range(40):
        produced = conn.send(0, probe.produce_values(topic, 0, values_batch(b"h%d" % i, 2),
                                                     acks=1))
        fetched = conn.send(1, probe.fetch_values(topic, 0, max(0, 2 * i - 1)))
        conn.receive(0, produced)
        for answer in (probe.fetch_partition(conn.receive(1, fetched)),
                       probe.fetch(topic, 0, conn=observer)):
            probe.expect_error(answer.error_code, ErrorCode.none, "Fetch", answer)
            above = [r.offset for r in probe.records(answer) if r.offset >= answer.high_watermark]
            probe.expect(not above, f"fetch returned offsets {above} at or past the hw "
                         f"{answer.high_watermark}", response=answer,
                         expected="only records below the high watermark")
            checked += 1
        hw = probe.fetch(topic, 0, conn=observer).high_watermark
        probe.expect(hw >= last_hw, f"the hw went down from {last_hw} to {hw}",
                     expected="a non-decreasing high watermark")
        last_hw = hw
    return f"{checked} fetch answers within the hw; hw rose to {last_hw}"


@check("offset_out_of_range", "log",
       "protocol: Fetch error OFFSET_OUT_OF_RANGE; Kafka consumer auto.offset.reset")
def offset_out_of_range(probe: Probe):
    """A fetch past the log end, and one below the log start, answer OFFSET_OUT_OF_RANGE; a
    fetch exactly at the log end answers NONE with no records."""
    topic = probe.create_topic("oor")
    probe.produce_ok(topic, values_batch(b"o", 5))
    for offset in (6, 1000):
        answer = probe.fetch(topic, offset)
        probe.expect_error(answer.error_code, ErrorCode.offset_out_of_range,
                           f"Fetch at {offset} (log end 5)", answer)
    answer = probe.fetch(topic, -3)
    probe.expect_error(answer.error_code, ErrorCode.offset_out_of_range,
                       "Fetch at -3 (log start 0)", answer)
    answer = probe.fetch(topic, 5)
    probe.expect_error(answer.error_code, ErrorCode.none, "Fetch at the log end 5", answer)
    probe.expect(not probe.records(answer), "records returned at the log end", response=answer,
                 expected="no records")


@check("list_offsets", "log",
       "KIP-79 (ListOffsets by timestamp); protocol: ListOffsets -2 earliest, -1 latest")
def list_offsets(probe: Probe):
    """ListOffsets EARLIEST is the log start, LATEST the high watermark, and a timestamp T gives
    the first offset whose record timestamp is >= T (inside a batch too), or -1 past the end."""
    topic = probe.create_topic("listoff")
    base = now_ms() - 60_000
    batches = [[base + 0, base + 100, base + 200], [base + 1000, base + 1100],
               [base + 2000, base + 2100]]
    for i, stamps in enumerate(batches):
        probe.produce_ok(topic, batch_now(
            [(None, b"t%d-%d" % (i, j), (), ts) for j, ts in enumerate(stamps)],
            base_timestamp=stamps[0]))
    earliest, latest = probe.offset_of(topic, EARLIEST), probe.offset_of(topic, LATEST)
    probe.soft(earliest == 0, f"EARLIEST is {earliest}", expected="0")
    probe.soft(latest == 7, f"LATEST is {latest} after 7 records (last batch of 2)",
               response=probe.exchanges[-1].response, expected="7, the log end offset")
    cases = {base - 5000: 0, base: 0, base + 100: 1, base + 150: 2, base + 201: 3,
             base + 1100: 4, base + 1500: 5, base + 2000: 5, base + 2050: 6, base + 9000: -1}
    wrong = {}
    for target, want in cases.items():
        answer = probe.list_offset(topic, target)
        got = answer.offset if answer.error_code == ErrorCode.none else ErrorCode(
            int(answer.error_code)).name
        if got != want:
            wrong[f"base+{target - base}"] = (got, want)
    probe.soft(not wrong, f"ListOffsets by timestamp wrong for {len(wrong)} targets",
                 response=f"(got, expected) per target: {wrong}",
                 expected="first offset with timestamp >= target; -1 past the last")


ZSTD_PRODUCE = 7  # the first Produce version that may carry zstd batches (KIP-110)


def _codec_check(codec: Compression):
    @check(f"compression_{codec.name}", "log",
           "KIP-98 record batch v2 attributes bits 0-2; KIP-110 (zstd)")
    def compression(probe: Probe):
        values = [b"%s-%d-" % (codec.name.encode(), i) + bytes(i % 7) * 30 for i in range(50)]
        topic = probe.create_topic(f"codec-{codec.name}")
        batch = batch_now([(b"k%d" % i, v, (("h", b"%d" % i),), None)
                             for i, v in enumerate(values)], compression=codec)
        # zstd only from Produce v7 (KIP-110): below, Kafka refuses it
        version = max(probe.version(0), ZSTD_PRODUCE) if codec == Compression.zstd else None
        answer = probe.produce(topic, batch, version=version)
        if answer.error_code == ErrorCode.unsupported_compression_type:
            raise probe.fail(f"{codec.name} refused as UNSUPPORTED_COMPRESSION_TYPE",
                             response=answer, expected="NONE")
        probe.expect_error(answer.error_code, ErrorCode.none, f"Produce {codec.name}", answer)
        records = probe.read_all(topic)
        probe.expect([r.value for r in records] == values and [r.key for r in records] == [
            b"k%d" % i for i in range(50)], f"{codec.name} records changed on the round trip",
            response=str([r.value for r in records][:5]), expected=str(values[:5]))

    compression.__doc__ = (f"A {codec.name}-compressed batch of 50 records is accepted and "
                           "read back with the same keys, values and headers.")
    return compression


CODEC_CHECKS = [_codec_check(c) for c in Compression if c != Compression.none]


@check("headers_and_timestamps", "log",
       "KIP-82 (record headers); KIP-32 (CreateTime timestamps kept)")
def headers_and_timestamps(probe: Probe):
    """Record headers (repeated keys, null and empty values, UTF-8 keys) and each record's
    CreateTime timestamp come back exactly as produced, as do null keys and empty values."""
    topic = probe.create_topic("headers")
    base = now_ms() - 10_000
    records = [
        (None, b"", (("a", b"1"), ("a", b"2")), base),
        (b"k", None, (("n", None), ("e", b"")), base + 7),
        (b"", b"v", (("\u00fcml\u00e4ut", b"\x00\xff"),), base - 3),
        (b"k2", b"v2", (), base + 1_000_000),
    ]
    probe.produce_ok(topic, batch_now(records, base_timestamp=base))
    got = [(r.key, r.value, tuple(r.headers), r.timestamp) for r in probe.read_all(topic)]
    want = [(k, v, tuple(h), t) for k, v, h, t in records]
    probe.expect(got == want, "keys, values, headers or timestamps changed",
                 response=str(got), expected=str(want))


# Topic configs at the edge of the range Kafka's LogConfig validates (ConfigDef atLeast /
# between): (name, a value at the bound, accepted; a value just past it, INVALID_CONFIG).
CONFIG_EDGES = (
    ("segment.ms", "1", "0"), ("segment.jitter.ms", "0", "-1"),
    ("segment.index.bytes", "4", "3"), ("flush.messages", "1", "0"), ("flush.ms", "0", "-1"),
    ("retention.ms", "-1", "-2"), ("max.message.bytes", "0", "-1"),
    ("index.interval.bytes", "0", "-1"), ("delete.retention.ms", "0", "-1"),
    ("min.compaction.lag.ms", "0", "-1"), ("max.compaction.lag.ms", "1", "0"),
    ("file.delete.delay.ms", "0", "-1"), ("min.insync.replicas", "1", "0"),
    ("message.timestamp.before.max.ms", "0", "-1"), ("message.timestamp.after.max.ms", "0", "-1"),
    ("min.cleanable.dirty.ratio", "1", "1.5"), ("compression.gzip.level", "9", "10"),
    ("compression.lz4.level", "17", "18"), ("compression.zstd.level", "22", "23"),
)


@check("create_topics_validation", "log",
       "protocol: CreateTopics errors INVALID_CONFIG, INVALID_REPLICA_ASSIGNMENT, "
       "TOPIC_ALREADY_EXISTS; KIP-4; Kafka LogConfig's validators (the configs' ranges)")
def create_topics_validation(probe: Probe):
    """CreateTopics refuses an unknown config with INVALID_CONFIG and an existing name with
    TOPIC_ALREADY_EXISTS, and an explicit replica assignment is honoured as given. Topic configs
    are held to Kafka's ranges: a value at a bound passes validation (validate_only), one just
    past it is INVALID_CONFIG."""
    conn = probe.connect()

    def create(label, validate_only=False, **topic):
        request = {"topics": [{"name": probe.name(label), "num_partitions": -1,
                               "replication_factor": -1, "assignments": [], "configs": [],
                               **topic}], "timeout": 10_000, "validate_only": validate_only}
        return request, conn.call(19, request).topics[0]

    request, answer = create("badcfg", num_partitions=1, replication_factor=1,
                             configs=[{"name": "no.such.config", "value": "1"}])
    probe.expect_error(answer.error_code, ErrorCode.invalid_config,
                       "CreateTopics with config no.such.config", answer, soft=True)
    for config, at_bound, past in CONFIG_EDGES:
        for value, expected in ((at_bound, ErrorCode.none), (past, ErrorCode.invalid_config)):
            request, answer = create("range", validate_only=True, num_partitions=1,
                                     replication_factor=1,
                                     configs=[{"name": config, "value": value}])
            probe.expect_error(answer.error_code, expected,
                               f"CreateTopics (validate_only) with {config}={value}", answer,
                               soft=True)
    name = probe.create_topic("twice")
    request, answer = create("twice", num_partitions=1, replication_factor=1)
    probe.expect_error(answer.error_code, ErrorCode.topic_already_exists,
                       f"CreateTopics of existing {name}", answer, soft=True)
    brokers = sorted(b.node_id for b in probe.metadata([]).brokers)
    rotated = brokers[1:] + brokers[:1]
    assignment = [{"partition_index": 0, "broker_ids": rotated},
                  {"partition_index": 1, "broker_ids": list(reversed(brokers))}]
    request, answer = create("assigned", assignments=assignment)
    probe.expect_error(answer.error_code, ErrorCode.none, "CreateTopics with assignments",
                       answer)
    meta = probe.wait_for_leaders(probe.name("assigned"), None)
    replicas = {p.partition_index: list(p.replica_nodes) for p in meta.partitions}
    probe.expect(replicas == {0: rotated, 1: list(reversed(brokers))},
                 "the replica assignment was not honoured", request=request, response=meta,
                 expected=f"{{0: {rotated}, 1: {list(reversed(brokers))}}}")
