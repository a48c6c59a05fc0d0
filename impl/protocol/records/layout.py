"""Record batch v2 (magic 2): the byte layout, the parsed header, and in-place stamping.

Layout (big-endian, 61-byte header, see docs/semantics.md):

    BaseOffset int64 | Length int32 | PartitionLeaderEpoch int32 | Magic int8 | CRC uint32 |
    Attributes int16 | LastOffsetDelta int32 | BaseTimestamp int64 | MaxTimestamp int64 |
    ProducerId int64 | ProducerEpoch int16 | BaseSequence int32 | RecordsCount int32 | Records

Length counts the bytes after itself (batch size - 12). The CRC-32C (impl/protocol/crc.py) covers
Attributes to the end, so a broker can rewrite BaseOffset and PartitionLeaderEpoch in place
(stamp_batch) without recomputing it; a LogAppendTime topic's leader also rewrites Attributes and
MaxTimestamp, and so the CRC (log_append_time_header). A record inside is

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    (headerKeyLength varint | headerKey utf-8 | headerValueLength varint | headerValue)*

with -1 lengths meaning null. When the batch is compressed, everything after RecordsCount is one
compressed blob.
"""

import struct
from typing import NamedTuple

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.compression import Compression, CompressionError, decompress
from kafkaref.impl.protocol.crc import ATTRIBUTES_POS, CRC_POS, compute_crc_of_parts

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # BaseOffset + Length: the bytes Length does not count
MAGIC_V2 = 2

BASE_OFFSET_POS = 0
LENGTH_POS = 8
PARTITION_LEADER_EPOCH_POS = 12
MAGIC_POS = 16
# CRC_POS = 17 and ATTRIBUTES_POS = 21 (where the CRC coverage starts): impl/protocol/crc.py
MAX_TIMESTAMP_POS = 35
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

CODECS = frozenset(int(codec) for codec in Compression)

_OFFSET_LENGTH = struct.Struct(">qi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")


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


def base_offset_of(buf) -> int:
    """BaseOffset of the batch at the start of buf (which must hold at least 8 bytes)."""
    return _INT64.unpack_from(buf, BASE_OFFSET_POS)[0]


def stamp_batch(buf: bytearray | memoryview, base_offset: int, partition_leader_epoch: int) -> None:
    """Rewrite BaseOffset and PartitionLeaderEpoch in place; the CRC stays valid (not covered)."""
    _INT64.pack_into(buf, BASE_OFFSET_POS, base_offset)
    _INT32.pack_into(buf, PARTITION_LEADER_EPOCH_POS, partition_leader_epoch)


def log_append_time_header(batch, base_offset: int, partition_leader_epoch: int,
                           append_time: int) -> bytearray:
    """The 61-byte header a LogAppendTime topic's leader writes for `batch` (a checked batch):
    stamped as stamp_batch does, with the timestamp-type bit (LOG_APPEND_TIME_FLAG) set in
    Attributes, MaxTimestamp = append_time (the broker's wall clock) and the CRC recomputed,
    since it covers both (Kafka's DefaultRecordBatch.setMaxTimestamp). The records after the
    header are left as they are: a reader of a LogAppendTime batch takes its MaxTimestamp as
    every record's timestamp. The caller writes this header and batch[HEADER_SIZE:] after it."""
    head = bytearray(memoryview(batch)[:HEADER_SIZE])
    stamp_batch(head, base_offset, partition_leader_epoch)
    attributes = _INT16.unpack_from(head, ATTRIBUTES_POS)[0]
    _retime(head, batch, attributes | LOG_APPEND_TIME_FLAG, append_time)
    return head


def create_time_batch(batch) -> bytes:
    """A producer batch that set the timestamp-type bit itself, as a CreateTime topic's leader
    writes it (Kafka's setMaxTimestamp(CREATE_TIME, max) after LogValidator): the bit cleared,
    MaxTimestamp kept -- each record of the batch as sent reads it as its timestamp, so it is
    their greatest -- and the CRC recomputed. A rare batch: no client sets the bit."""
    head = bytearray(memoryview(batch)[:HEADER_SIZE])
    attributes, = _INT16.unpack_from(head, ATTRIBUTES_POS)
    max_timestamp, = _INT64.unpack_from(head, MAX_TIMESTAMP_POS)
    _retime(head, batch, attributes & ~LOG_APPEND_TIME_FLAG, max_timestamp)
    return bytes(head) + bytes(memoryview(batch)[HEADER_SIZE:])


def _retime(head: bytearray, batch, attributes: int, max_timestamp: int) -> None:
    """Write Attributes and MaxTimestamp into head (batch's first 61 bytes) and the CRC they
    change (it covers Attributes to the end of the batch)."""
    _INT16.pack_into(head, ATTRIBUTES_POS, attributes)
    _INT64.pack_into(head, MAX_TIMESTAMP_POS, max_timestamp)
    crc = compute_crc_of_parts(head, memoryview(batch)[HEADER_SIZE:])
    _UINT32.pack_into(head, CRC_POS, crc)


def stamped(buf, base_offset: int, partition_leader_epoch: int) -> bytearray:
    """A stamped copy of a batch given as immutable bytes."""
    out = bytearray(buf)
    stamp_batch(out, base_offset, partition_leader_epoch)
    return out


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


def records_body(buf, header: BatchHeader, decompressed_bytes_max: int):
    """The records section of a batch, decompressed if needed; CORRUPT_MESSAGE if that fails."""
    raw = memoryview(buf)[RECORDS_POS:]
    if header.compression == Compression.none:
        return raw
    try:
        return decompress(Compression(header.compression), raw, decompressed_bytes_max)
    except CompressionError:
        return ErrorCode.corrupt_message
