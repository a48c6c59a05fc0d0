"""The PartitionLog contract (impl/storage/partition_log.py), one suite run against both logs
that implement it: impl/storage's Log and impl/core's MemoryLog. Each test states one line of a
member's contract; the first checks that both classes have every member, with its signature."""

import inspect
import itertools
import os
import socket

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol.records import (
    LOG_APPEND_TIME_FLAG,
    build_batch,
    check_batch,
    decode_batch,
    parse_header,
    split_batches,
    stamped,
)
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.impl.storage.partition_log import PartitionLog, RecordsSlice

KINDS = pytest.mark.parametrize("kind", ["memory", "disk"])


def open_log(kind: str, path, flush_messages: int | None = None, wall_ms=lambda: 0):
    if kind == "memory":
        return MemoryLog(flush_interval_messages=flush_messages, wall_ms=wall_ms)
    return Log(str(path / "log"), LogConfig(flush_messages=flush_messages), clock_ms=wall_ms)


def reopened(kind: str, log, path):
    """The log a broker gets for the same partition after log.delete(): a MemoryLog is kept
    by its owner (tests hold them in a dict), a Log is opened again in its directory."""
    return log if kind == "memory" else open_log(kind, path)


def batch(count: int = 1, value: bytes = b"v" * 40) -> bytes:
    return build_batch([(b"k", value, (), 1_000)] * count)


def headers_of(data) -> list:
    _, views = split_batches(data)
    return [parse_header(v) for v in views]


def members(protocol) -> dict[str, object]:
    """The protocol's members: name -> its function (None for a plain attribute)."""
    found = {name: None for name in vars(protocol).get("__annotations__", {})}
    for name, value in vars(protocol).items():
        if isinstance(value, property):
            found[name] = None
        elif inspect.isfunction(value) and (not name.startswith("_") or name in (
                "__len__", "__enter__", "__exit__")):
            found[name] = value
    return found


@pytest.mark.parametrize("protocol, implementation", [
    (PartitionLog, "memory"), (PartitionLog, "disk"),
    (RecordsSlice, "memory"), (RecordsSlice, "disk")])
def test_every_member_is_implemented_with_its_signature(tmp_path, protocol, implementation):
    log = open_log(implementation, tmp_path)
    log.append_as_leader(batch(), 0)
    subject = log if protocol is PartitionLog else log.read_slice(0, 1 << 20)
    for name, declared in members(protocol).items():
        assert name in dir(subject), f"{type(subject).__name__} lacks {name}"
        if declared is not None:
            expected = list(inspect.signature(declared).parameters)[1:]
            actual = list(inspect.signature(vars(type(subject))[name]).parameters)[1:]
            assert actual == expected, f"{type(subject).__name__}.{name}{actual}"


@KINDS
def test_a_new_log_is_empty(kind, tmp_path):
    log = open_log(kind, tmp_path)
    assert (log.log_start_offset, log.log_end_offset, log.flushed_offset) == (0, 0, 0)
    assert (log.high_watermark, log.topic_id, log.epochs.entries) == (0, None, [])
    assert log.read(0, 1 << 20) == b"" and list(log.iter_batches()) == []
    assert log.bytes_between(0, 10) == 0


@KINDS
def test_append_as_leader_stamps_offsets_and_epoch_from_the_leo(kind, tmp_path):
    log = open_log(kind, tmp_path)
    first, second = batch(3), batch(2)
    info = log.append_as_leader(first, 4)
    assert (info.error, info.first_offset, info.last_offset, info.batches, info.bytes) == (
        ErrorCode.none, 0, 2, 1, len(first))
    info = log.append_as_leader(second, 6)
    assert (info.first_offset, info.last_offset, info.log_start_offset) == (3, 4, 0)
    assert log.log_end_offset == 5
    assert log.epochs.entries == [(4, 0), (6, 3)]
    assert [bytes(raw) for _, raw in log.iter_batches()] == [
        bytes(stamped(first, 0, 4)), bytes(stamped(second, 3, 6))]
    assert first == batch(3)  # the caller's bytes are not changed


@KINDS
def test_checked_headers_give_the_same_append(kind, tmp_path):
    checked, unchecked = open_log(kind, tmp_path / "a"), open_log(kind, tmp_path / "b")
    for data, epoch in ((batch(2), 0), (batch(1) + batch(3), 1)):
        assert checked.append_as_leader(data, epoch, headers_of(data)) == (
            unchecked.append_as_leader(data, epoch))
    assert list(checked.iter_batches()) == list(unchecked.iter_batches())


