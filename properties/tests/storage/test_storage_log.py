"""impl/storage unit properties: layout, index vs scan, rolls, reads, sendfile, checkpoints, epoch
cache, flush policy, retention, recovery."""

import os
import socket
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol import crc
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import (
    INT32_MAX,
    build_batch,
    check_batch,
    parse_header,
    split_batches,
    stamped,
)
from kafkaref.impl.storage import LeaderEpochCache, Log, LogConfig, checkpoint, segment
from kafkaref.impl.storage.index import OffsetIndex
from kafkaref.impl.storage.log import CHECKPOINT_FILE, CLEAN_SHUTDOWN_FILE
from kafkaref.properties.clock import ManualClock


def batch(count=1, value_bytes=50, timestamp=1_000, codec=Compression.none) -> bytes:
    return build_batch([(b"k", b"v" * value_bytes, (), timestamp)] * count, compression=codec)


def fill(log: Log, batches: int, epoch: int = 0, **kwargs) -> list[bytes]:
    for _ in range(batches):
        assert log.append_as_leader(batch(**kwargs), epoch).error == ErrorCode.none
    return [raw for _, raw in log.iter_batches()]


def open_log(path, clock, **config) -> Log:
    return Log(str(path), LogConfig(**config), clock_ms=clock)


# -- layout and appends --------------------------------------------------------------------------


def test_segment_files_are_named_by_twenty_digit_base_offset(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=500)
    fill(log, 12)
    log.close()
    names = sorted(os.listdir(tmp_path))
    logs = [n for n in names if n.endswith(".log")]
    assert logs[0] == "00000000000000000000.log" and len(logs) > 1
    for name in logs:
        stem = name[:-4]
        assert len(stem) == 20 and stem.isdigit()
        assert f"{stem}.index" in names and f"{stem}.timeindex" in names
    assert CLEAN_SHUTDOWN_FILE in names and CHECKPOINT_FILE in names


def test_append_assigns_offsets_and_stamps_epoch_outside_the_crc(tmp_path, clock):
    log = open_log(tmp_path, clock)
    original = batch(count=3)
    info = log.append_as_leader(original, 7)
    assert (info.error, info.first_offset, info.last_offset) == (ErrorCode.none, 0, 2)
    info = log.append_as_leader(original + batch(count=2), 7)
    assert (info.first_offset, info.last_offset, info.batches) == (3, 7, 2)
    stored = [raw for _, raw in log.iter_batches()]
    assert stored[1] == bytes(stamped(original, 3, 7))
    assert all(check_batch(raw) == ErrorCode.none for raw in stored)
    assert stored[1][21:] == original[21:]  # CRC-covered bytes untouched
    assert log.epochs.entries == [(7, 0)]
    assert log.log_end_offset == 8


@pytest.mark.parametrize("validate_records", [True, False])
def test_leader_append_paths_store_identical_bytes(tmp_path, clock, validate_records):
    log = open_log(tmp_path, clock, validate_records=validate_records)
    batches = [batch(count=n, codec=Compression.lz4 if n % 2 else Compression.none)
               for n in (1, 2, 3)]
    for data in batches:
        assert log.append_as_leader(data, 4).error == ErrorCode.none
    assert log.append_as_leader(batches[0] + batches[1], 5).first_offset == 6
    stored = [raw for _, raw in log.iter_batches()]
    expected = [stamped(batches[0], 0, 4), stamped(batches[1], 1, 4), stamped(batches[2], 3, 4),
                stamped(batches[0], 6, 5), stamped(batches[1], 7, 5)]
    assert stored == [bytes(e) for e in expected]
    assert not log.verify()


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), ErrorCode.corrupt_message),
        (lambda b: b[:30], ErrorCode.corrupt_message),
        (lambda b: bytes(stamped(b, 5, 0)), ErrorCode.invalid_record),
    ],
)
def test_bad_producer_batches_are_refused_with_error_codes(tmp_path, clock, mutate, expected):
    log = open_log(tmp_path, clock)
    fill(log, 2)
    assert log.append_as_leader(b"", 0).error == ErrorCode.invalid_record
    info = log.append_as_leader(batch() + mutate(batch()), 0)
    assert info.error == expected
    assert log.log_end_offset == 2  # nothing of the request was written


