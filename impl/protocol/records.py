"""Record batch v2 (magic 2): the unit Kafka stores on disk and sends on the wire.

Layout (big-endian, 61-byte header, see KAFKA_SEMANTICS.md):

    BaseOffset int64 | Length int32 | PartitionLeaderEpoch int32 | Magic int8 | CRC uint32 |
    Attributes int16 | LastOffsetDelta int32 | BaseTimestamp int64 | MaxTimestamp int64 |
    ProducerId int64 | ProducerEpoch int16 | BaseSequence int32 | RecordsCount int32 | Records

Length counts the bytes after itself (batch size - 12). The CRC-32C covers Attributes to the end, so
a broker can rewrite BaseOffset and PartitionLeaderEpoch in place (stamp_batch) without
recomputing it. A record inside is

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    (headerKeyLength varint | headerKey utf-8 | headerValueLength varint | headerValue)*

with -1 lengths meaning null. When the batch is compressed, everything after RecordsCount is one
compressed blob.

Functions here never raise on bad input bytes: checks return a kio ErrorCode (ErrorCode.none when
fine), decoders return a value carrying an ErrorCode. Only programming errors (building a batch from
impossible arguments) raise.
"""

import struct
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import attrs
import crc32c
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.compression import Compression, CompressionError, compress, decompress
from kafkaref.impl.protocol.varint import (
    VARINT_BYTES_MAX,
    decode_unsigned,
    decode_varint,
    encode_varint,
)

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # BaseOffset + Length: the bytes Length does not count
MAGIC_V2 = 2

BASE_OFFSET_POS = 0
LENGTH_POS = 8
PARTITION_LEADER_EPOCH_POS = 12
MAGIC_POS = 16
CRC_POS = 17
ATTRIBUTES_POS = 21  # the CRC covers from here to the end of the batch
RECORDS_COUNT_POS = 57
RECORDS_POS = HEADER_SIZE

COMPRESSION_MASK = 0x07
LOG_APPEND_TIME_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

INT32_MAX = (1 << 31) - 1
# Bound on a decompressed batch body: Kafka's default max.message.bytes is about 1 MiB compressed;
# 64 MiB leaves room for high compression ratios while a bomb still cannot exhaust memory.
DECOMPRESSED_BYTES_MAX = 64 * 1024 * 1024

_OFFSET_LENGTH = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")


class BatchHeader(NamedTuple):
    """The 61-byte header of a v2 batch, parsed; says nothing about whether the batch is valid.

    A NamedTuple rather than a frozen attrs class: it is built once per batch on every append,
    read and recovery step, and a tuple is several times cheaper to create. Still immutable."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size_bytes(self) -> int:
        """Size of the whole batch on disk / on the wire."""
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """The codec number (bits 0-2); may be outside Compression for a bad batch."""
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & LOG_APPEND_TIME_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)


@attrs.frozen
class NewRecord:
    """A record to put into a batch (what a producer sends). timestamp None = the batch's."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None


@attrs.frozen
class Record:
    """A record decoded from a batch, with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


@attrs.frozen
class DecodedBatch:
    """Result of decode_batch: error is ErrorCode.none exactly when header and records are set."""

    error: ErrorCode
    header: BatchHeader | None = None
    records: tuple[Record, ...] = ()


# ---------------------------------------------------------------------------------------------
# Header access and in-place stamping


def parse_header(buf, pos: int = 0) -> BatchHeader | None:
    """Parse the header at buf[pos:]; None if fewer than 61 bytes remain."""
    if len(buf) - pos < HEADER_SIZE:
        return None
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def peek_offset_and_size(buf, pos: int = 0) -> tuple[int, int] | None:
    """(base_offset, whole batch size) from the first 12 bytes at pos; None if too short."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    base_offset, length = _OFFSET_LENGTH.unpack_from(buf, pos)
    return base_offset, length + LOG_OVERHEAD


def compute_crc(buf) -> int:
    """CRC-32C of a whole batch's covered bytes (Attributes to the end)."""
    return crc32c.crc32c(memoryview(buf)[ATTRIBUTES_POS:])


def stamp_batch(buf: bytearray | memoryview, base_offset: int, partition_leader_epoch: int) -> None:
    """Rewrite BaseOffset and PartitionLeaderEpoch in place; the CRC stays valid (not covered)."""
    _INT64.pack_into(buf, BASE_OFFSET_POS, base_offset)
    _INT32.pack_into(buf, PARTITION_LEADER_EPOCH_POS, partition_leader_epoch)


