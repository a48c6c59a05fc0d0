"""A Hypothesis state machine for a commit log, checked against a naive twin.

The system under test comes from a factory `log_factory(directory, config, clock_ms) -> log` with
impl/storage's Log interface, so any log implementation (or a Log with a mutant switched on) can
be dropped in:

    TestStorage = bind(StorageMachine, log_factory=Log, config=LogConfig(...)).TestCase

The twin (NaiveLog) is a list of stamped batches, a log start offset and the offset below which
the log said everything is durable. Rules: leader and follower appends (with gaps), corrupt
appends, reads, byte counts, truncations, flushes, clock ticks, rolls, DeleteRecords,
retention, clean restarts, and crashes that lose the unflushed tail (a power loss cutting each
file anywhere between its durable and its current size, optionally followed by garbage) or
only the process.
After a crash the recovered log must be a prefix of the twin that keeps everything durable.
"""

import os
import shutil
import tempfile

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import (
    build_batch,
    check_batch,
    parse_header,
    split_batches,
    stamped,
)
from kafkaref.impl.protocol.records.timestamps import NO_TIMESTAMP

SKEWS = st.sampled_from([0, 0, 0, 25, -10])  # a batch's timestamp against the machine's clock


class NaiveLog:
    """The twin: whole stamped batches in a Python list."""

    def __init__(self):
        self.batches: list[bytes] = []
        self.log_start = 0
        self.durable_offset = 0  # everything below is durable, as the log claimed
        self.empty_leo = 0

    @property
    def leo(self) -> int:
        return parse_header(self.batches[-1]).next_offset if self.batches else self.empty_leo

    def append(self, batch: bytes) -> None:
        self.batches.append(bytes(batch))

    def visible(self) -> list[bytes]:
        """Batches a reader can reach: from the one holding log_start on."""
        return [b for b in self.batches if parse_header(b).last_offset >= self.log_start]

    def expected_read(self, offset: int, max_bytes: int, upper: int, min_one: bool) -> list[bytes]:
        """The longest answer a read may give (whole batches, below upper, within max_bytes)."""
        out, size = [], 0
        for batch in self.visible():
            header = parse_header(batch)
            if header.last_offset < offset:
                continue
            if header.next_offset > upper:
                break
            if size + len(batch) > max_bytes and not (min_one and not out):
                break
            out.append(batch)
            size += len(batch)
        return out

    def bytes_between(self, start: int, end: int) -> int:
        """Bytes of the visible batches holding offsets in [start, end)."""
        if start >= end:
            return 0
        return sum(len(b) for b in self.visible()
                   if parse_header(b).last_offset >= start and parse_header(b).base_offset < end)

    def truncate_to(self, offset: int, empty_leo: int) -> None:
        """Drop batches holding offsets >= offset (a straddling batch goes whole). A log left
        without batches ends at empty_leo (where its segment starts: the log knows that)."""
        while self.batches and parse_header(self.batches[-1]).last_offset >= offset:
            self.batches.pop()
        if not self.visible():
            # nothing readable is left (what is below the log start may be physically gone):
            # the log restarts where its last segment starts
            self.batches.clear()
            self.empty_leo = empty_leo
        self.durable_offset = min(self.durable_offset, self.leo)
        self.log_start = min(self.log_start, self.leo)

    def keep_prefix(self, count: int) -> None:
        del self.batches[count:]
        self.durable_offset = self.leo

    def epoch_cache_problem(self, entries: list[tuple[int, int]]) -> str | None:
        """Why `entries` is not a correct leader epoch cache for the twin's batches (None if it
        is). Exact equality would be history-dependent (Kafka drops an entry starting at the leo
        on recovery and re-adds the epoch at its next batch), so this checks what readers rely
        on: entries strictly increase; each entry below the leo starts at the log start or at a
        batch of its epoch; and looking up any visible batch gives that batch's epoch."""
        for (e1, o1), (e2, o2) in zip(entries, entries[1:], strict=False):
            if not (e2 > e1 and o2 > o1):
                return f"entries do not increase: {entries}"
        visible = [parse_header(b) for b in self.visible()]
        starts = {(h.partition_leader_epoch, h.base_offset) for h in visible}
        for epoch, offset in entries:
            if offset < self.leo and offset != self.log_start and (epoch, offset) not in starts:
                return f"entry {(epoch, offset)} starts at no batch of that epoch: {entries}"
        for header in visible:
            at = max(header.base_offset, self.log_start)
            known = [e for e, o in entries if o <= at]
            if header.partition_leader_epoch >= 0 and (
                not known or known[-1] != header.partition_leader_epoch
            ):
                return f"batch at {header.base_offset} has epoch " \
                       f"{header.partition_leader_epoch}, cache says {known[-1:]}: {entries}"
        return None


