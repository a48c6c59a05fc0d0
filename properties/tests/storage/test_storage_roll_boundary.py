"""Where a segment ends by size: Kafka's shouldRoll rolls when the batch would take the segment
past segment.bytes (`size > maxSegmentBytes - batchSize`), so a segment may fill to exactly
segment.bytes and the next batch starts a new one. Found by mutation testing
(docs/mutation.md): `>` read as `>=` rolled one batch early and no test filled a segment
exactly."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
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
