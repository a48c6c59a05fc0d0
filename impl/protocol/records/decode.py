"""Decoding a record batch into its records: decode_batch (Record objects, for the broker and
tests) and decode_batch_fields (plain tuples, for consumers). The unrolled fast path
(_fast_record, the common record shape read inline) stands next to its naive twin
(_decode_record, every record shape); decode_batch_fields falls back to the twin for any record
the fast path does not take, and gives the same answers as decode_batch (property-tested in
properties/tests/test_records_fast_twin.py).

Decoders never raise on bad input bytes: they return a value carrying a kio ErrorCode.
"""

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.limits import DECOMPRESSED_MAX_BYTES
from kafkaref.impl.protocol.records.checks import check_batch
from kafkaref.impl.protocol.records.layout import (
    CODECS,
    BatchHeader,
    DecodedBatch,
    Record,
    parse_header,
    records_body,
)
from kafkaref.impl.protocol.varint import VARINT_BYTES_MAX, decode_varint


def decode_batch(buf, decompressed_bytes_max: int = DECOMPRESSED_MAX_BYTES) -> DecodedBatch:
    """Check one batch and decode all its records (decompressing if needed)."""
    error = check_batch(buf)
    if error != ErrorCode.none:
        return DecodedBatch(error)
    header = parse_header(buf)
    if header.compression not in CODECS:
        return DecodedBatch(ErrorCode.unsupported_compression_type, header)
    body = records_body(buf, header, decompressed_bytes_max)
    if isinstance(body, ErrorCode):
        return DecodedBatch(body, header)
    records = []
    pos = 0
    for _ in range(header.records_count):
        decoded = _decode_record(body, pos, header)
        if decoded is None:
            return DecodedBatch(ErrorCode.corrupt_message, header)
        record, pos = decoded
        records.append(record)
    if pos != len(body):
        return DecodedBatch(ErrorCode.corrupt_message, header)
    return DecodedBatch(ErrorCode.none, header, tuple(records))


def decode_batch_fields(buf, decompressed_bytes_max: int = DECOMPRESSED_MAX_BYTES):
    """decode_batch without Record objects: (error, header, [(offset, timestamp, key, value,
    headers), ...]); the same error, header and record fields as decode_batch on every input
    (property-tested). For consumers: building a frozen Record per record cost about a third
    of decode_batch. Records of the common shape (one-byte varints but for a one- or two-byte
    length and value length, no headers) are read inline; any other record, or one that does
    not parse inline, goes through _decode_record."""
    error = check_batch(buf)
    if error != ErrorCode.none:
        return error, None, []
    header = parse_header(buf)
    if header.compression not in CODECS:
        return ErrorCode.unsupported_compression_type, header, []
    body = records_body(buf, header, decompressed_bytes_max)
    if isinstance(body, ErrorCode):
        return body, header, []
    if not isinstance(body, bytes):  # one copy, so keys and values are plain bytes slices
        body = bytes(body)
    out: list = []
    append = out.append
    base_offset, base_ts = header.base_offset, header.base_timestamp
    log_append = header.is_log_append_time
    size, pos = len(body), 0
    for _ in range(header.records_count):
        fields = _fast_record(body, pos, size)
        if fields is None:
            decoded = _decode_record(body, pos, header)
            if decoded is None:
                return ErrorCode.corrupt_message, header, []
            r, pos = decoded
            append((r.offset, r.timestamp, r.key, r.value, r.headers))
            continue
        ts_delta, offset_delta, key, value, pos = fields
        append((base_offset + offset_delta,
                header.max_timestamp if log_append else base_ts + ts_delta, key, value, ()))
    if pos != size:
        return ErrorCode.corrupt_message, header, []
    return ErrorCode.none, header, out