def scratch_dir() -> str | None:
    """Where tests keep their logs: tmpfs when there is one. Power loss is simulated by cutting
    files back to what the log reports as fsynced, so real fsyncs only cost time here."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class StorageMachine(RuleBasedStateMachine):
    """log_factory(directory, config, clock_ms)'s logs driven against NaiveLog; check_epochs:
    also compare the leader-epoch cache."""

    def __init__(self, log_factory, config, *, check_epochs: bool = True):
        super().__init__()
        self.log_factory, self.config, self.check_epochs = log_factory, config, check_epochs
        self.directory = tempfile.mkdtemp(prefix="kafkaref-storage-", dir=scratch_dir())
        self.now_ms = 0
        self.epoch = 0
        self.twin = NaiveLog()
        self.log = self._open()

    def _open(self):
        return self.log_factory(self.directory, self.config, lambda: self.now_ms)

    def teardown(self):
        try:
            self.log.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _sync_durable(self):
        self.twin.durable_offset = max(self.twin.durable_offset, self.log.flushed_offset)

    def _build(self, counts: int, value_bytes: int, codec, skew_ms: int = 0) -> bytes:
        """A batch stamped now, skewed by skew_ms (producers' clocks differ: a segment's largest
        timestamp need not be its last batch's)."""
        records = [(None if i % 3 == 2 else b"k%d" % i, b"v" * value_bytes, (("h", b"x"),),
                    1_000 + self.now_ms + skew_ms) for i in range(counts)]
        return build_batch(records, compression=codec)

    # -- appends ------------------------------------------------------------------------
    @rule(
        counts=st.lists(st.integers(1, 4), min_size=1, max_size=2),
        value_bytes=st.integers(0, 120),
        codec=st.sampled_from([Compression.none, Compression.none, Compression.lz4]),
        bump=st.booleans(),
        skew_ms=SKEWS,
    )
    def append_as_leader(self, counts, value_bytes, codec, bump, skew_ms=0):
        self.epoch += bump
        data = b"".join(self._build(n, value_bytes, codec, skew_ms) for n in counts)
        leo = self.twin.leo
        info = self.log.append_as_leader(data, self.epoch)
        note(f"append_as_leader {counts} x {value_bytes}B epoch {self.epoch}: {info}")
        assert info.error == ErrorCode.none, info
        assert info.first_offset == leo
        _, batches = split_batches(data)
        for batch in batches:
            header = parse_header(batch)
            self.twin.append(stamped(batch, leo, self.epoch))
            leo += header.last_offset_delta + 1
        assert info.last_offset == leo - 1
        self._sync_durable()

    @rule(counts=st.integers(1, 3), value_bytes=st.integers(0, 120), gap=st.sampled_from([0, 0, 3]),
          bump=st.booleans(), skew_ms=SKEWS)
    def append_as_follower(self, counts, value_bytes, gap, bump, skew_ms=0):
        self.epoch += bump
        base = self.twin.leo + gap
        batch = stamped(self._build(counts, value_bytes, Compression.none, skew_ms), base,
                        self.epoch)
        info = self.log.append(bytes(batch))
        note(f"append (follower) at {base} epoch {self.epoch}: {info}")
        assert info.error == ErrorCode.none and info.first_offset == base, info
        self.twin.append(batch)
        self._sync_durable()

    @rule(position=st.integers(8, 10_000), bit=st.integers(0, 7), leader=st.booleans())
    def append_corrupt(self, position, bit, leader):
        """A bit flip anywhere from Length on must be refused, with nothing written."""
        batch = bytearray(self._build(2, 30, Compression.none))
        if not leader:
            batch = stamped(batch, self.twin.leo, self.epoch)
        # Length (8-11) and Magic onwards (16-); BaseOffset and PartitionLeaderEpoch are
        # outside the CRC by design.
        covered = [*range(8, 12), *range(16, len(batch))]
        position = covered[position % len(covered)]
        batch[position] ^= 1 << bit
        leo = self.log.log_end_offset
        if leader:
            info = self.log.append_as_leader(bytes(batch), self.epoch)
        else:
            info = self.log.append(bytes(batch))
        note(f"corrupt append (flip byte {position} bit {bit}): {info.error!r}")
        assert info.error != ErrorCode.none, "a corrupt batch was accepted"
        assert self.log.log_end_offset == leo

    # -- reads ----------------------------------------------------------------------------
    @rule(where=st.integers(0, 1 << 20), max_bytes=st.integers(0, 900),
          upper_where=st.integers(0, 1 << 20), min_one=st.booleans())
    def read(self, where, max_bytes, upper_where, min_one):
        start, leo = self.twin.log_start, self.twin.leo
        offset = start + where % (leo - start + 1)
        upper = offset + upper_where % (leo - offset + 1)
        with self.log.read_slice(offset, max_bytes, upper, min_one) as fetched:
            data = fetched.read_bytes()
            next_offset = fetched.next_offset
        error, got = split_batches(data)
        got = [bytes(b) for b in got]
        expected = self.twin.expected_read(offset, max_bytes, upper, min_one)
        note(f"read({offset}, {max_bytes}, {upper}, {min_one}) -> {len(got)} batches, "
             f"at most {len(expected)}")
        assert error == ErrorCode.none
        assert all(check_batch(b) == ErrorCode.none for b in got), "read returned a bad batch"
        assert got == expected[: len(got)], "read returned the wrong batches"
        assert bool(got) == bool(expected), "read returned nothing though batches are there"
        if got:  # next_offset: past the last batch, not past the next one (gaps allowed)
            following = self.twin.expected_read(parse_header(got[-1]).next_offset, 1,
                                                self.twin.leo, True)
            ceiling = parse_header(following[0]).base_offset if following else self.twin.leo
            assert parse_header(got[-1]).next_offset <= next_offset <= max(
                ceiling, parse_header(got[-1]).next_offset)
        if len(got) < len(expected):  # cut short: only at a segment end
            assert self._segment_of(got[-1]) != self._segment_of(expected[len(got)])

    @rule(where=st.integers(0, 1 << 20), end_where=st.integers(0, 1 << 20))
    def count_bytes(self, where, end_where):
        """bytes_between (what a parked fetch waits on): the bytes of the batches holding
        offsets in [start, end). From below the log start (a fetch parked before retention or
        DeleteRecords moved it, or its segments went), never fewer than from the log start:
        nothing a reader can reach is left out."""
        log_start, leo = self.twin.log_start, self.twin.leo
        start = where % (leo + 1)  # from 0: below the log start too
        end = start + end_where % (leo - start + 1)
        counted = self.log.bytes_between(start, end)
        note(f"bytes_between({start}, {end}) = {counted}")
        if start >= log_start:
            assert counted == self.twin.bytes_between(start, end)
        else:
            assert counted >= self.twin.bytes_between(log_start, end)

    def _segment_of(self, batch: bytes) -> int:
        base_offset = parse_header(batch).base_offset
        return max(b for b in self.log.segment_bases if b <= base_offset)

    @rule()
    def read_out_of_range(self):
        with self.log.read_slice(self.twin.leo + 1, 1000) as fetched:
            assert fetched.error == ErrorCode.offset_out_of_range
        if self.twin.log_start > 0:
            with self.log.read_slice(self.twin.log_start - 1, 1000) as fetched:
                assert fetched.error == ErrorCode.offset_out_of_range

    # -- truncation, retention ------------------------------------------------------------
    def _offset_in_log(self, where: int) -> int:
        """An offset from the log start to the leo, both included, picked by `where`."""
        start, leo = self.twin.log_start, self.twin.leo
        return start + where % (leo - start + 1)

    @precondition(lambda self: self.twin.leo > self.twin.log_start)
    @rule(where=st.integers(0, 1 << 20))
    def truncate(self, where):
        offset = self._offset_in_log(where)
        note(f"truncate_to({offset})")
        self.log.truncate_to(offset)
        self.twin.truncate_to(offset, empty_leo=self.log.log_end_offset)
        assert self.log.log_end_offset <= offset

    @precondition(lambda self: self.twin.leo > self.twin.log_start)
    @rule(where=st.integers(0, 1 << 20))
    def delete_records(self, where):
        self._delete_records_to(self._offset_in_log(where))

    @precondition(lambda self: self.twin.leo > self.twin.log_start)
    @rule()
    def delete_every_record(self):
        """DeleteRecords up to the leo: the next segment rolled then starts at the log start,
        and the one below it holds nothing readable (retention's first pass deletes it)."""
        self._delete_records_to(self.twin.leo)

    def _delete_records_to(self, offset: int) -> None:
        note(f"increment_log_start_offset({offset})")
        self.log.set_high_watermark(self.twin.leo)
        self.log.increment_log_start_offset(offset)
        self.twin.log_start = offset

    @rule()
    def retention(self):
        self.log.set_high_watermark(self.twin.leo)
        before = self.log.log_start_offset
        deleted = self.log.delete_old_segments()
        note(f"retention deleted {deleted} segments, log start {self.log.log_start_offset}")
        assert self.log.log_start_offset >= before
        self.twin.log_start = self.log.log_start_offset
        # Kafka's deleteLogStartOffsetBreachedSegments: no segment is left whose next segment
        # starts at or below the log start (the hw is the leo here, so none is held back)
        segments = getattr(self.log, "segments", ())
        assert len(segments) < 2 or segments[1].base_offset > self.log.log_start_offset, (
            f"segment {segments[0].base_offset} kept, wholly below the log start "
            f"{self.log.log_start_offset}")

    # -- durability and time -----------------------------------------------------------------
    @rule()
    def flush(self):
        self.log.flush()
        assert self.log.flushed_offset == self.twin.leo
        self._sync_durable()

    @rule(elapsed_ms=st.integers(1, 40))
    def tick(self, elapsed_ms):
        self.now_ms += elapsed_ms
        self.log.maybe_flush()
        self._sync_durable()

    @rule()
    def roll(self):
        self.log.roll()
        self._sync_durable()

    @rule()
    def restart_cleanly(self):
        self.log.close()
        self.log = self._open()
        note(f"clean restart: {self.log.recovery}")
        assert self.log.recovery.clean_shutdown
        self.twin.durable_offset = self.twin.leo

    @rule(power_loss=st.booleans(), cut_fractions=st.lists(st.floats(0, 1), min_size=4,
                                                            max_size=4),
          garbage=st.binary(max_size=24))
    def crash_and_recover(self, power_loss, cut_fractions, garbage):
        durable = self.log.crash()
        for (path, durable_size), fraction in zip(sorted(durable.items()),
                                                  cut_fractions * 8, strict=False):
            size = os.path.getsize(path)
            if power_loss and size > durable_size:
                cut = durable_size + int((size - durable_size) * fraction)
                os.truncate(path, cut)
                if garbage:
                    with open(path, "ab") as file:
                        file.write(garbage)
        self.log = self._open()
        note(f"crash (power loss {power_loss}): {self.log.recovery}")
        leo = self.log.log_end_offset
        kept = sum(1 for b in self.twin.batches if parse_header(b).next_offset <= leo)
        must_keep = sum(
            1 for b in self.twin.batches
            if parse_header(b).next_offset <= self.twin.durable_offset
        )
        assert kept >= must_keep, (
            f"recovery lost durable data: log ends at {leo}, durable up to "
            f"{self.twin.durable_offset}")
        if not power_loss:
            assert kept == len(self.twin.batches), "a process crash lost written data"
        log_start = self.twin.log_start
        self.twin.keep_prefix(kept)
        self.twin.log_start = min(log_start, self.twin.leo)
        if not self.twin.visible():
            # nothing readable survived; batches below the log start may be gone from disk
            self.twin.batches.clear()
            self.twin.empty_leo = leo
            self.twin.log_start = min(log_start, leo)
            # keep_prefix() counted the old empty leo as durable; nothing survives above
            # the log's new end (as NaiveLog.truncate_to clamps it)
            self.twin.durable_offset = min(self.twin.durable_offset, leo)
        # contents_match then checks that what remains is exactly that prefix

    # -- invariants ---------------------------------------------------------------------------
    @invariant()
    def offsets_match(self):
        assert self.log.log_end_offset == self.twin.leo, (
            f"leo {self.log.log_end_offset} != twin {self.twin.leo}")
        assert self.log.log_start_offset == self.twin.log_start

    @invariant()
    def files_are_whole(self):
        problems = self.log.verify()
        assert not problems, problems

    @invariant()
    def contents_match(self):
        stored = [bytes(b) for _, b in self.log.iter_batches(self.twin.log_start)]
        assert stored == self.twin.visible(), "stored batches differ from the twin"

    @invariant()
    def whole_log_counted(self):
        """bytes_between over the whole log, as count_bytes at its two ends: from the log start
        exactly the visible batches, from offset 0 (below the first segment once retention
        deleted some) at least those."""
        log_start, leo = self.twin.log_start, self.twin.leo
        visible = self.twin.bytes_between(log_start, leo)
        assert self.log.bytes_between(log_start, leo) == visible
        assert self.log.bytes_between(0, leo) >= visible, "a count from 0 left batches out"

    @invariant()
    def epochs_match(self):
        if self.check_epochs:
            problem = self.twin.epoch_cache_problem(list(self.log.epochs.entries))
            assert problem is None, problem

    @invariant()
    def segment_bases_are_the_segments(self):
        """The base offsets reads bisect (segment_bases) are the segments', one each, in order."""
        segments = getattr(self.log, "segments", None)
        if segments is not None:
            assert self.log.segment_bases == tuple(s.base_offset for s in segments)

    @invariant()
    def durable_within_log(self):
        assert 0 <= self.log.flushed_offset <= self.log.log_end_offset
        # a roll flushes the segment it closes: nothing below the active segment is unflushed
        # (what lets a roll move the recovery point to the new segment's base, as Kafka's does)
        segments = getattr(self.log, "segments", None)
        if segments is not None:
            assert self.log.flushed_offset >= segments[-1].base_offset

    @invariant()
    def segment_times_match(self):
        """Each segment's largest timestamp (what time retention and time-based rolls judge it
        by) is the largest of its batches', whichever path set it: appends, or the tail state
        rebuilt from the time index and the batches after its last entry (a clean restart, a
        truncation). Only segments wholly above the log start: the twin may have forgotten
        batches below it that the files still hold."""
        segments = getattr(self.log, "segments", None)
        if segments is None:
            return
        bases = [s.base_offset for s in segments] + [1 << 62]
        for segment, end in zip(segments, bases[1:], strict=False):
            if segment.base_offset < self.twin.log_start:
                continue
            stamps = [parse_header(b).max_timestamp for b in self.twin.batches
                      if segment.base_offset <= parse_header(b).base_offset < end]
            expected = max(stamps, default=NO_TIMESTAMP)
            assert segment.max_timestamp == expected, (
                f"segment {segment.base_offset}: largest timestamp {segment.max_timestamp}, "
                f"its batches' {expected}")
