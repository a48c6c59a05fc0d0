"""Fields the CRC does not cover, damaged so the rest still checks: a batch Length reaching past
the file end, and an offset index entry naming another batch's position.

A batch's CRC covers Attributes to the end, not BaseOffset, Length or PartitionLeaderEpoch, and
the index has no checksum at all; random damage (test_storage_corruption.py) seldom makes such a
field plausible. Both were found by mutation testing (docs/mutation.md, survivors 00052 and
00053): with the recovery scan's `or position + size > file_size` read as `and`, a last batch
whose Length grew by a few bytes passed (the CRC ran over the bytes present, which are the whole
batch) and recovery grew the file with zeros; with the index check negated, a lookup trusted an
entry pointing at a later batch and a read skipped records."""

import os
import struct
import tempfile

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch, parse_header, split_batches
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.impl.storage.index import ENTRY
from kafkaref.properties.storage_machine import scratch_dir

LENGTH_POS = 8  # BaseOffset (int64), then Length (int32)
CONFIG = LogConfig(index_interval_bytes=1, retention_ms=-1)  # an index entry per batch


def _write(directory: str, batches: int) -> list[bytes]:
    log = Log(directory, CONFIG, clock_ms=lambda: 0)
    for i in range(batches):
        records = [(b"k%d" % i, b"v" * (5 + i), (), 1_000 + i)] * (1 + i % 3)
        assert log.append_as_leader(build_batch(records), 0).error == ErrorCode.none
    log.flush()
    written = [raw for _, raw in log.iter_batches()]
    log.crash()
    return written


def _only(directory: str, suffix: str) -> str:
    [name] = [n for n in os.listdir(directory) if n.endswith(suffix)]
    return os.path.join(directory, name)


@given(batches=st.integers(1, 6), grown=st.integers(1, 64))
def test_recovery_cuts_a_last_batch_whose_length_reaches_past_the_file(batches, grown):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        written = _write(directory, batches)
        segment = _only(directory, ".log")
        size = os.path.getsize(segment)
        last = size - len(written[-1])
        with open(segment, "r+b") as file:
            file.seek(last + LENGTH_POS)
            (length,) = struct.unpack(">i", file.read(4))
            file.seek(last + LENGTH_POS)
            file.write(struct.pack(">i", length + grown))
        reopened = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            assert [raw for _, raw in reopened.iter_batches()] == written[:-1]
            assert os.path.getsize(segment) == last  # cut there, never grown
        finally:
            reopened.close()


@given(batches=st.integers(4, 8), data=st.data())
def test_a_read_does_not_trust_an_index_entry_naming_a_later_batch(batches, data):
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        written = _write(directory, batches)
        log = Log(directory, CONFIG, clock_ms=lambda: 0)  # recovered: an entry per batch
        log.close()
        index = _only(directory, ".index")
        with open(index, "rb") as file:
            entries = [ENTRY.unpack(chunk) for chunk in iter(lambda: file.read(ENTRY.size), b"")]
        starts = [sum(map(len, written[:i])) for i in range(len(written))]
        # entry j keeps its offset but names a later batch's start, entry j + 1 gone: still
        # growing, still inside the file, the last entry intact, so the index loads; only the
        # batch found at the position can tell that the entry is wrong
        j = data.draw(st.integers(0, len(entries) - 3), label="entry")
        later = [start for start in starts if entries[j][1] < start < entries[j + 2][1]]
        entries = entries[:j] + [(entries[j][0], data.draw(st.sampled_from(later), label="position"))] \
            + entries[j + 2:]
        with open(index, "wb") as file:
            file.write(b"".join(ENTRY.pack(*entry) for entry in entries))
        reopened = Log(directory, CONFIG, clock_ms=lambda: 0)
        try:
            target = reopened.log_start_offset + entries[j][0]  # one segment, based at 0
            _, data_read = split_batches(reopened.read(target, 1 << 20))
            first = parse_header(data_read[0])
            assert first.base_offset <= target <= first.last_offset
        finally:
            reopened.close()