def stamped(buf, base_offset: int, partition_leader_epoch: int) -> bytearray:
    """A stamped copy of a batch given as immutable bytes."""
    out = bytearray(buf)
    stamp_batch(out, base_offset, partition_leader_epoch)
    return out


# ---------------------------------------------------------------------------------------------
# Checks


def check_batch(buf) -> ErrorCode:
    """Frame-level check of exactly one batch: sizes, magic, CRC, header sanity. Cheap.

    This is what storage runs on every append and on recovery; it does not look at records.
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
    if crc32c.crc32c(memoryview(buf)[ATTRIBUTES_POS:]) != crc:
        return ErrorCode.corrupt_message, None
    if header[12] < 0 or last_offset_delta < 0:
        return ErrorCode.corrupt_message, None
    if base_offset < 0 or base_offset > (1 << 63) - 1 - last_offset_delta:
        return ErrorCode.corrupt_message, None
    return ErrorCode.none, header


def base_offset_of(buf) -> int:
    """BaseOffset of the batch at the start of buf (which must hold at least 8 bytes)."""
    return _INT64.unpack_from(buf, BASE_OFFSET_POS)[0]


def validate_batch(
    buf,
    *,
    from_client: bool = True,
    decompressed_bytes_max: int = DECOMPRESSED_BYTES_MAX,
) -> ErrorCode:
    """Full validation of one batch as a broker does on produce: frame, codec and every record.

    from_client additionally demands what producers must send: base offset 0, at least one
    record, offset deltas 0..n-1 and LastOffsetDelta = n - 1, and no control batches.
    """
    error = check_batch(buf)
    if error != ErrorCode.none:
        return error
    header = parse_header(buf)
    if header.compression not in _CODECS:
        return ErrorCode.unsupported_compression_type
    if from_client:
        if header.base_offset != 0 or header.records_count == 0 or header.is_control:
            return ErrorCode.invalid_record
        if header.last_offset_delta != header.records_count - 1:
            return ErrorCode.invalid_record
    body = _records_body(buf, header, decompressed_bytes_max)
    if isinstance(body, ErrorCode):
        return body
    return _walk_records(body, header.records_count, sequential=from_client)


def split_batches(buf, *, allow_partial_tail: bool = False) -> tuple[ErrorCode, list[memoryview]]:
    """Cut a buffer of back-to-back batches (a produce or fetch records field) into batches.

    Only sizes are checked here (run check_batch on each). A trailing partial batch is dropped when
    allow_partial_tail (fetch responses may end mid-batch), else it is CORRUPT_MESSAGE.
    """
    view = memoryview(buf)
    end = len(view)
    if end >= LOG_OVERHEAD and _INT32.unpack_from(view, LENGTH_POS)[0] + LOG_OVERHEAD == end:
        if end < HEADER_SIZE:
            return ErrorCode.corrupt_message, []
        return ErrorCode.none, [view]  # the common case: exactly one batch
    batches = []
    pos = 0
    while pos < end:
        peeked = peek_offset_and_size(view, pos)
        if peeked is not None and peeked[1] < HEADER_SIZE:
            return ErrorCode.corrupt_message, batches
        if peeked is None or pos + peeked[1] > len(view):
            return (ErrorCode.none if allow_partial_tail else ErrorCode.corrupt_message), batches
        batches.append(view[pos : pos + peeked[1]])
        pos += peeked[1]
    return ErrorCode.none, batches


# ---------------------------------------------------------------------------------------------
# Decoding


def decode_batch(buf, decompressed_bytes_max: int = DECOMPRESSED_BYTES_MAX) -> DecodedBatch:
    """Check one batch and decode all its records (decompressing if needed)."""
    error = check_batch(buf)
    if error != ErrorCode.none:
        return DecodedBatch(error)
    header = parse_header(buf)
    if header.compression not in _CODECS:
        return DecodedBatch(ErrorCode.unsupported_compression_type, header)
    body = _records_body(buf, header, decompressed_bytes_max)
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


def decode_batch_fields(buf, decompressed_bytes_max: int = DECOMPRESSED_BYTES_MAX):
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
    if header.compression not in _CODECS:
        return ErrorCode.unsupported_compression_type, header, []
    body = _records_body(buf, header, decompressed_bytes_max)
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


def _records_body(buf, header: BatchHeader, decompressed_bytes_max: int):
    raw = memoryview(buf)[RECORDS_POS:]
    if header.compression == Compression.none:
        return raw
    try:
        return decompress(Compression(header.compression), raw, decompressed_bytes_max)
    except CompressionError:
        return ErrorCode.corrupt_message


def _walk_records(body, count: int, sequential: bool) -> ErrorCode:
    """Check record framing without building objects: lengths tile the body exactly, counts
    match, offset deltas run 0..n-1 when sequential; key, value and headers parse.

    This runs for every record of every produced batch (Kafka's LogValidator iterates the
    records of uncompressed v2 batches too), so the common record shape -- one-byte length
    prefixes except a one- or two-byte value length, no headers -- is checked with inline byte
    tests; a record of any other shape is checked by the general code of _walk_records_naive
    (_skip_key_value_headers). Both give the same answer on every input (property-tested)."""
    end = len(body)
    pos = index = next_run_try = 0
    retry, common_misses = _RUN_RETRY_RECORDS, 0
    corrupt = ErrorCode.corrupt_message
    while index < count:
        if index >= next_run_try:
            run = _same_shape_run(body, pos, index, count, sequential)
            if run is not None:
                index += run[0]
                pos += run[0] * run[1]
                continue
            next_run_try = index + retry  # walk records one by one for a while, and after
            retry *= 2  # each miss for twice as long: batches of mixed sizes stay cheap
        if pos >= end:
            return corrupt
        raw = body[pos]  # record length: zigzag varint, at most 5 bytes
        if raw < 0x80:
            pos += 1
        else:
            decoded = decode_unsigned(body, pos, VARINT_BYTES_MAX)
            if decoded is None:
                return corrupt
            raw, pos = decoded
        length = (raw >> 1) ^ -(raw & 1)
        record_end = pos + length
        if length < 3 or record_end > end:  # attributes + two one-byte varints at least
            return corrupt
        cursor = pos + 1  # past the attributes byte
        limit = cursor + 10 if cursor + 10 < record_end else record_end
        while cursor < limit and body[cursor] >= 0x80:  # timestampDelta: varlong, skipped
            cursor += 1
        if cursor >= limit:
            return corrupt
        cursor += 1
        if cursor >= record_end:
            return corrupt
        raw = body[cursor]  # offsetDelta: zigzag varint, at most 5 bytes, inside the record
        if raw < 0x80:
            cursor += 1
        else:
            decoded = decode_unsigned(body, cursor, VARINT_BYTES_MAX)
            if decoded is None or decoded[1] > record_end:
                return corrupt
            raw, cursor = decoded
        if sequential and (raw >> 1) ^ -(raw & 1) != index:
            return ErrorCode.invalid_record
        if common_misses < _COMMON_MISSES_MAX and _common_shape(body, cursor, record_end):
            pass
        elif _skip_key_value_headers(body, cursor, record_end) == record_end:
            common_misses += 1  # records with headers: stop trying the common shape first
        else:
            return corrupt
        pos = record_end
        index += 1
    return ErrorCode.none if pos == end else corrupt


_RUN_MIN_RECORDS = 4
_COMMON_MISSES_MAX = 16
_RUN_RETRY_RECORDS = 32
# Offset delta i as a two-byte zigzag varint, byte by byte, for 64 <= i < 8192.
_OFFSET_DELTA_LOW = bytes(((2 * i) & 0x7F) | 0x80 for i in range(8192))
_OFFSET_DELTA_HIGH = bytes(((2 * i) >> 7) & 0xFF for i in range(8192))


def _same_shape_run(body, pos: int, index: int, count: int, sequential: bool):
    """(k, size) if the k >= 4 records from pos all have the size and the structure of the one
    at pos, in the common shape (see _common_shape), with offset deltas index.. when sequential;
    else None (which says nothing: the record-by-record walk decides then).

    Batches of equal-sized records are the common case, and then every structural byte sits at
    the same place in each record: a column of bytes taken with a stride of the record size.
    Checking those columns with bytes operations (in C) replaces a Python loop per record. Each
    record of an accepted run parses exactly like the first one, which is checked here in full:
    same length prefix, same key and value length prefixes, header count 0 at the end, a
    timestamp delta of the same width (continuation bits checked), offset delta of the same
    width and, when sequential, the exact value."""
    end = len(body)
    if count - index < _RUN_MIN_RECORDS or end - pos < 8:
        return None
    first = body[pos]  # length prefix: one or two bytes
    if first < 0x80:
        prefix, raw = 1, first
    elif body[pos + 1] < 0x80:
        prefix, raw = 2, (first & 0x7F) | (body[pos + 1] << 7)
    else:
        return None
    if raw & 1:
        return None
    size = prefix + (raw >> 1)
    if size - prefix < 3:
        return None
    k = min(count - index, (end - pos) // size)
    cursor = pos + prefix + 1  # past the attributes byte
    ts_start, limit = cursor, min(cursor + 10, pos + size)
    while cursor < limit and body[cursor] >= 0x80:
        cursor += 1
    if cursor >= limit:
        return None
    ts_width = cursor + 1 - ts_start
    cursor += 1
    od_start = cursor
    if cursor + 1 >= pos + size:
        return None
    if body[cursor] < 0x80:
        od_width, k = 1, min(k, 64 - index) if sequential else k
    elif body[cursor + 1] < 0x80:
        od_width, k = 2, min(k, 8192 - index) if sequential else k
    else:
        return None
    if k < _RUN_MIN_RECORDS:
        return None
    cursor += od_width
    record_end = pos + size
    if not _common_shape(body, cursor, record_end):
        return None
    key_start = cursor
    key_byte = body[cursor]
    value_start = key_start + 1 + (0 if key_byte == 1 else key_byte >> 1)
    value_width = 1 if body[value_start] < 0x80 else 2
    structure = (*range(prefix), key_start - pos,
                 *range(value_start - pos, value_start - pos + value_width), size - 1)
    view = memoryview(body)
    while k >= _RUN_MIN_RECORDS:  # the longest run, halving (an odd record ends a run early)
        if _columns_agree(view[pos : pos + k * size], size, k, index, sequential, structure,
                          ts_start - pos, ts_width, od_start - pos, od_width):
            return k, size
        k //= 2
    return None


def _columns_agree(region, size, k, index, sequential, structure, ts, ts_width, od,
                   od_width) -> bool:
    """The column checks of _same_shape_run over the k records in region."""

    def column(offset: int) -> bytes:
        return bytes(region[offset::size])

    def constant(offset: int) -> bool:
        return column(offset) == bytes((region[offset],)) * k

    for offset in structure:
        if not constant(offset):
            return False
    for offset in range(ts, ts + ts_width - 1):
        if min(column(offset)) < 0x80:  # timestamp delta continuation bytes
            return False
    if not column(ts + ts_width - 1).isascii():  # and its last byte
        return False
    if sequential and od_width == 1:
        return column(od) == bytes(range(2 * index, 2 * (index + k), 2))
    if sequential:
        return (column(od) == _OFFSET_DELTA_LOW[index : index + k]
                and column(od + 1) == _OFFSET_DELTA_HIGH[index : index + k])
    if od_width == 1:
        return column(od).isascii()
    return min(column(od)) >= 0x80 and column(od + 1).isascii()


def _common_shape(body, cursor: int, end: int) -> bool:
    """True if key, value and headers at cursor end exactly at end in the common shape: a null
    or short key (one-byte length), a value with a one- or two-byte length, no headers. False
    says nothing: the general check decides then. Never accepts what the general one refuses:
    every position only grows and the last byte must be the header count 0 at end - 1."""
    last = end - 1
    if cursor >= last:
        return False
    byte = body[cursor]  # key length
    if byte == 1:  # -1: null key
        cursor += 1
    elif byte < 0x80 and not byte & 1:
        cursor += 1 + (byte >> 1)
    else:
        return False
    if cursor >= last:
        return False
    byte = body[cursor]  # value length
    if byte < 0x80:
        if byte == 1:
            cursor += 1
        elif byte & 1:
            return False
        else:
            cursor += 1 + (byte >> 1)
    else:
        second = body[cursor + 1]
        raw = (byte & 0x7F) | (second << 7)
        if second >= 0x80 or raw & 1:
            return False
        cursor += 2 + (raw >> 1)
    return cursor == last and body[last] == 0


def _walk_records_naive(body, count: int, sequential: bool) -> ErrorCode:
    """The naive twin of _walk_records (same answers on every input; tests compare them):
    check record framing without building objects: lengths tile the body exactly, counts match,
    offset deltas run 0..n-1 when sequential."""
    end = len(body)
    pos = 0
    for index in range(count):
        shift = raw = 0
        while True:  # record length: zigzag varint, at most 5 bytes
            if pos >= end or shift > 28:
                return ErrorCode.corrupt_message
            byte = body[pos]
            pos += 1
            raw |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        length = (raw >> 1) ^ -(raw & 1)
        record_end = pos + length
        if length < 3 or record_end > end:  # attributes + two one-byte varints at least
            return ErrorCode.corrupt_message
        cursor = pos + 1  # past the attributes byte
        limit = min(cursor + 10, record_end)  # timestampDelta: varlong, skipped
        while cursor < limit and body[cursor] >= 0x80:
            cursor += 1
        if cursor >= limit:
            return ErrorCode.corrupt_message
        cursor += 1
        shift = raw = 0
        while True:  # offsetDelta: zigzag varint, at most 5 bytes
            if cursor >= record_end or shift > 28:
                return ErrorCode.corrupt_message
            byte = body[cursor]
            cursor += 1
            raw |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        if sequential and (raw >> 1) ^ -(raw & 1) != index:
            return ErrorCode.invalid_record
        if _skip_key_value_headers(body, cursor, record_end) != record_end:
            return ErrorCode.corrupt_message
        pos = record_end
    return ErrorCode.none if pos == end else ErrorCode.corrupt_message


def _skip_key_value_headers(body, cursor: int, end: int) -> int:
    """Position after a record's key, value and headers, or -1 if they do not parse."""
    for _ in range(2):  # key, value: length (-1 = null) and bytes
        cursor = _skip_sized(body, cursor, end, nullable=True)
        if cursor < 0:
            return -1
    decoded = decode_varint(body, cursor, VARINT_BYTES_MAX)
    if decoded is None or not 0 <= decoded[0] <= end - decoded[1]:
        return -1
    count, cursor = decoded
    for _ in range(count):
        cursor = _skip_sized(body, cursor, end, nullable=False)  # header key: a string
        if cursor >= 0:
            cursor = _skip_sized(body, cursor, end, nullable=True)
        if cursor < 0:
            return -1
    return cursor