@KINDS
@pytest.mark.parametrize("checked", [True, False])
def test_a_log_append_time_append_stamps_every_batch_with_one_reading_of_the_wall_clock(
        kind, checked, tmp_path):
    """LogAppendTime: the timestamp-type bit set, MaxTimestamp = the log's wall clock, read once
    per append, the CRC recomputed; the rest of each batch (base timestamp, records) as the
    producer sent it, and AppendInfo.log_append_time says the time. A CreateTime append says
    -1 and keeps the producer's header."""
    ticks = itertools.count(5_000)  # every reading differs: one time means one reading
    log = open_log(kind, tmp_path, wall_ms=lambda: next(ticks))
    data = batch(2) + batch(3)
    info = log.append_as_leader(data, 7, headers_of(data) if checked else None,
                                log_append_time=True)
    now = info.log_append_time
    assert (info.error, info.first_offset, info.last_offset) == (ErrorCode.none, 0, 4)
    assert now >= 5_000
    plain = log.append_as_leader(batch(1), 7, log_append_time=False)
    assert (plain.first_offset, plain.log_append_time) == (5, -1)
    one = batch(4)  # one batch alone: a storage Log's one-batch path
    later = log.append_as_leader(one, 7, headers_of(one) if checked else None,
                                 log_append_time=True)
    assert (later.first_offset, later.last_offset) == (6, 9) and later.log_append_time > now
    (first, a), (second, b), (third, c), (fourth, d) = log.iter_batches()
    for header, raw, sent, time in ((first, a, batch(2), now), (second, b, batch(3), now),
                                    (fourth, d, one, later.log_append_time)):
        assert check_batch(raw) == ErrorCode.none  # the CRC covers the new header
        assert header.is_log_append_time and header.max_timestamp == time
        assert header.attributes == parse_header(sent).attributes | LOG_APPEND_TIME_FLAG
        assert header.base_timestamp == 1_000 and bytes(raw)[61:] == sent[61:]
        assert header == parse_header(raw)
        assert {r.timestamp for r in decode_batch(raw).records} == {time}  # as a reader sees it
    assert not third.is_log_append_time and bytes(c) == bytes(stamped(batch(1), 5, 7))
    assert data == batch(2) + batch(3)  # the caller's bytes are not changed


@KINDS
def test_unchecked_producer_bytes_are_checked_and_nothing_is_written_on_error(kind, tmp_path):
    log, good = open_log(kind, tmp_path), batch(2)
    flipped = bytearray(good)
    flipped[-1] ^= 1
    refused = {  # what a producer might send, and the answer
        "a bit flipped under the CRC": (bytes(flipped), ErrorCode.corrupt_message),
        "a base offset other than 0": (bytes(stamped(good, 5, 0)), ErrorCode.invalid_record),
        "a batch cut short": (good[:-1], ErrorCode.corrupt_message),
        "no batch at all": (b"", ErrorCode.invalid_record),
        "a good batch, then a bad one": (good + bytes(flipped), ErrorCode.corrupt_message)}
    for what, (data, error) in refused.items():
        info = log.append_as_leader(data, 0)
        # nothing written, and no offsets named (-1, as Kafka's LogAppendInfo for none)
        assert (info.error, info.first_offset, info.last_offset, info.batches, info.bytes) == (
            error, -1, -1, 0, 0), what
    assert log.log_end_offset == 0 and list(log.iter_batches()) == []


@KINDS
def test_append_writes_stamped_batches_with_gaps_but_not_below_the_leo(kind, tmp_path):
    log = open_log(kind, tmp_path)
    copy = stamped(batch(2), 0, 3)
    info = log.append(bytes(copy))
    assert (info.error, info.first_offset, info.last_offset, info.batches) == (
        ErrorCode.none, 0, 1, 1)
    assert log.append(bytes(stamped(batch(), 10, 3))).first_offset == 10  # a gap forward
    assert log.log_end_offset == 11 and log.epochs.entries == [(3, 0)]
    with pytest.raises(ValueError):
        log.append(bytes(stamped(batch(), 5, 3)))
    later = bytes(stamped(batch(), 11, 5))
    assert log.append(later, headers_of(later)).first_offset == 11  # checked by the caller
    corrupt = bytearray(stamped(batch(), 12, 5))
    corrupt[-1] ^= 1
    for data, error in ((bytes(corrupt), ErrorCode.corrupt_message), (b"", ErrorCode.none)):
        info = log.append(data)  # nothing written: no offsets named
        assert (info.error, info.first_offset, info.last_offset, info.batches) == (error, -1, -1, 0)
    assert log.log_end_offset == 12 and log.epochs.entries == [(3, 0), (5, 11)]


