"""Checks of the partition log's storage as clients see it: segment rolls lose nothing, and a
write torn by a power loss is cut away by recovery (the tear through the user's --tear-cmd)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import check
from kafkaref.chaos.conform.faults import (
    KILL,
    RESTART,
    TEAR,
    down,
    inflict,
    needed_faults,
    target_of,
    wait_serving,
)
from kafkaref.chaos.conform.probe import Probe, batch_now
from kafkaref.impl.protocol.list_offsets import EARLIEST

# segment.bytes the check asks for: a small one first (Kafka 3.x accepts anything >= 14), then
# Kafka 4.0's minimum (1 MiB, KIP-1030), which every Kafka since 4.0 requires.
SEGMENT_BYTES_TRIED = (16 * 1024, 1024 * 1024)
SEGMENTS_CROSSED = 3.5  # produce this many segments' worth of batches
BATCHES_PER_SEGMENT = 16
RECORDS_PER_BATCH = 4


def _create_with_segment_bytes(probe: Probe, label: str) -> tuple[str, int, list[str]]:
    """A one-replica topic with the smallest segment.bytes of SEGMENT_BYTES_TRIED the broker
    accepts: (topic, segment.bytes, notes on the sizes it refused)."""
    notes = []
    for attempt, size in enumerate(SEGMENT_BYTES_TRIED):
        name = probe.name(f"{label}{attempt}")
        request = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                               "assignments": [], "configs": [
                                   {"name": "segment.bytes", "value": str(size)}]}],
                   "timeout": int(probe.timeout_s * 1000), "validate_only": False}
        conn = probe.connect()
        try:
            answer = conn.call(19, request).topics[0]
        finally:
            conn.close()
        if answer.error_code == ErrorCode.none:
            probe.wait_for_leaders(name, 1)
            return name, size, notes
        code = ErrorCode(int(answer.error_code))
        notes.append(f"segment.bytes={size} refused with {code.name} "
                     f"({answer.error_message or 'no message'})")
        probe.expect(code == ErrorCode.invalid_config, notes[-1], request=request,
                     response=answer, expected="NONE, or INVALID_CONFIG for a size below the "
                     "broker's minimum")
    raise probe.fail(f"every segment.bytes tried was refused: {'; '.join(notes)}",
                     expected=f"segment.bytes={SEGMENT_BYTES_TRIED[-1]} (Kafka 4.0's minimum) "
                     "accepted")


def _value(batch: int, record: int, size: int) -> bytes:
    head = b"b%d-r%d|" % (batch, record)
    return head + b"." * max(0, size - len(head))


@check("segment_roll", "storage", "Kafka topic config segment.bytes (LogConfig; KIP-1030 sets "
       "its minimum to 1 MiB in Kafka 4.0); Kafka log: a segment rolls before an append that "
       "would exceed it (LogSegment.shouldRoll), and offsets are dense across segments",
       deadline_s=90.0)
def segment_roll(probe: Probe):
    """A topic created with a small segment.bytes (16 KiB; the broker's minimum, 1 MiB in Kafka
    4.0, when it refuses that with INVALID_CONFIG) takes 3.5 segments' worth of acknowledged
    batches: every acknowledged record is read back at the offset it was acknowledged at, and
    the offsets are dense, across every segment roll.

    Rolls are not visible through the protocol; the check makes them happen on a broker that
    honours segment.bytes and verifies what a client sees across them."""
    topic, size, notes = _create_with_segment_bytes(probe, "roll")
    batch_bytes = size // BATCHES_PER_SEGMENT
    record_bytes = batch_bytes // RECORDS_PER_BATCH
    batches = int(SEGMENTS_CROSSED * BATCHES_PER_SEGMENT)
    conn = probe.leader(topic)
    expected: dict[int, bytes] = {}
    for b in range(batches):
        values = [_value(b, r, record_bytes) for r in range(RECORDS_PER_BATCH)]
        base = probe.produce_ok(topic, batch_now([(None, v, (), None) for v in values]),
                                acks=-1, conn=conn)
        probe.expect(base == b * RECORDS_PER_BATCH, f"batch {b} acknowledged at offset {base}",
                     expected=f"{b * RECORDS_PER_BATCH} (offsets dense, one replica)")
        expected.update((base + r, v) for r, v in enumerate(values))
    end = len(expected)  # (the log end by ListOffsets is list_offsets' business, not this)
    records = probe.read_all(topic, end=end)
    offsets = [r.offset for r in records]
    missing = sorted(set(expected) - set(offsets))
    probe.expect(offsets == list(range(end)),
                 f"read offsets are not 0..{end - 1}: {len(missing)} acknowledged offsets "
                 f"missing (first {missing[:8]})" + (f"; {'; '.join(notes)}" if notes else ""),
                 response=f"offsets read: {offsets[:12]} ... ({len(offsets)})",
                 expected=f"0..{end - 1}, every acknowledged record")
    wrong = [r.offset for r in records if r.value != expected[r.offset]]
    probe.expect(not wrong, f"records at offsets {wrong[:8]} are not the ones acknowledged "
                 "there", expected="each record at the offset its batch was acknowledged at")
    used = f"segment.bytes={size}" + (f" ({'; '.join(notes)})" if notes else "")
    return (f"{used}: {batches} batches of {batch_bytes} bytes ({end} records, about "
            f"{SEGMENTS_CROSSED} segments) read back dense")


TORN_BATCHES, TORN_RECORDS, AFTER_BATCHES = 10, 3, 5


@check("torn_tail_recovery", "storage", "Kafka LogLoader / LogSegment.recover: on an unclean "
       "start the log is scanned and truncated at the first invalid or torn batch; "
       "producer acks=all durability of what is acknowledged afterwards", deadline_s=150.0)
def torn_tail_recovery(probe: Probe):
    """A one-replica partition whose last write was torn by a power loss (--tear-cmd, run while
    its broker is stopped after --kill-cmd) recovers to a valid log: after --restart-cmd every
    batch read from the log start passes its CRC, offsets are dense, and records acknowledged
    after the restart are read back at their offsets. Records lost to the tear itself are
    allowed (they were never fsynced); the records kept are a prefix of those acknowledged."""
    needed_faults(probe, {KILL, RESTART, TEAR}, "to tear a stopped broker's last write (a "
                  "power loss in the middle of a write, which a SIGKILL between requests "
                  "does not leave)")
    topic = probe.create_topic("torn", replication_factor=1)
    acked = []
    for b in range(TORN_BATCHES):
        values = [b"t%d-%d" % (b, r) for r in range(TORN_RECORDS)]
        probe.produce_ok(topic, batch_now([(None, v, (), None) for v in values]), acks=-1)
        acked.extend(values)
    leader = probe.wait_for_leaders(topic, 1).partitions[0].leader_id
    target = target_of(probe, leader)
    try:
        inflict(probe, KILL, target)
        probe.expect(down(target.address), f"broker {leader} still accepts connections after "
                     "it was killed", expected="the broker stopped")
        inflict(probe, TEAR, target, topic=topic, partition=0)
    finally:
        inflict(probe, RESTART, target)
        wait_serving(probe, target)
    probe.wait_for_leaders(topic, 1, timeout_s=60)
    # The log end after recovery is where the first batch produced after the restart lands (a
    # ListOffsets first could meet the leader between its fencing and its election again).
    after, kept = [], None
    for b in range(AFTER_BATCHES):
        values = [b"n%d-%d" % (b, r) for r in range(TORN_RECORDS)]
        base = probe.produce_retrying(topic, batch_now([(None, v, (), None) for v in values]))
        if kept is None:
            kept = base
            probe.expect(kept <= len(acked), f"after recovery the log ends at {kept}, past the "
                         f"{len(acked)} records written", expected=f"at most {len(acked)}")
        probe.expect(base == kept + len(after), f"a batch produced after the restart was "
                     f"acknowledged at {base}", expected=f"{kept + len(after)} (dense)")
        after.extend(values)
    start = probe.offset_of(topic, EARLIEST)
    end = kept + len(after)
    records = probe.read_all(topic, start=start, end=end)  # each batch decoded: CRC checked
    offsets = [r.offset for r in records]
    probe.expect(offsets == list(range(start, end)), f"offsets read from the log start {start} "
                 f"are not dense up to {end}", response=f"{offsets[:12]} ... ({len(offsets)})",
                 expected=f"{start}..{end - 1}")
    values = [r.value for r in records]
    probe.expect(values[kept - start:] == after, "the records acknowledged after the restart "
                 "are not read back at their offsets", response=str(values[kept - start:][:6]),
                 expected=str(after[:6]))
    probe.expect(values[:kept - start] == acked[start:kept], "the records kept by recovery "
                 "are not those acknowledged at their offsets",
                 response=str(values[:6]), expected=str(acked[start:start + 6]))
    return (f"{len(acked)} records written, {kept} kept by recovery after the tear "
            f"({len(acked) - kept} lost with the torn write), {len(after)} acknowledged after "
            "the restart, all read back with valid CRCs")
