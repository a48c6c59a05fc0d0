"""Checks of one record batch: the frame check storage runs on every append, read and recovery
(sizes, magic, the CRC-32C of impl/protocol/crc.py, header sanity), and the full validation a
broker runs on produce (codec and every record, with the record walk of walk.py).

Checks never raise on bad input bytes: they return a kio ErrorCode (ErrorCode.none when fine).
"""

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.crc import crc_matches
from kafkaref.impl.protocol.limits import DECOMPRESSED_MAX_BYTES
from kafkaref.impl.protocol.records.layout import (
    CODECS,
    HEADER,
    HEADER_SIZE,
    LOG_APPEND_TIME_FLAG,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    parse_header,
    records_body,
)
from kafkaref.impl.protocol.records.timestamps import (
    delta_width,
    out_of_bounds,
    stamped_by_producer_ok,
)
from kafkaref.impl.protocol.records.walk import (
    VARLONG_BYTES_MAX,
    null_key_indexes,
    walk_records,
)


def check_batch(buf) -> ErrorCode:
    """Frame-level check of exactly one batch: sizes, magic, CRC, header sanity. Cheap.

    This is what storage runs on every append and read (recovery runs the same CRC check,
    crc.crc_matches, over mapped file windows); it does not look at records.
    """
    return checked_header(buf)[0]


def checked_header(buf) -> tuple[ErrorCode, BatchHeader | None]:
    """check_batch() and, when the batch passes, its parsed header (one unpack for both: this
    runs once per appended batch)."""
    if len(buf) < HEADER_SIZE:
        return ErrorCode.corrupt_message, None
    header = BatchHeader._make(HEADER.unpack_from(buf))
    base_offset, length, _, magic, crc, _, last_offset_delta = header[:7]
    if length + LOG_OVERHEAD != len(buf) or magic != MAGIC_V2:
        return ErrorCode.corrupt_message, None
    if not crc_matches(buf, crc):
        return ErrorCode.corrupt_message, None
    if header[12] < 0 or last_offset_delta < 0:
        return ErrorCode.corrupt_message, None
    if base_offset < 0 or base_offset > (1 << 63) - 1 - last_offset_delta:
        return ErrorCode.corrupt_message, None
    return ErrorCode.none, header


def validate_batch(
    buf,
    *,
    from_client: bool = True,
    decompressed_bytes_max: int = DECOMPRESSED_MAX_BYTES,
    timestamp_bounds: tuple[int, int] | None = None,
) -> ErrorCode:
    """Full validation of one batch as a broker does on produce: frame, codec and every record.

    from_client additionally demands what producers must send: base offset 0, at least one
    record, offset deltas 0..n-1 and LastOffsetDelta = n - 1, and no control batches.
    timestamp_bounds: a CreateTime topic's (earliest, latest) record timestamp, inclusive
    (timestamps.py): INVALID_TIMESTAMP when a record is outside (after every framing check,
    as Kafka's record errors come after the records parse). None: timestamps not checked.
    """
    error = check_batch(buf)
    if error != ErrorCode.none:
        return error
    header = parse_header(buf)
    if header.compression not in CODECS:
        return ErrorCode.unsupported_compression_type
    if from_client:
        if header.base_offset != 0 or header.records_count == 0 or header.is_control:
            return ErrorCode.invalid_record
        if header.last_offset_delta != header.records_count - 1:
            return ErrorCode.invalid_record
    body = records_body(buf, header, decompressed_bytes_max)
    if isinstance(body, ErrorCode):
        return body
    stamped = header[5] & LOG_APPEND_TIME_FLAG  # attributes
    width = VARLONG_BYTES_MAX  # no bounds, or a batch whose records all read MaxTimestamp
    if timestamp_bounds is not None and not stamped:
        width = delta_width(header[7], timestamp_bounds)  # BaseTimestamp
    error = walk_records(body, header[12], from_client, width)  # RecordsCount
    if error == ErrorCode.invalid_timestamp:  # a delta too wide to tell: decode and look
        refused = out_of_bounds(buf, timestamp_bounds)
        if isinstance(refused, ErrorCode):
            return refused
        return ErrorCode.invalid_timestamp if refused else ErrorCode.none
    if error == ErrorCode.none and stamped and timestamp_bounds is not None and not (
            stamped_by_producer_ok(header, timestamp_bounds)):
        return ErrorCode.invalid_timestamp
    return error


def keyless_records(buf, decompressed_bytes_max: int = DECOMPRESSED_MAX_BYTES):
    """Indexes of the records of one batch that have a null key (decompressed if needed), or
    an ErrorCode if the body cannot be read. For a batch validate_batch accepted (not checked
    again: compacted topics should not pay the walk twice): a compacted topic refuses these
    records (Kafka's LogValidator.validateKey)."""
    error, header = checked_header(buf)
    if error != ErrorCode.none:
        return error
    if header.compression not in CODECS:
        return ErrorCode.unsupported_compression_type
    body = records_body(buf, header, decompressed_bytes_max)
    if isinstance(body, ErrorCode):
        return body
    return null_key_indexes(body, header.records_count)