def filled(kind, tmp_path):
    """A log of batches holding offsets 0-2, 3, 4-5, 6 (epochs 0, 0, 1, 1)."""
    log = open_log(kind, tmp_path)
    for count, epoch in ((3, 0), (1, 0), (2, 1), (1, 1)):
        assert log.append_as_leader(batch(count), epoch).error == ErrorCode.none
    return log


def bases(data: bytes) -> list[int]:
    return [h.base_offset for h in headers_of(data)]


@KINDS
def test_read_returns_whole_batches_within_the_bounds(kind, tmp_path):
    log = filled(kind, tmp_path)
    assert bases(log.read(1, 1 << 20)) == [0, 3, 4, 6]  # from the batch holding the offset
    assert bases(log.read(0, 1 << 20, max_offset=6)) == [0, 3, 4]  # ending at or below it
    assert bases(log.read(0, 1 << 20, max_offset=5)) == [0, 3]  # never a batch cut
    one = len(log.read(0, 1 << 20, max_offset=3))
    assert bases(log.read(0, one + 10)) == [0]  # within max_bytes
    assert bases(log.read(0, 1)) == [0]  # but at least one batch with min_one
    assert log.read(0, 1, min_one=False) == b""
    assert log.read(8, 1 << 20) == b"" and log.read(7, 1 << 20) == b""  # leo: nothing yet
    assert all(check_batch(v) == ErrorCode.none for v in split_batches(log.read(0, 1 << 20))[1])


@KINDS
def test_read_slice_is_read_as_a_range_to_send(kind, tmp_path):
    log = filled(kind, tmp_path)
    with log.read_slice(3, 1 << 20, 6) as fetched:
        assert fetched.error == ErrorCode.none
        assert fetched.read_bytes() == log.read(3, 1 << 20, 6)
        assert len(fetched) == fetched.size == len(fetched.read_bytes())
        assert (fetched.first_offset, fetched.next_offset) == (3, 6)
        left, right = socket.socketpair()
        try:
            sent = 0
            while sent < fetched.size:
                sent += fetched.sendfile(left.fileno(), sent)
            assert right.recv(sent, socket.MSG_WAITALL) == fetched.read_bytes()
        finally:
            left.close()
            right.close()
    with log.read_slice(8, 1 << 20) as fetched:
        assert fetched.error == ErrorCode.offset_out_of_range and len(fetched) == 0


@KINDS
def test_bytes_between_counts_the_batches_holding_the_range(kind, tmp_path):
    log = filled(kind, tmp_path)
    assert log.bytes_between(1, 4) == len(log.read(0, 1 << 20, max_offset=4))
    assert log.bytes_between(4, 4) == 0
    assert log.bytes_between(0, 7) == len(log.read(0, 1 << 20))


@KINDS
def test_iter_batches_starts_at_the_batch_holding_the_offset(kind, tmp_path):
    log = filled(kind, tmp_path)
    assert [h.base_offset for h, _ in log.iter_batches(5)] == [4, 6]
    assert [h.base_offset for h, _ in log.iter_batches()] == [0, 3, 4, 6]
    header, raw = next(log.iter_batches(3))
    assert parse_header(raw) == header and check_batch(raw) == ErrorCode.none


@KINDS
def test_truncate_to_removes_straddling_batches_whole(kind, tmp_path):
    log = filled(kind, tmp_path)
    log.flush()
    log.set_high_watermark(7)
    log.truncate_to(5)  # offset 5 is in the batch 4-5: it goes whole
    assert log.log_end_offset == 4 and bases(log.read(0, 1 << 20)) == [0, 3]
    assert log.epochs.entries == [(0, 0)]
    assert log.flushed_offset <= 4 and log.high_watermark <= 4
    log.truncate_to(10)  # past the leo: nothing to remove
    assert log.log_end_offset == 4


@KINDS
def test_set_high_watermark_is_clamped_to_the_log(kind, tmp_path):
    log = filled(kind, tmp_path)
    log.set_high_watermark(5)
    assert log.high_watermark == 5
    log.set_high_watermark(50)
    assert log.high_watermark == log.log_end_offset


@KINDS
def test_flush_makes_everything_durable(kind, tmp_path):
    log = filled(kind, tmp_path)
    log.flush()
    assert log.flushed_offset == log.log_end_offset == 7
    assert log.checkpoints_off_lock and not log.maybe_flush()  # no flush policy: nothing due


@KINDS
def test_a_flush_policy_flushes_by_record_count(kind, tmp_path):
    log = open_log(kind, tmp_path, flush_messages=3)
    assert not log.checkpoints_off_lock  # a flush may be due: not beside appends
    log.append_as_leader(batch(2), 0)
    assert log.flushed_offset == 0 and not log.maybe_flush()
    log.append_as_leader(batch(1), 0)
    assert log.flushed_offset == 3  # the append itself applied the policy


