"""An offset index whose entries point between batches (a damaged file that still passes the
load check: entries growing, inside the log, the last one right) never changes what a read
returns: the segment
checks an entry against the batch found there before trusting it. Found by mutation testing
(docs/mutation.md): the check negated in the fetch's byte-limit lookup passed every storage
test, which never read through a damaged index."""

import os
import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig

ENTRY = struct.Struct(">ii")


def reads(log: Log, limits) -> list:
    answers = []
    for offset in range(log.log_end_offset):
        for max_bytes in limits:
            with log.read_slice(offset, max_bytes, min_one=False) as found:
                answers.append((found.error, found.first_offset, found.next_offset,
                                found.read_bytes()))
    return answers


def shift_index_entries(directory: str, by: int) -> int:
    """Move every entry but the last of every .index file `by` bytes later (the last is what the
    load's sanity check reads, as Kafka's); returns how many moved."""
    moved = 0
    for name in os.listdir(directory):
        if not name.endswith(".index"):
            continue
        path = os.path.join(directory, name)
        with open(path, "rb") as file:
            data = file.read()
        entries = [ENTRY.unpack_from(data, i) for i in range(0, len(data) - 7, 8)]
        with open(path, "wb") as file:
            for relative, position in entries[:-1]:
                file.write(ENTRY.pack(relative, position + by))
            file.write(b"".join(ENTRY.pack(*entry) for entry in entries[-1:]))
        moved += max(0, len(entries) - 1)
    return moved


@settings(max_examples=10)  # each example writes, closes and reopens a log
@given(sizes=st.lists(st.integers(1, 300), min_size=3, max_size=12), by=st.integers(1, 40))
def test_a_damaged_offset_index_never_changes_a_read(tmp_path_factory, sizes, by):
    directory = str(tmp_path_factory.mktemp("log"))
    config = LogConfig(index_interval_bytes=1, retention_ms=-1)
    log = Log(directory, config, clock_ms=lambda: 0)
    for size in sizes:
        assert log.append_as_leader(build_batch([(None, b"v" * size, (), 1)]), 0).error == (
            ErrorCode.none)
    limits = (0, 90, 200, 400, 1 << 20)
    expected = reads(log, limits)
    log.close()  # writes the index entries still in memory
    with open(os.path.join(directory, "00000000000000000000.index"), "rb") as file:
        intact = file.read()
    assert shift_index_entries(directory, by) > 0
    reopened = Log(directory, config, clock_ms=lambda: 0)
    try:
        loaded = reopened.active_segment.index
        assert len(loaded) * 8 < len(intact) or loaded.positions[0] != ENTRY.unpack_from(
            intact, 0)[1], "the damaged index was loaded, not rebuilt"
        assert reads(reopened, limits) == expected
    finally:
        reopened.close()