def test_follower_append_checks_crc_and_offsets(tmp_path, clock):
    log = open_log(tmp_path, clock)
    good = stamped(batch(count=2), 0, 3)
    assert log.append(bytes(good)).error == ErrorCode.none
    bad = bytearray(stamped(batch(), 2, 3))
    bad[-1] ^= 0x10
    assert log.append(bytes(bad)).error == ErrorCode.corrupt_message
    with pytest.raises(ValueError):
        log.append(bytes(stamped(batch(), 1, 3)))
    assert log.append(bytes(stamped(batch(), 10, 4))).first_offset == 10  # gaps are allowed
    assert log.log_end_offset == 11 and log.epochs.entries == [(3, 0), (4, 10)]


# -- index ------------------------------------------------------------------------------------


@given(st.lists(st.tuples(st.integers(1, 50), st.integers(1, 500)), max_size=30),
       st.integers(0, 2000))
def test_index_lookup_matches_a_linear_scan(steps, target):
    index = OffsetIndex("/nonexistent", 100, 1000)
    offset, position = 100, 0
    for offset_step, position_step in steps:
        offset += offset_step
        position += position_step
        index.append(offset, position)
    target += 100
    naive = (100, 0)
    for rel, pos in zip(index.relative_offsets, index.positions, strict=True):
        if 100 + rel <= target:
            naive = (100 + rel, pos)
    assert index.lookup(target) == naive


def test_sparse_index_entry_every_interval(tmp_path, clock):
    log = open_log(tmp_path, clock, index_interval_bytes=1000)
    fill(log, 40, value_bytes=200)  # ~270-byte batches
    index = log.active_segment.index
    assert 8 <= len(index) <= 12
    gaps = [b - a for a, b in zip(index.positions, index.positions[1:], strict=False)]
    assert all(1000 < gap <= 1400 for gap in gaps)


@settings(max_examples=30)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=40), st.integers(0, 200),
       st.integers(50, 3000))
def test_reads_by_offset_match_a_naive_scan(tmp_path_factory, counts, where, interval):
    path = tmp_path_factory.mktemp("reads")
    log = Log(str(path), LogConfig(index_interval_bytes=interval, segment_bytes=2500),
              clock_ms=ManualClock())
    for count in counts:
        log.append_as_leader(batch(count=count, value_bytes=30), 0)
    headers = [h for h, _ in log.iter_batches()]
    offset = where % (log.log_end_offset + 1)
    data = log.read(offset, 1)  # min_one: exactly the batch holding offset
    holding = [h for h in headers if h.last_offset >= offset]
    if holding:
        assert parse_header(data).base_offset == holding[0].base_offset
    else:
        assert data == b""
    log.close()


# -- rolls ---------------------------------------------------------------------------------------


def test_roll_on_size_keeps_the_triggering_batch(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=600)
    stored = fill(log, 13)  # 119-byte batches: 5 per segment
    assert log.segment_bases == (0, 5, 10)
    assert [h.base_offset for h, _ in log.iter_batches()] == list(range(13))
    assert all(s.size <= 600 for s in log.segments)
    assert len(stored) == 13


def test_roll_on_time_full_index_and_offset_overflow(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_ms=100, segment_index_bytes=16,
                   index_interval_bytes=100)
    fill(log, 2)
    clock.now_ms = 100
    fill(log, 1)
    assert log.segment_bases == (0, 2)
    fill(log, 6)  # the index holds 2 entries: a full index rolls
    assert len(log.segment_bases) >= 3
    base = log.log_end_offset
    assert log.append(bytes(stamped(batch(), base + INT32_MAX + 5, 0))).error == ErrorCode.none
    assert log.segment_bases[-1] == base + INT32_MAX + 5


# -- reads, sendfile -------------------------------------------------------------------------