@KINDS
def test_set_segment_bytes_keeps_what_was_written(kind, tmp_path):
    log = filled(kind, tmp_path)
    log.set_segment_bytes(2 * 1024 * 1024)
    log.append_as_leader(batch(), 2)
    log.set_segment_bytes(None)
    assert bases(log.read(0, 1 << 20)) == [0, 3, 4, 6, 7]


@KINDS
def test_record_topic_id_and_delete(kind, tmp_path):
    log = filled(kind, tmp_path)
    log.record_topic_id("a-topic-id")
    assert log.topic_id == "a-topic-id"
    log.delete()
    assert kind == "memory" or not os.path.exists(tmp_path / "log")  # no files left behind
    again = reopened(kind, log, tmp_path)
    assert (again.log_end_offset, again.topic_id, list(again.iter_batches())) == (0, None, [])
    again.close()


@KINDS
def test_close_flushes_and_may_be_repeated(kind, tmp_path):
    log = filled(kind, tmp_path)
    log.close()
    log.close()
    assert log.flushed_offset == 7


@KINDS
def test_size_bytes_counts_the_batches_held(kind, tmp_path):
    log = open_log(kind, tmp_path)
    assert log.size_bytes == 0
    first, second = batch(3), batch(2)
    log.append_as_leader(first, 0)
    log.append_as_leader(second, 0)
    assert log.size_bytes == len(first) + len(second)
    log.truncate_to(3)
    assert log.size_bytes == len(first)


def _log_with(kind, tmp_path, batches: int):
    log = open_log(kind, tmp_path)
    for _ in range(batches):
        log.append_as_leader(batch(2), 3)
    log.set_high_watermark(log.log_end_offset)
    return log


@KINDS
def test_increment_log_start_offset_hides_what_is_below_and_never_goes_back(kind, tmp_path):
    log = _log_with(kind, tmp_path, 3)  # offsets 0..5, batches at 0, 2, 4
    log.increment_log_start_offset(3)
    assert log.log_start_offset == 3 and log.log_end_offset == 6
    assert log.read(1, 1 << 20) == b"" and log.read(3, 1 << 20) != b""
    assert log.read_slice(2, 1 << 20).error == ErrorCode.offset_out_of_range
    assert log.epochs.entries == [(3, 3)]  # the epoch covering the start moves there
    log.increment_log_start_offset(1)
    assert log.log_start_offset == 3
    with pytest.raises(ValueError):
        log.increment_log_start_offset(7)  # above the hw


@KINDS
def test_retention_never_deletes_at_or_above_the_hw(kind, tmp_path):
    """delete_old_segments: whole segments only, wholly below the hw; a MemoryLog has no
    segments, and the storage log's one segment holds the hw: both keep everything, though the
    records (stamped at 1000) are long expired and over 0 bytes."""
    log = _log_with(kind, tmp_path, 3)
    log.set_high_watermark(4)
    leo, before = log.log_end_offset, [h.base_offset for h, _ in log.iter_batches()]
    deleted = log.delete_old_segments(retention_ms=0, retention_bytes=0)
    assert log.log_start_offset <= 4 and log.log_end_offset == leo
    assert [h.base_offset for h, _ in log.iter_batches()] == [
        b for b in before if b >= log.log_start_offset]
    assert deleted == 0 and log.log_start_offset == 0


@KINDS
def test_truncate_fully_and_start_at_empties_the_log_there(kind, tmp_path):
    log = _log_with(kind, tmp_path, 2)
    log.truncate_fully_and_start_at(10)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (10, 10, 10)
    assert list(log.iter_batches()) == [] and log.epochs.entries == []
    info = log.append(stamped(batch(1), 10, 4))
    assert (info.first_offset, log.log_end_offset) == (10, 11)


def test_a_log_start_survives_a_restart_and_one_past_the_recovered_end_restarts_the_log(tmp_path):
    """Kafka's LogLoader: recovered to an end below the checkpointed log start (DeleteRecords
    moved it past what a crash kept), the log starts again, empty, at the log start."""
    log = _log_with("disk", tmp_path, 3)
    log.flush()
    log.increment_log_start_offset(4)
    log.close()
    again = open_log("disk", tmp_path)
    assert (again.log_start_offset, again.log_end_offset) == (4, 6)
    for path in again.crash():  # a power loss cuts the segment back to its first batch
        os.truncate(path, len(batch(2)))
    reopened = open_log("disk", tmp_path)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (4, 4)
    memory = _log_with("memory", tmp_path, 3)
    memory.flushed_offset = 2
    memory.increment_log_start_offset(4)
    memory.crash()
    assert (memory.log_start_offset, memory.log_end_offset) == (4, 4)