def _skip_sized(body, cursor: int, end: int, nullable: bool) -> int:
    decoded = decode_varint(body, cursor, VARINT_BYTES_MAX)
    if decoded is None:
        return -1
    length, cursor = decoded
    if length == -1 and nullable:
        return cursor
    if length < 0 or cursor + length > end:
        return -1
    return cursor + length


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


# ---------------------------------------------------------------------------------------------
# Building

_CODECS = frozenset(int(codec) for codec in Compression)


def _as_tuple(item) -> tuple:
    """(key, value, headers, timestamp) from a NewRecord or such a tuple."""
    if isinstance(item, NewRecord):
        return item.key, item.value, item.headers, item.timestamp
    key, value, headers, timestamp = item
    return key, value, tuple(headers or ()), timestamp


# Zigzag varints of -1..8191 (null, counts, deltas and lengths up to 8 KiB), encoded once:
# build_batch runs for every batch a producer sends and writes about six varints per record.
_SMALL_VARINT_MIN, _SMALL_VARINT_END = -1, 8192
_SMALL_VARINTS = [encode_varint(v) for v in range(_SMALL_VARINT_MIN, _SMALL_VARINT_END)]


def _varint(value: int) -> bytes:
    if _SMALL_VARINT_MIN <= value < _SMALL_VARINT_END:
        return _SMALL_VARINTS[value + 1]
    return encode_varint(value)


