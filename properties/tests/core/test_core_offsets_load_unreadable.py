"""Loading an offsets partition skips a batch whose records cannot be read and goes on to the
end of the log: the coordinator's cache is then what the readable batches say, and loading
ends (COORDINATOR_LOAD_IN_PROGRESS would otherwise be answered for the partition's groups
forever). A property over logs mixing commits and unreadable batches (frame and CRC intact,
records not: the log's own checks let them in), loaded in chunks of one batch or of many.

Found by mutation testing (docs/mutation.md, session 79fa682's 00039, on a line no core test
ran): the loop read such a batch without moving past it, so a log ending in one never finished
loading, and `continue` there changed to `break` stopped at the first one."""

import struct

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.committed_offsets import CommittedOffsets
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.offsets_topic import CommittedOffset, OffsetKey, encode_key, encode_value
from kafkaref.impl.protocol.crc import CRC_POS, compute_crc_of_parts
from kafkaref.impl.protocol.records import HEADER_SIZE, RECORDS_COUNT_POS, build_batch

LOAD_STEPS_MAX = 200  # far more chunks than any log here has batches


def committed(offset: int) -> CommittedOffset:
    return CommittedOffset(offset, -1, "", 1000)


def commit_batch(commits: list[tuple[int, int]]) -> bytes:
    """One batch of commits of group "g", topic "t": (partition, offset) each."""
    return build_batch([(encode_key(OffsetKey("g", "t", p)), encode_value(committed(o)),
                         (), 1000) for p, o in commits])


def unreadable(commits: list[tuple[int, int]]) -> bytes:
    """A commit batch announcing one record more than it holds, its CRC made valid again."""
    batch = bytearray(commit_batch(commits))
    count = struct.unpack_from(">i", batch, RECORDS_COUNT_POS)[0]
    struct.pack_into(">i", batch, RECORDS_COUNT_POS, count + 1)
    crc = compute_crc_of_parts(batch[:HEADER_SIZE], batch[HEADER_SIZE:])
    struct.pack_into(">I", batch, CRC_POS, crc)
    return bytes(batch)


batches = st.lists(st.tuples(
    st.booleans(),  # readable
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 99)), min_size=1, max_size=3)),
    min_size=1, max_size=8)


@given(batches, st.sampled_from([1, 100, 1 << 20]))
def test_a_load_skips_unreadable_batches_and_ends(log_batches, chunk_bytes):
    log = MemoryLog()
    expected = {}
    for readable, commits in log_batches:
        data = commit_batch(commits) if readable else unreadable(commits)
        assert log.append_as_leader(data, 0).error == ErrorCode.none
        if readable:
            expected.update({("t", p): committed(o) for p, o in commits})
    cache = CommittedOffsets(chunk_bytes=chunk_bytes)
    cache.lead({0: 0}, lambda index: log)
    for _ in range(LOAD_STEPS_MAX):
        if cache.status(0) == ErrorCode.none:
            break
        cache.load_step(lambda index: log)
    assert cache.status(0) == ErrorCode.none, "loading never ended"
    assert cache.group(0, "g") == expected
