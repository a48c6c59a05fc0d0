"""The bounds a leader holds a producer's record timestamps to (Kafka 4's
LogValidator.validateTimestamp, KIP-937): on a CreateTime topic a record whose timestamp is
more than message.timestamp.before.max.ms behind the broker's clock or
message.timestamp.after.max.ms ahead of it is refused (INVALID_TIMESTAMP, its index in the
answer's record errors). A record without a timestamp (-1) is not checked, unless its batch
says LogAppendTime: a producer may not set that bit.

    bounds = (now - before_max_ms, now + after_max_ms)        # inclusive
    validate_batch(batch, timestamp_bounds=bounds)            # checks.py: the fast verdict
    out_of_bounds(batch, bounds)                              # the refused records' indexes

The fast verdict needs no decoding: the batch header gives the first record's base
(BaseTimestamp), and a timestamp delta of w bytes (a zigzag varlong) is at most 2^(7w-1) away
from it, so delta_width says how wide a delta may be and still land within the bounds, and the
record walk (walk.py), which steps over every delta anyway, sees whether one is wider. Only
then (a batch spanning more than ~17 minutes with the default hour, or a clock far off) are
its timestamps decoded and checked one by one.
"""

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.limits import DECOMPRESSED_MAX_BYTES
from kafkaref.impl.protocol.records.layout import BatchHeader, parse_header, records_body
from kafkaref.impl.protocol.varint import VARINT_BYTES_MAX, VARLONG_BYTES_MAX, decode_varint

NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP


def delta_width(base_timestamp: int, bounds: tuple[int, int]) -> int:
    """The widest timestamp delta (in bytes) every value of which keeps a record within bounds:
    width w holds deltas in [-2^(7w-1), 2^(7w-1) - 1]. 0 when the base itself is outside (every
    record is then checked exactly)."""
    below, above = base_timestamp - bounds[0], bounds[1] - base_timestamp
    slack = below if below < above else above  # (no min(): this runs once per produced batch)
    if slack <= 0:
        return 0
    width = slack.bit_length() // 7
    return width if width < VARLONG_BYTES_MAX else VARLONG_BYTES_MAX


def in_bounds(timestamp: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= timestamp <= bounds[1]


def stamped_by_producer_ok(header: BatchHeader, bounds: tuple[int, int]) -> bool:
    """A batch whose producer set the LogAppendTime bit, on a CreateTime topic: each of its
    records reads MaxTimestamp as its timestamp, so all of them pass or none; without one (-1)
    the bit itself is refused (Kafka's validateTimestamp, its second branch)."""
    return header.max_timestamp != NO_TIMESTAMP and in_bounds(header.max_timestamp, bounds)


def out_of_bounds(buf, bounds: tuple[int, int],
                  decompressed_bytes_max: int = DECOMPRESSED_MAX_BYTES) -> list[int] | ErrorCode:
    """Indexes of the records of one batch (validate_batch accepted its framing) that a
    CreateTime topic refuses for their timestamps; CORRUPT_MESSAGE if the records do not parse."""
    header = parse_header(buf)
    if header.is_log_append_time:
        ok = stamped_by_producer_ok(header, bounds)
        return [] if ok else list(range(header.records_count))
    body = records_body(buf, header, decompressed_bytes_max)
    if isinstance(body, ErrorCode):
        return body
    refused, pos = [], 0
    for index in range(header.records_count):
        length = decode_varint(body, pos, VARINT_BYTES_MAX)  # the record's, then attributes
        delta = None if length is None else decode_varint(body, length[1] + 1, VARLONG_BYTES_MAX)
        if delta is None:
            return ErrorCode.corrupt_message
        timestamp = header.base_timestamp + delta[0]
        if timestamp != NO_TIMESTAMP and not in_bounds(timestamp, bounds):
            refused.append(index)
        pos = length[1] + length[0]
    return refused