def _encode_nullable(data: bytes | None) -> bytes:
    if data is None:
        return _SMALL_VARINTS[0]
    return _varint(len(data)) + bytes(data)


def encode_record(record: NewRecord, offset_delta: int, timestamp_delta: int) -> bytes:
    """One record's bytes, its length prefix included."""
    return _encode_fields(record.key, record.value, record.headers, offset_delta,
                          timestamp_delta)


def _encode_fields(key, value, headers, offset_delta: int, timestamp_delta: int) -> bytes:
    parts = [
        b"\x00",  # record attributes: unused, always 0
        _varint(timestamp_delta),
        _varint(offset_delta),
        _encode_nullable(key),
        _varint(len(value)) if value is not None else _SMALL_VARINTS[0],
        value if value is not None else b"",
        _varint(len(headers)),
    ]
    for name, header_value in headers:
        parts.append(_encode_nullable(name.encode("utf-8")))
        parts.append(_encode_nullable(header_value))
    body = b"".join(parts)
    return _varint(len(body)) + body


def encode_records_naive(items, deltas, timestamps, first_timestamp: int) -> bytes:
    """The records section of a batch, one record at a time (encode_records' plain twin)."""
    return b"".join(
        _encode_fields(r[0], r[1], r[2], delta, ts - first_timestamp)
        for r, delta, ts in zip(items, deltas, timestamps, strict=True)
    )


