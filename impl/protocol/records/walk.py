"""The record walk: checks the framing of every record of a batch body without building objects
(lengths tile the body exactly, counts match, offset deltas run 0..n-1 for producer batches;
key, value and headers parse). The unrolled fast path (walk_records, with _same_shape_run and
_common_shape) stands next to its naive twin (walk_records_naive): the same answer on every
input, property-tested in properties/tests/test_records_walk_twin.py.
"""

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.varint import (
    VARINT_BYTES_MAX,
    VARLONG_BYTES_MAX,
    decode_unsigned,
    decode_varint,
)


def walk_records(body, count: int, sequential: bool,
                 timestamp_width: int = VARLONG_BYTES_MAX) -> ErrorCode:  # any width: unchecked
    """Check record framing without building objects: lengths tile the body exactly, counts
    match, offset deltas run 0..n-1 when sequential; key, value and headers parse.

    timestamp_width: the widest timestamp delta (bytes of its varlong) known to keep a record
    within the topic's timestamp bounds (records/timestamps.py); a well-framed body with a
    wider one answers INVALID_TIMESTAMP, meaning "check its timestamps exactly". The widths
    are seen on the way (one comparison per record, one per run of records of one shape), so
    a batch whose timestamps are near its first one costs no decoding.

    This runs for every record of every produced batch (Kafka's LogValidator iterates the
    records of uncompressed v2 batches too), so the common record shape -- one-byte length
    prefixes except a one- or two-byte value length, no headers -- is checked with inline byte
    tests; a record of any other shape is checked by the general code of walk_records_naive
    (_skip_key_value_headers). Both give the same answer on every input (property-tested)."""
    end = len(body)
    pos = index = next_run_try = 0
    retry, common_misses = _RUN_RETRY_RECORDS, 0
    corrupt = ErrorCode.corrupt_message
    widest = 0
    while index < count:
        if index >= next_run_try:
            run = _same_shape_run(body, pos, index, count, sequential)
            if run is not None:
                index += run[0]
                pos += run[0] * run[1]
                if run[2] > widest:
                    widest = run[2]
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
        if cursor - pos > widest:  # its width: from pos + 1 to cursor
            widest = cursor - pos
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
    if pos != end:
        return corrupt
    return ErrorCode.invalid_timestamp if widest > timestamp_width else ErrorCode.none


_RUN_MIN_RECORDS = 4
_COMMON_MISSES_MAX = 16
_RUN_RETRY_RECORDS = 32
# Offset delta i as a two-byte zigzag varint, byte by byte, for 64 <= i < 8192.
_OFFSET_DELTA_LOW = bytes(((2 * i) & 0x7F) | 0x80 for i in range(8192))
_OFFSET_DELTA_HIGH = bytes(((2 * i) >> 7) & 0xFF for i in range(8192))


def _same_shape_run(body, pos: int, index: int, count: int, sequential: bool):
    """(k, size, timestamp delta width) if the k >= 4 records from pos all have the size and the structure of the one
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
            return k, size, ts_width
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


def walk_records_naive(body, count: int, sequential: bool,
                       timestamp_width: int = VARLONG_BYTES_MAX) -> ErrorCode:
    """The naive twin of walk_records (same answers on every input; tests compare them):
    check record framing without building objects: lengths tile the body exactly, counts match,
    offset deltas run 0..n-1 when sequential; INVALID_TIMESTAMP for a well-framed body with a
    timestamp delta wider than timestamp_width bytes."""
    end = len(body)
    pos = 0
    wide = False
    for index in range(count):
        decoded = _read_zigzag(body, pos, end)  # record length
        if decoded is None:
            return ErrorCode.corrupt_message
        length, pos = decoded
        record_end = pos + length
        if length < 3 or record_end > end:  # attributes + two one-byte varints at least
            return ErrorCode.corrupt_message
        cursor = pos + 1  # past the attributes byte
        limit = min(cursor + 10, record_end)  # timestampDelta: varlong, skipped
        while cursor < limit and body[cursor] >= 0x80:
            cursor += 1
        if cursor >= limit:
            return ErrorCode.corrupt_message
        wide = wide or cursor - pos > timestamp_width
        decoded = _read_zigzag(body, cursor + 1, record_end)  # offsetDelta, inside the record
        if decoded is None:
            return ErrorCode.corrupt_message
        offset_delta, cursor = decoded
        if sequential and offset_delta != index:
            return ErrorCode.invalid_record
        if _skip_key_value_headers(body, cursor, record_end) != record_end:
            return ErrorCode.corrupt_message
        pos = record_end
    if pos != end:
        return ErrorCode.corrupt_message
    return ErrorCode.invalid_timestamp if wide else ErrorCode.none


def _read_zigzag(body, pos: int, end: int) -> tuple[int, int] | None:
    """(value, next position) of the zigzag varint (at most 5 bytes) at pos, read byte by byte
    and never at or past end; None if it does not fit. The naive twin's only varint reader."""
    shift = raw = 0
    while True:
        if pos >= end or shift > 28:
            return None
        byte = body[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


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




def null_key_indexes(body, count: int) -> list[int]:
    """Indexes (0-based, in batch order) of the records whose key is null. Meant for a body
    walk_records accepted; on one it did not, the walk stops where a record no longer parses
    (it never raises). Runs only for compacted topics, where Kafka's LogValidator refuses
    keyless records; never on the hot path of other topics. Varints are skipped byte by byte
    (their values do not matter) but the record length and the key length, read whole."""
    found, pos, end = [], 0, len(body)
    try:
        for index in range(count):
            raw = body[pos]  # record length: zigzag varint
            if raw < 0x80:
                length, pos = (raw >> 1) ^ -(raw & 1), pos + 1
            else:
                decoded = _read_zigzag(body, pos, end)
                if decoded is None:
                    break
                length, pos = decoded
            cursor = pos + 1  # past the attributes byte
            while body[cursor] >= 0x80:  # timestampDelta: varlong, skipped
                cursor += 1
            cursor += 1
            while body[cursor] >= 0x80:  # offsetDelta: varint, skipped
                cursor += 1
            cursor += 1
            raw = body[cursor]  # key length: -1 (zigzag 1) when null, any encoding of it
            key = raw if raw < 0x80 else _read_zigzag(body, cursor, end)
            if key == 1 or (isinstance(key, tuple) and key[0] == -1):
                found.append(index)
            pos += length
    except IndexError:  # a body walk_records would refuse: stop where it stops parsing
        pass
    return found
