"""A clean reopen keeps a time index whose closing entry (the segment's largest timestamp) lies
past the last offset index entry: such an entry is normal, not damage, so the segment is not
recovered and the entry is still there.

Segment.load passed the time index `max(next_relative, INT32_MAX)` as its offset bound, which
reads like a slip for `min`: it was not one (with `min`, every clean open of such a segment
recovered it and lost the closing entry; the segment's end is not known when its indexes load).
It was INT32_MAX in disguise, and one short (the check is exclusive: a segment whose last batch
sat at its greatest relative offset was recovered on every clean open). An int32 entry cannot
lie past a segment's range, so the bound is gone: TimeIndex.load refuses negative offsets."""

import struct

from kafkaref.impl.protocol.records import INT32_MAX, build_batch, stamped
from kafkaref.impl.storage import Log, LogConfig

CONFIG = LogConfig(retention_ms=-1)  # index.interval.bytes 4096: no offset index entry here


def test_a_closing_time_index_entry_past_the_offset_index_survives_a_clean_reopen(tmp_path):
    log = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    for i in range(5):
        log.append_as_leader(build_batch([(None, b"v" * 80, (), 1000 + i)]), 0)
    log.close()
    reopened = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    try:
        [segment] = reopened.segments
        assert len(segment.index) == 0
        assert list(segment.timeindex.relative_offsets) == [4]  # the closing entry
        assert reopened.recovery.segments_scanned == 0, reopened.recovery
        assert reopened.offset_for_timestamp(1004)[0] == 4
    finally:
        reopened.close()


def test_a_time_index_entry_at_the_greatest_relative_offset_survives_a_clean_reopen(tmp_path):
    """A segment holds offsets up to base + INT32_MAX (a follower's copy may jump there)."""
    log = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    assert log.append(bytes(stamped(build_batch([(None, b"a", (), 1000)]), 0, 0))).last_offset == 0
    far = stamped(build_batch([(None, b"b", (), 2000)]), INT32_MAX, 0)
    assert log.append(bytes(far)).last_offset == INT32_MAX
    log.close()
    reopened = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    try:
        [segment] = reopened.segments
        assert list(segment.timeindex.relative_offsets) == [INT32_MAX]
        assert reopened.recovery.segments_scanned == 0, reopened.recovery
    finally:
        reopened.close()


def test_a_time_index_entry_below_the_segments_base_is_damage(tmp_path):
    """An entry naming an offset below the segment's base cannot be the log's (Kafka's
    TimeIndex.sanityCheck refuses it too): a clean open recovers the segment instead of
    trusting the index."""
    log = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    for i in range(5):
        log.append_as_leader(build_batch([(None, b"v" * 80, (), 1000 + i)]), 0)
    log.close()
    [path] = tmp_path.glob("*.timeindex")
    data = bytearray(path.read_bytes())
    assert len(data) == 12  # the closing entry only: (1004, 4)
    struct.pack_into(">i", data, 8, -1)
    path.write_bytes(bytes(data))
    reopened = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    try:
        [segment] = reopened.segments
        assert reopened.recovery.segments_scanned == 1, reopened.recovery
        assert all(relative >= 0 for relative in segment.timeindex.relative_offsets)
    finally:
        reopened.close()