def encode_records(items, deltas, timestamps, first_timestamp: int) -> bytes:
    """The records section of a batch: the same bytes as encode_records_naive, faster.

    Every producer batch goes through here (about 1.5 us per record in the naive form, most of
    it in per-record joins and calls). Records without headers whose varints all come from the
    small table are written as pieces of one flat list joined once; any other record is encoded
    by _encode_fields. Property-tested byte for byte against the naive twin."""
    if len(deltas) != len(items) or len(timestamps) != len(items):
        raise ValueError("one offset delta and one timestamp per record")
    small, low, high = _SMALL_VARINTS, _SMALL_VARINT_MIN, _SMALL_VARINT_END
    parts: list = []
    append, extend = parts.append, parts.extend
    for (key, value, headers, _), delta, ts in zip(items, deltas, timestamps, strict=True):
        ts_delta = ts - first_timestamp
        if headers or not (low <= ts_delta < high and low <= delta < high):
            append(_encode_fields(key, value, headers or (), delta, ts_delta))
            continue
        ts_piece, delta_piece = small[ts_delta + 1], small[delta + 1]
        # body: attributes, ts delta, offset delta, key length, key, value length, value, 0
        size = 4 + len(ts_piece) + len(delta_piece)
        if key is None:
            key_piece = b"\x01"  # -1: null
        else:
            key_len = len(key)
            if key_len >= high:
                append(_encode_fields(key, value, (), delta, ts_delta))
                continue
            key_piece = small[key_len + 1]
            size += key_len + len(key_piece) - 1
        if value is None:
            value_piece = b"\x01"
        else:
            value_len = len(value)
            if value_len >= high:
                append(_encode_fields(key, value, (), delta, ts_delta))
                continue
            value_piece = small[value_len + 1]
            size += value_len + len(value_piece) - 1
        if size >= high:
            append(_encode_fields(key, value, (), delta, ts_delta))
            continue
        extend((small[size + 1], b"\x00", ts_piece, delta_piece, key_piece))
        if key:
            append(key)
        append(value_piece)
        if value:
            append(value)
        append(b"\x00")
    return b"".join(parts)


