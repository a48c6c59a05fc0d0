"""Small helpers over impl/protocol/records/ for the core: batch positions and sequences."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol import records
from kafkaref.impl.protocol.records import BatchHeader


def positioned_headers(data) -> tuple[ErrorCode, list[tuple[int, BatchHeader]]]:
    """(error, [(byte position, header)]) for back-to-back batches; sizes checked only."""
    error, views = records.split_batches(data)
    out, position = [], 0
    for view in views:
        out.append((position, records.parse_header(view)))
        position += len(view)
    return error, out


def last_sequence(header: BatchHeader) -> int:
    if header.base_sequence < 0:
        return -1
    return (header.base_sequence + header.last_offset_delta) % (records.INT32_MAX + 1)