def _fast_record(body, pos: int, size: int):
    """(timestamp delta, offset delta, key, value, next position) of a common-shape record
    at pos (every varint one or two bytes, no headers); None for anything else (the caller
    then decodes it the general way, which also finds it corrupt if it is). Unrolled: this
    runs once per consumed record."""
    if pos + 7 > size:
        return None
    b = body[pos]
    if b < 0x80:
        p = pos + 1
    elif body[pos + 1] < 0x80:
        b, p = (b & 0x7F) | (body[pos + 1] << 7), pos + 2
    else:
        return None
    end = p + ((b >> 1) ^ -(b & 1))
    if end < p + 6 or end > size:
        return None
    ts = body[p + 1]  # p is at the attributes byte
    if ts < 0x80:
        p += 2
    elif body[p + 2] < 0x80:
        ts, p = (ts & 0x7F) | (body[p + 2] << 7), p + 3
    else:
        return None
    od = body[p]
    if od < 0x80:
        p += 1
    elif body[p + 1] < 0x80:
        od, p = (od & 0x7F) | (body[p + 1] << 7), p + 2
    else:
        return None
    if p + 2 > end:
        return None
    n = body[p]
    if n < 0x80:
        p += 1
    elif body[p + 1] < 0x80:
        n, p = (n & 0x7F) | (body[p + 1] << 7), p + 2
    else:
        return None
    n = (n >> 1) ^ -(n & 1)
    if n == -1:
        key = None
    elif n < 0 or p + n + 2 > end:
        return None
    else:
        key, p = body[p : p + n], p + n
    n = body[p]
    if n < 0x80:
        p += 1
    elif body[p + 1] < 0x80:
        n, p = (n & 0x7F) | (body[p + 1] << 7), p + 2
    else:
        return None
    n = (n >> 1) ^ -(n & 1)
    if n == -1:
        value = None
    elif n < 0 or p + n >= end:
        return None
    else:
        value, p = body[p : p + n], p + n
    if p + 1 != end or body[p] != 0:  # exactly a zero header count left
        return None
    return (ts >> 1) ^ -(ts & 1), (od >> 1) ^ -(od & 1), key, value, end


def _decode_bytes(body, pos: int, end: int):
    decoded = decode_varint(body, pos, VARINT_BYTES_MAX)
    if decoded is None:
        return None
    length, pos = decoded
    if length == -1:
        return None, pos
    if length < 0 or pos + length > end:
        return None
    return bytes(body[pos : pos + length]), pos + length


def _decode_record(body, pos: int, header: BatchHeader):
    """Decode one record at pos; None if malformed in any way."""
    decoded = decode_varint(body, pos, VARINT_BYTES_MAX)
    if decoded is None:
        return None
    length, pos = decoded
    end = pos + length
    if length < 1 or end > len(body):
        return None
    attributes = body[pos]
    fields = []
    pos += 1
    for bytes_max in (10, VARINT_BYTES_MAX):  # timestampDelta varlong, offsetDelta varint
        decoded = decode_varint(body, pos, bytes_max)
        if decoded is None:
            return None
        fields.append(decoded[0])
        pos = decoded[1]
    timestamp_delta, offset_delta = fields
    key_value = []
    for _ in range(2):
        decoded = _decode_bytes(body, pos, end)
        if decoded is None:
            return None
        key_value.append(decoded[0])
        pos = decoded[1]
    headers = _decode_headers(body, pos, end)
    if headers is None:
        return None
    headers, pos = headers
    if pos != end:
        return None
    timestamp = header.base_timestamp + timestamp_delta
    if header.is_log_append_time:
        timestamp = header.max_timestamp
    record = Record(
        offset=header.base_offset + offset_delta,
        timestamp=timestamp,
        key=key_value[0],
        value=key_value[1],
        headers=headers,
        attributes=attributes,
    )
    return record, end


def _decode_headers(body, pos: int, end: int):
    decoded = decode_varint(body, pos, VARINT_BYTES_MAX)
    if decoded is None or decoded[0] < 0 or decoded[0] > end - decoded[1]:
        return None
    count, pos = decoded
    headers = []
    for _ in range(count):
        key = _decode_bytes(body, pos, end)
        if key is None or key[0] is None:
            return None
        value = _decode_bytes(body, key[1], end)
        if value is None:
            return None
        # Java decodes header keys leniently (malformed UTF-8 becomes U+FFFD); so do we.
        headers.append((key[0].decode("utf-8", errors="replace"), value[0]))
        pos = value[1]
    return tuple(headers), pos