def build_batch(records: Iterable[NewRecord | tuple], **options) -> bytes:
    """Build a v2 batch from records given as NewRecord or (key, value, headers, timestamp) tuples;
    options are build_batch_from_tuples' (compression, base_offset, producer id and epoch, ...).

    Records without a timestamp take base_timestamp; the batch's BaseTimestamp is the first record's.
    offset_deltas (default 0..n-1) lets tests build compacted-looking batches with gaps.
    """
    return build_batch_from_tuples([_as_tuple(item) for item in records], **options)


def build_batch_from_tuples(
    items: list,
    *,
    compression: Compression = Compression.none,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    base_timestamp: int = 0,
    offset_deltas: Sequence[int] | None = None,
) -> bytes:
    """build_batch for records already given as (key, value, headers tuple, timestamp or None)
    tuples (what the producer keeps): skips the per-record normalisation."""
    timestamps = [base_timestamp if r[3] is None else r[3] for r in items]
    first_timestamp = timestamps[0] if timestamps else base_timestamp
    deltas = list(range(len(items))) if offset_deltas is None else list(offset_deltas)
    if len(deltas) != len(items):
        raise ValueError("offset_deltas must have one entry per record")
    body = encode_records(items, deltas, timestamps, first_timestamp)
    if compression != Compression.none:
        body = compress(Compression(compression), body)
    attributes = int(compression) | (TRANSACTIONAL_FLAG if is_transactional else 0)
    attributes |= CONTROL_FLAG if is_control else 0
    header = HEADER.pack(
        base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        deltas[-1] if deltas else 0,
        first_timestamp,
        max(timestamps) if timestamps else base_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(items),
    )
    # CRC of header tail then body, so the body is copied once (into the result), not thrice.
    crc = crc32c.crc32c(body, crc32c.crc32c(memoryview(header)[ATTRIBUTES_POS:]))
    return b"".join((header[:CRC_POS], _UINT32.pack(crc), header[CRC_POS + 4 :], body))