def test_read_caps_by_max_bytes_upper_offset_and_min_one(tmp_path, clock):
    log = open_log(tmp_path, clock)
    stored = fill(log, 10)
    size = len(stored[0])
    assert split_batches(log.read(3, size * 3))[1] == stored[3:6]
    assert split_batches(log.read(3, size * 3 - 1))[1] == stored[3:5]
    assert log.read(3, 10) == stored[3]  # min_one
    assert log.read(3, 10, min_one=False) == b""
    assert split_batches(log.read(3, 10_000, 6))[1] == stored[3:6]  # hw: batches below it
    assert log.read(6, 10_000, 6) == b""
    with log.read_slice(11, 100) as fetched:
        assert fetched.error == ErrorCode.offset_out_of_range


def test_fetch_slice_sendfile_and_survives_deletion(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=700)
    fill(log, 12)
    fetched = log.read_slice(1, 10_000)
    expected = fetched.read_bytes()
    assert len(split_batches(expected)[1]) >= 2
    left, right = socket.socketpair()
    received = bytearray()
    reader = threading.Thread(target=lambda: _drain(right, received, len(expected)))
    reader.start()
    sent = 0
    while sent < fetched.size:
        sent += fetched.sendfile(left.fileno(), sent)
    reader.join(timeout=10)
    left.close()
    right.close()
    assert bytes(received) == expected
    log.set_high_watermark(log.log_end_offset)
    log.increment_log_start_offset(log.segment_bases[-1])  # deletes the slice's segment
    assert not os.path.exists(fetched.path)
    assert fetched.read_bytes() == expected  # the slice's own descriptor still reads it
    fetched.close()
    log.close()


def _drain(sock, into: bytearray, total: int) -> None:
    while len(into) < total:
        chunk = sock.recv(65536)
        if not chunk:
            return
        into += chunk


def test_reads_check_crcs_on_the_way_out(tmp_path, clock):
    log = open_log(tmp_path, clock)
    stored = fill(log, 5)
    path = log.active_segment.log_path
    with open(path, "r+b") as file:  # rot a byte of the third batch on disk, under the log
        file.seek(len(stored[0]) * 2 + 70)
        file.write(b"\xff")
    error, data = log.read_checked(0, 10_000)
    assert error == ErrorCode.corrupt_message and data == b"".join(stored[:2])
    assert log.read(2, 10_000) == b""
    assert log.read_checked(2, 10_000)[0] == ErrorCode.corrupt_message
    assert log.read(3, 10_000) == b"".join(stored[3:])


def test_bytes_between_counts_whole_batches(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=700)
    stored = fill(log, 10, count=2)  # offsets 0..19, 2 per batch
    size = len(stored[0])
    assert log.bytes_between(0, 20) == 10 * size
    assert log.bytes_between(3, 7) == 3 * size  # batches 2-3, 4-5, 6-7
    assert log.bytes_between(4, 4) == 0


def test_offset_for_timestamp(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=600, index_interval_bytes=100)
    for i in range(12):
        log.append_as_leader(batch(timestamp=1000 + 10 * i), 0)
    assert log.offset_for_timestamp(1055) == (6, 1060)
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(5000) is None


def test_log_append_time_batches_are_indexed_and_recovered_with_their_stamped_time(
        tmp_path, clock):
    """A LogAppendTime batch is found by the time the log stamped (the time index, never the
    producer's timestamps) and survives recovery (its recomputed CRC is checked)."""
    log = open_log(tmp_path, clock, segment_bytes=600, index_interval_bytes=100)
    for i in range(12):  # the producer's timestamps are far in the past: 1000, 1010, ...
        clock.now_ms = 50_000 + 100 * i
        info = log.append_as_leader(batch(timestamp=1000 + 10 * i), 0, log_append_time=True)
        assert info.log_append_time == clock.now_ms
    assert log.offset_for_timestamp(1055) == (0, 50_000)
    assert log.offset_for_timestamp(50_550) == (6, 50_600)
    log.close()
    reopened = Log(str(tmp_path), LogConfig(segment_bytes=600, index_interval_bytes=100),
                   clock_ms=clock, recover_from_start=True)
    assert reopened.verify() == []
    assert [h.max_timestamp for h, _ in reopened.iter_batches()] == [
        50_000 + 100 * i for i in range(12)]
    assert reopened.offset_for_timestamp(50_550) == (6, 50_600)


