"""CRC-32C of v2 record batches: what it covers, and the ONE check of it.

The CRC field (4 bytes at CRC_POS) covers a batch from Attributes (ATTRIBUTES_POS) to its end, so
BaseOffset, Length and PartitionLeaderEpoch can be rewritten in place without recomputing it.
Every place that trusts a batch checks it here:
  - append: impl/protocol/records/checks.py checked_header (Log.append*, produce validation);
  - read:   the same check_batch, on every batch a verified read serves (storage/fetch.py) and
            on every batch of Log.verify;
  - recovery: impl/storage/segment.py's scan of a segment's batches (crc_matches on a mapped
            window, crc_matches_in_file for a batch larger than the window).
"""

import os

import crc32c

from kafkaref.impl.protocol.limits import FILE_CHUNK_BYTES

CRC_POS = 17
ATTRIBUTES_POS = 21  # the CRC covers from here to the end of the batch


def compute_crc(batch) -> int:
    """CRC-32C of a whole batch's covered bytes (Attributes to the end)."""
    return crc32c.crc32c(memoryview(batch)[ATTRIBUTES_POS:])


def compute_crc_of_parts(header, body) -> int:
    """compute_crc of header + body without joining them (body is copied once, into the batch
    built from them); header is the whole 61-byte header, its CRC field not yet filled in."""
    return crc32c.crc32c(body, crc32c.crc32c(memoryview(header)[ATTRIBUTES_POS:]))


def crc_matches(batch, expected: int) -> bool:
    """The check: does a whole batch's CRC-32C equal the CRC field it carries (`expected`)?"""
    return crc32c.crc32c(memoryview(batch)[ATTRIBUTES_POS:]) == expected


def crc_matches_in_file(fd: int, position: int, size: int, expected: int) -> bool:
    """crc_matches for the batch of `size` bytes at `position` of an open file, read in bounded
    chunks (a batch too large to map or hold at once); False if the file ends early."""
    start, end, value = position + ATTRIBUTES_POS, position + size, 0
    while start < end:
        chunk = os.pread(fd, min(FILE_CHUNK_BYTES, end - start), start)
        if not chunk:
            return False
        value = crc32c.crc32c(chunk, value)
        start += len(chunk)
    return value == expected
