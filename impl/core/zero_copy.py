"""Fetch records as file ranges instead of bytes (the sendfile path).

A SliceRecords wraps impl/storage's FetchSlice (a dup'd segment fd + byte range); the core only
needs its size. ZeroCopyResponse carries a kio response whose records fields hold unique
16-byte markers, plus the slices that replace them; the server encodes it into frame parts
(bytes, slice, bytes, ...) that a network thread writes with send() and os.sendfile().
"""

from __future__ import annotations

import os
import struct

import attrs

from kafkaref.impl.protocol.varint import encode_unsigned

MARKER_BYTES = 16


class SliceRecords:
    __slots__ = ("slice",)

    def __init__(self, fetch_slice):
        self.slice = fetch_slice

    def __len__(self) -> int:
        return self.slice.size

    def __bool__(self) -> bool:
        return self.slice.size > 0

    def close(self) -> None:
        self.slice.close()

    def read_bytes(self) -> bytes:
        return self.slice.read_bytes()


def close_records(results) -> None:
    """Release the slices of results that will not be sent."""
    for result in results.values():
        if isinstance(result.records, SliceRecords):
            result.records.close()


@attrs.define
class ZeroCopyResponse:
    response: object  # kio response with markers in place of records
    slices: dict[bytes, SliceRecords]  # marker -> records

    @staticmethod
    def new_marker() -> bytes:
        return os.urandom(MARKER_BYTES)

    def frame_parts(self, encoded: bytes) -> list:
        """Split an encoded frame (size prefix included) at the markers: [bytes, slice, ...],
        with each records length and the frame size rewritten for the real slices. Records
        lengths are int32 in non-flexible versions, unsigned varint (length + 1) in flexible
        ones (where a 16-byte marker's length is the single byte 17)."""
        flexible = type(self.response).__flexible__
        prefix_bytes = 1 if flexible else 4
        parts, start, total = [], 0, len(encoded)
        found = sorted((encoded.find(marker), marker) for marker in self.slices)
        for position, marker in found:
            if position < 4 + prefix_bytes:
                raise ValueError("marker not found in the encoded response")
            records = self.slices[marker]
            if flexible:
                length = encode_unsigned(len(records) + 1)
            else:
                length = struct.pack(">i", len(records))
            parts.append(encoded[start : position - prefix_bytes] + length)
            parts.append(records.slice)
            start = position + MARKER_BYTES
            total += len(records) - MARKER_BYTES + len(length) - prefix_bytes
        parts.append(encoded[start:])
        head = bytearray(parts[0])
        struct.pack_into(">i", head, 0, total - 4)  # the frame size
        parts[0] = bytes(head)
        return parts

    def close(self) -> None:
        for records in self.slices.values():
            records.close()