# -- truncation, epochs ---------------------------------------------------------------------------


def test_truncate_to_removes_straddling_batch_and_later_segments(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=700)
    fill(log, 6, count=2, epoch=1)
    fill(log, 6, count=2, epoch=2)  # offsets 12..23 in epoch 2
    log.truncate_to(13)  # batch 12-13 straddles: it goes whole
    assert log.log_end_offset == 12
    assert [h.last_offset for h, _ in log.iter_batches()][-1] == 11
    assert log.epochs.entries == [(1, 0)]
    assert all(b <= 12 for b in log.segment_bases)
    for kept in log.segments:
        assert all(kept.base_offset + r <= 11 for r in kept.index.relative_offsets)
    log.truncate_to(0)
    assert log.log_end_offset == 0 and log.read(0, 1000) == b""


def test_epoch_cache_end_offset_for_follows_kafka(tmp_path):
    cache = LeaderEpochCache(str(tmp_path / "cache"))
    for epoch, start in [(1, 0), (3, 10), (4, 15)]:
        cache.assign(epoch, start)
    assert cache.end_offset_for(4, 20) == (4, 20)  # latest epoch ends at the leo
    assert cache.end_offset_for(3, 20) == (3, 15)
    assert cache.end_offset_for(2, 20) == (1, 10)  # largest epoch <= 2, ends where 3 starts
    assert cache.end_offset_for(0, 20) == (0, 0)  # below the first: ends where it starts
    assert cache.end_offset_for(5, 20) == (-1, -1)
    assert cache.end_offset_for(-1, 20) == (-1, -1)
    cache.assign(5, 15)  # epoch 4 never held data: replaced
    assert cache.entries == [(1, 0), (3, 10), (5, 15)]
    assert LeaderEpochCache.load(cache.path).entries == cache.entries
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12), (5, 15)]
    cache.truncate_from_end(15)
    assert cache.entries == [(3, 12)]
    cache.assign(2, 30)  # Kafka's assign: an older epoch drops the newer entries
    assert cache.entries == [(2, 30)]


# -- checkpoints ----------------------------------------------------------------------------------


def test_checkpoints_are_atomic_and_malformed_ones_read_as_none(tmp_path):
    path = str(tmp_path / "cp")
    checkpoint.write_entries(path, [("a", 1), ("b", 22)])
    assert checkpoint.read_entries(path) == [("a", 1), ("b", 22)]
    assert not os.path.exists(path + ".tmp")
    good = open(path, "rb").read()
    for bad in (b"", b"0\n", b"1\n2\na 1\nb 22\n", b"0\n3\na 1\nb 22\n", b"0\n2\na x\nb 22\n",
                good[:-3], b"\xff\xfe", b"0\n999999999\n"):
        with open(path, "wb") as file:
            file.write(bad)
        assert checkpoint.read_entries(path) is None
    assert checkpoint.read_entries(str(tmp_path / "missing")) is None


# -- flush policy, clean shutdown, recovery -----------------------------------------------------------


def test_flush_policy_by_messages_and_time(tmp_path, clock):
    log = open_log(tmp_path, clock, flush_messages=5, flush_ms=1000)
    fill(log, 2, count=2)
    assert log.flushed_offset == 0
    fill(log, 1, count=2)  # 6 messages >= 5
    assert log.flushed_offset == 6
    fill(log, 1)
    clock.now_ms = 999
    assert not log.maybe_flush()
    clock.now_ms = 1000
    assert log.maybe_flush() and log.flushed_offset == 7
    default = open_log(tmp_path / "default", clock)
    fill(default, 50)
    assert default.flushed_offset == 0  # Kafka's default: no flush by count or time
    default.flush()
    assert default.flushed_offset == 50


