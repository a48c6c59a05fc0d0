"""Record timestamps a leader refuses (Kafka 4's LogValidator.validateTimestamp, KIP-937) and
producer batches that set the LogAppendTime bit themselves (docs/divergences.md, found and
fixed: `timestamp-bounds`, `producer-log-append-time`):

- on a CreateTime topic a record whose timestamp is more than message.timestamp.after.max.ms
  (default one hour) ahead of the leader's wall clock, or before.max.ms (default Long.MAX)
  behind, is refused: INVALID_TIMESTAMP, its index in the record errors, nothing appended; a
  record without a timestamp (-1) is not checked; a LogAppendTime topic checks nothing;
- a compacted topic names its keyless records with key errors beside them (a record has one
  error, its key's first), and the partition fails INVALID_TIMESTAMP;
- a producer batch with the LogAppendTime bit is refused record by record on a LogAppendTime
  topic, and written as CreateTime on the others (bit cleared, MaxTimestamp kept, CRC
  recomputed), its records bounded by that MaxTimestamp;
- the fast verdict of validate_batch (from the header's base timestamp and the widths of the
  deltas, records/timestamps.py) equals the record-by-record one on every batch.
"""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import PartitionConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition
from kafkaref.impl.core.topic_rules import SET
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.crc import ATTRIBUTES_POS, CRC_POS, compute_crc
from kafkaref.impl.protocol.records import (
    LOG_APPEND_TIME_FLAG,
    build_batch,
    check_batch,
    decode_batch,
    out_of_bounds,
    validate_batch,
)
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import alter_incremental, call, core_brokers

NOW = 1_800_000_000_000  # the leader's wall clock
HOUR = 3_600_000
MAX_TIMESTAMP_POS = 35
NO_KEY = "Compacted topic cannot accept message without key in topic partition t-0"


def batch(stamps, keys=None, **options) -> bytes:
    keys = keys or [b"k"] * len(stamps)
    items = zip(keys, stamps, strict=True)
    return build_batch([(k, b"v%d" % i, (), ts) for i, (k, ts) in enumerate(items)], **options)


def with_log_append_time_bit(data: bytes, max_timestamp: int | None = None) -> bytes:
    """The batch as a producer that set the timestamp-type bit itself would send it."""
    out = bytearray(data)
    attributes = struct.unpack_from(">h", out, ATTRIBUTES_POS)[0]
    struct.pack_into(">h", out, ATTRIBUTES_POS, attributes | LOG_APPEND_TIME_FLAG)
    if max_timestamp is not None:
        struct.pack_into(">q", out, MAX_TIMESTAMP_POS, max_timestamp)
    struct.pack_into(">I", out, CRC_POS, compute_crc(out))
    return bytes(out)


def leader(**config) -> tuple[Partition, MemoryLog]:
    log = MemoryLog(wall_ms=lambda: NOW)
    partition = Partition("t", 0, 1, log, clock=lambda: 0, config=PartitionConfig(**config))
    partition.make_leader(1, {1}, (1,))
    return partition, log


# -- the bounds ---------------------------------------------------------------------------------
def test_a_record_more_than_an_hour_ahead_is_refused_by_its_index():
    p, _ = leader()
    result = p.append_as_leader(batch([NOW, NOW + HOUR + 1, NOW + HOUR, NOW + 2 * HOUR]), 1)
    assert result.error == ErrorCode.invalid_timestamp
    assert [i for i, _ in result.record_errors] == [1, 3]
    assert p.log_end_offset == 0  # nothing of the batch appended
    assert p.append_as_leader(batch([NOW + HOUR, 1000, -1]), 1).error == ErrorCode.none


def test_before_max_ms_bounds_old_timestamps_and_a_record_without_one_is_not_checked():
    p, _ = leader(timestamp_max_ms=(1000, HOUR))
    result = p.append_as_leader(batch([NOW - 1000, NOW - 1001, -1]), 1)
    assert (result.error, [i for i, _ in result.record_errors]) == (
        ErrorCode.invalid_timestamp, [1])
    assert p.append_as_leader(batch([NOW - 1000, -1, NOW]), 1).error == ErrorCode.none


def test_a_log_append_time_topic_checks_no_timestamp():
    p, _ = leader(log_append_time=True)
    assert p.append_as_leader(batch([NOW + 10 * HOUR]), 1).error == ErrorCode.none


@pytest.mark.parametrize("compression", list(Compression))
def test_compressed_batches_are_checked_too(compression):
    p, _ = leader()
    result = p.append_as_leader(batch([NOW, NOW + 5 * HOUR], compression=compression), 1)
    assert (result.error, [i for i, _ in result.record_errors]) == (
        ErrorCode.invalid_timestamp, [1])


def test_a_compacted_topic_names_keys_first_and_fails_on_the_timestamps():
    p, _ = leader(compacted=True)
    data = batch([NOW + 2 * HOUR, NOW + 2 * HOUR, NOW, NOW], keys=[None, b"a", None, b"b"])
    result = p.append_as_leader(data, 1)
    assert result.error == ErrorCode.invalid_timestamp
    assert [i for i, _ in result.record_errors] == [0, 1, 2]
    assert result.record_errors[0][1] == result.record_errors[2][1] == NO_KEY
    keyless_only = p.append_as_leader(batch([NOW, NOW], keys=[None, b"a"]), 1)
    assert (keyless_only.error, keyless_only.record_errors) == (
        ErrorCode.invalid_record, ((0, NO_KEY),))


def test_a_retried_idempotent_batch_out_of_bounds_is_refused_again_not_a_duplicate():
    p, _ = leader()
    good = batch([NOW], producer_id=7, producer_epoch=0, base_sequence=0)
    assert p.append_as_leader(good, 1).error == ErrorCode.none
    late = batch([NOW + 2 * HOUR], producer_id=7, producer_epoch=0, base_sequence=0)
    assert p.append_as_leader(late, 1).error == ErrorCode.invalid_timestamp


