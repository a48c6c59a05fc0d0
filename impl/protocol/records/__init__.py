"""Record batch v2 (magic 2): the unit Kafka stores on disk and sends on the wire.

    layout.py   the byte layout (see its docstring), BatchHeader, Record, NewRecord, parsing the
                header, in-place stamping of BaseOffset / PartitionLeaderEpoch, splitting
                back-to-back batches
    checks.py   check_batch (frame: sizes, magic, CRC-32C, header sanity; storage runs it on
                every append, read and recovery), validate_batch (a produce: every record) and
                keyless_records (what a compacted topic refuses)
    walk.py     the record walk validate_batch runs: fast path next to its naive twin
    timestamps.py  the bounds a CreateTime topic holds record timestamps to (KIP-937)
    decode.py   decode_batch / decode_batch_fields: fast path next to its naive twin
    encode.py   encode_records / build_batch: fast path next to its naive twin
    ../crc.py   the CRC-32C: what it covers and the one check of it

Functions here never raise on bad input bytes: checks return a kio ErrorCode (ErrorCode.none when
fine), decoders return a value carrying an ErrorCode. Only programming errors (building a batch
from impossible arguments) raise. The public names of every part are importable from here.
"""

from kafkaref.impl.protocol.crc import ATTRIBUTES_POS, CRC_POS, compute_crc
from kafkaref.impl.protocol.limits import DECOMPRESSED_MAX_BYTES
from kafkaref.impl.protocol.records.checks import (
    check_batch,
    checked_header,
    keyless_records,
    validate_batch,
)
from kafkaref.impl.protocol.records.decode import decode_batch, decode_batch_fields
from kafkaref.impl.protocol.records.encode import (
    build_batch,
    build_batch_from_tuples,
    encode_record,
    encode_records,
    encode_records_naive,
)
from kafkaref.impl.protocol.records.layout import (
    BASE_OFFSET_POS,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    HEADER,
    HEADER_SIZE,
    INT32_MAX,
    LENGTH_POS,
    LOG_APPEND_TIME_FLAG,
    LOG_OVERHEAD,
    MAGIC_POS,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    PARTITION_LEADER_EPOCH_POS,
    RECORDS_COUNT_POS,
    RECORDS_POS,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    DecodedBatch,
    NewRecord,
    Record,
    base_offset_of,
    create_time_batch,
    log_append_time_header,
    parse_header,
    peek_offset_and_size,
    split_batches,
    stamp_batch,
    stamped,
)
from kafkaref.impl.protocol.records.timestamps import out_of_bounds

__all__ = [
    "ATTRIBUTES_POS", "BASE_OFFSET_POS", "COMPRESSION_MASK", "CONTROL_FLAG", "CRC_POS",
    "DECOMPRESSED_MAX_BYTES", "HEADER", "HEADER_SIZE", "INT32_MAX", "LENGTH_POS",
    "LOG_APPEND_TIME_FLAG", "LOG_OVERHEAD", "MAGIC_POS", "MAGIC_V2", "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "NO_SEQUENCE", "PARTITION_LEADER_EPOCH_POS",
    "RECORDS_COUNT_POS", "RECORDS_POS", "TRANSACTIONAL_FLAG", "BatchHeader", "DecodedBatch",
    "NewRecord", "Record", "base_offset_of", "build_batch", "build_batch_from_tuples",
    "check_batch", "checked_header", "compute_crc", "create_time_batch", "decode_batch",
    "decode_batch_fields", "encode_record", "encode_records", "encode_records_naive",
    "keyless_records", "log_append_time_header", "out_of_bounds", "parse_header",
    "peek_offset_and_size", "split_batches", "stamp_batch", "stamped", "validate_batch",
]