def test_ticks_checkpoint_a_moved_hw_every_interval(tmp_path, clock):
    log = open_log(tmp_path, clock, checkpoint_interval_ms=5000)
    fill(log, 10)
    log.set_high_watermark(6)
    clock.now_ms = 4999
    log.maybe_flush()
    saved = dict(checkpoint.read_entries(str(tmp_path / CHECKPOINT_FILE)) or [])
    assert saved.get("high_watermark", 0) == 0  # not due yet
    clock.now_ms = 5000
    log.maybe_flush()
    written = os.stat(tmp_path / CHECKPOINT_FILE).st_mtime_ns
    assert dict(checkpoint.read_entries(str(tmp_path / CHECKPOINT_FILE)))["high_watermark"] == 6
    clock.now_ms = 20_000
    log.maybe_flush()  # nothing moved: no rewrite
    assert os.stat(tmp_path / CHECKPOINT_FILE).st_mtime_ns == written
    log.crash()
    assert open_log(tmp_path, clock).high_watermark == 6  # a kill -9 keeps the ticked hw


def test_clean_shutdown_skips_recovery(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=700)
    stored = fill(log, 20)
    log.close()
    log = open_log(tmp_path, clock, segment_bytes=700)
    assert log.recovery.clean_shutdown and log.recovery.segments_scanned == 0
    assert not os.path.exists(tmp_path / CLEAN_SHUTDOWN_FILE)  # a crash now is unclean
    assert [raw for _, raw in log.iter_batches()] == stored
    assert log.log_end_offset == 20
    log.close()


def test_recovery_cuts_a_torn_tail_and_deletes_later_segments(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=700)
    stored = fill(log, 20)
    log.crash()
    second = os.path.join(tmp_path, segment.file_name(log.segment_bases[1], ".log"))
    with open(second, "r+b") as file:
        file.seek(130)
        file.write(b"\x00\x01")  # corrupt the second batch of the second segment
    log = open_log(tmp_path, clock, segment_bytes=700)
    report = log.recovery
    assert not report.clean_shutdown and report.bytes_truncated > 0
    assert report.segments_deleted == len(log.segment_bases) + report.segments_deleted - 2
    assert [raw for _, raw in log.iter_batches()] == stored[: log.log_end_offset]
    assert log.log_end_offset == log.segment_bases[1] + 1
    log.append_as_leader(batch(), 0)  # and the log goes on from there
    assert log.log_end_offset == log.segment_bases[1] + 2


def test_recovery_streams_batches_larger_than_its_buffer(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(segment, "RECOVERY_WINDOW_BYTES", 8192)
    monkeypatch.setattr(crc, "FILE_CHUNK_BYTES", 1000)
    log = open_log(tmp_path, clock)
    stored = fill(log, 3, value_bytes=20_000)
    stored += fill(log, 3)[3:]
    log.crash()
    log = open_log(tmp_path, clock)
    assert log.recovery.bytes_truncated == 0 and log.recovery.bytes_scanned > 60_000
    assert [raw for _, raw in log.iter_batches()] == stored


# -- retention -------------------------------------------------------------------------------------


def test_retention_by_bytes_and_time_stays_below_the_high_watermark(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=600, retention_bytes=1000, retention_ms=-1)
    fill(log, 20)
    assert log.delete_old_segments() == 0  # hw 0: nothing is deletable
    log.set_high_watermark(20)
    deleted = log.delete_old_segments()
    assert deleted >= 2 and log.size_bytes - log.segments[0].size < 1000
    assert log.log_start_offset == log.segment_bases[0]
    with log.read_slice(0, 100) as fetched:
        assert fetched.error == ErrorCode.offset_out_of_range
    timed = open_log(tmp_path / "timed", clock, segment_bytes=600, retention_ms=5000)
    for i in range(20):
        timed.append_as_leader(batch(timestamp=i * 1000), 0)
    timed.set_high_watermark(20)
    clock.now_ms = 12_500
    timed.delete_old_segments()
    assert all(s.max_timestamp >= 7_500 for s in timed.segments[:-1])
    assert timed.log_start_offset > 0