# -- the LogAppendTime bit set by a producer ----------------------------------------------------
def test_a_log_append_time_topic_refuses_a_producer_batch_with_the_bit_record_by_record():
    p, _ = leader(log_append_time=True)
    result = p.append_as_leader(with_log_append_time_bit(batch([1000, 1001, 1002])), 1)
    assert result.error == ErrorCode.invalid_timestamp
    assert [i for i, _ in result.record_errors] == [0, 1, 2]
    assert "Producer should not set timestamp type to LogAppendTime" in result.record_errors[0][1]
    assert p.log_end_offset == 0


@pytest.mark.parametrize("compression", [Compression.none, Compression.gzip])
def test_a_create_time_topic_writes_a_producer_batch_with_the_bit_as_create_time(compression):
    p, log = leader()
    sent = with_log_append_time_bit(batch([1000, 1005, 1002], compression=compression))
    result = p.append_as_leader(sent, 1)
    assert (result.error, result.log_append_time) == (ErrorCode.none, -1)
    ((header, raw),) = log.batches()
    assert not header.is_log_append_time and header.max_timestamp == 1005
    assert check_batch(raw) == ErrorCode.none  # the CRC was recomputed
    assert bytes(raw)[61:] == sent[61:]  # the records as sent
    assert [r.timestamp for r in decode_batch(raw).records] == [1000, 1005, 1002]


def test_a_producer_batch_with_the_bit_is_bounded_by_its_max_timestamp():
    p, _ = leader()
    for max_timestamp in (NOW + 2 * HOUR, -1):  # out of bounds; no timestamp, so the bit counts
        result = p.append_as_leader(with_log_append_time_bit(batch([NOW, NOW]), max_timestamp), 1)
        assert (result.error, [i for i, _ in result.record_errors]) == (
            ErrorCode.invalid_timestamp, [0, 1])
    # the records' own timestamps do not count: each reads MaxTimestamp
    sent = with_log_append_time_bit(batch([NOW + 9 * HOUR, 5]), max_timestamp=NOW)
    assert p.append_as_leader(sent, 1).error == ErrorCode.none


# -- the fast verdict ---------------------------------------------------------------------------
deltas = st.one_of(st.integers(-70, 70), st.integers(-(1 << 22), 1 << 22),
                   st.integers(-(1 << 40), 1 << 40), st.just(-NOW - 1))


@settings(max_examples=300)
@given(base=st.sampled_from([NOW, NOW - HOUR, NOW + HOUR - 100, NOW + HOUR + 1, 0, 1000]),
       offsets=st.lists(deltas, min_size=1, max_size=40),
       before=st.sampled_from([2**63 - 1, HOUR, 10, 0]),
       after=st.sampled_from([HOUR, 2**63 - 1, 100, 0]),
       compression=st.sampled_from([Compression.none, Compression.lz4]),
       stamped=st.booleans())
def test_the_fast_verdict_is_the_record_by_record_one(base, offsets, before, after, compression,
                                                      stamped):
    data = batch([base + d for d in offsets], compression=compression, base_timestamp=base)
    if stamped:
        data = with_log_append_time_bit(data)
    bounds = (NOW - before, NOW + after)
    records = decode_batch(data).records
    if stamped:
        ts = records[0].timestamp  # MaxTimestamp, every record's
        refused = ts == -1 or not bounds[0] <= ts <= bounds[1]
    else:
        refused = any(r.timestamp != -1 and not bounds[0] <= r.timestamp <= bounds[1]
                      for r in records)
    assert validate_batch(data, timestamp_bounds=bounds) == (
        ErrorCode.invalid_timestamp if refused else ErrorCode.none)
    assert bool(out_of_bounds(data, bounds)) == refused
    assert validate_batch(data) == ErrorCode.none  # no bounds: no timestamp check


# -- the configs, per topic ---------------------------------------------------------------------
def produce(broker, data, name="t") -> int:
    body = call(broker, 0, 8, {"acks": 1, "timeout": 1000, "transactional_id": None,
                               "topic_data": [{"name": name, "partition_data": [
                                   {"index": 0, "records": data}]}]})
    answer = body.responses[0].partition_responses[0]
    return answer.error_code, [e.batch_index for e in answer.record_errors]


def test_the_configs_are_kafka_4s_and_act_per_topic_from_the_next_append():
    wall = ManualClock(NOW)
    (b,) = core_brokers(1, log_factory=lambda key: MemoryLog(wall_ms=wall))
    body = call(b, 19, 7, {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1,
                                       "assignments": [], "configs": []}],
                           "timeout": 5000, "validate_only": False})
    assert body.topics[0].error_code == ErrorCode.none
    described = call(b, 32, 1, {"resources": [{"resource_type": 2, "resource_name": "t",
                                               "configuration_keys": None}],
                                "include_synonyms": True})
    configs = {c.name: c for c in described.results[0].configs}
    assert configs["message.timestamp.after.max.ms"].value == "3600000"
    assert configs["message.timestamp.before.max.ms"].value == str(2**63 - 1)
    far = batch([NOW + 2 * HOUR])
    assert produce(b, far) == (ErrorCode.invalid_timestamp, [0])
    assert alter_incremental(b, "t", [("message.timestamp.after.max.ms", SET, str(3 * HOUR))]) == (
        ErrorCode.none)
    assert produce(b, far) == (ErrorCode.none, [])
    assert alter_incremental(b, "t", [("message.timestamp.after.max.ms", SET, "-1")]) == (
        ErrorCode.invalid_config)
