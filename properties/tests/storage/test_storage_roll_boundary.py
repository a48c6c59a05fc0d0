"""Where a segment ends by size: Kafka's shouldRoll rolls when the batch would take the segment
past segment.bytes (`size > maxSegmentBytes - batchSize`), so a segment may fill to exactly
segment.bytes and the next batch starts a new one. Found by mutation testing
(docs/mutation.md): `>` read as `>=` rolled one batch early and no test filled a segment
exactly."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import INT32_MAX, build_batch, stamped
from kafkaref.impl.storage import Log, LogConfig


@pytest.mark.parametrize("per_segment", [1, 2, 4])
@pytest.mark.parametrize("extra", [-1, 0, 1])  # segment.bytes a byte short of, at, past k batches
def test_a_segment_fills_to_exactly_segment_bytes(tmp_path, per_segment, extra):
    batch = build_batch([(None, b"v" * 30, (), 1)])
    segment_bytes = per_segment * len(batch) + extra
    log = Log(str(tmp_path), LogConfig(segment_bytes=segment_bytes),
              clock_ms=lambda: 0)
    try:
        for _ in range(2 * per_segment + 1):
            assert log.append_as_leader(batch, 0).error == ErrorCode.none
        fits = per_segment if extra >= 0 else max(1, per_segment - 1)  # a lone batch always fits
        assert log.segment_bases[1] == fits
    finally:
        log.close()


def test_copied_batches_roll_only_when_their_last_offset_leaves_int32(tmp_path):
    """A follower's copies (stamped batches, today's timestamps) share a segment until a batch's
    last offset no longer fits an int32 from the segment's base (Kafka's
    canConvertToRelativeOffset). Found by mutation testing: the check reading another header
    field than LastOffsetDelta rolled every copy with a real timestamp."""
    now_ms = 1_764_000_000_000
    log = Log(str(tmp_path), LogConfig(), clock_ms=lambda: now_ms)
    try:
        for base in (0, 1, 2):
            copy = stamped(build_batch([(None, b"v", (), now_ms)] * 2), 2 * base, 0)
            assert log.append(bytes(copy)).error == ErrorCode.none
        assert log.segment_bases == (0,)
        edge = stamped(build_batch([(None, b"v", (), now_ms)] * 2), INT32_MAX - 1, 0)
        assert log.append(bytes(edge)).error == ErrorCode.none  # last offset INT32_MAX: fits
        assert log.segment_bases == (0,)
        past = stamped(build_batch([(None, b"v", (), now_ms)] * 2), INT32_MAX + 1, 0)
        assert log.append(bytes(past)).error == ErrorCode.none  # last offset past it: rolls
        assert log.segment_bases == (0, INT32_MAX + 1)
    finally:
        log.close()
