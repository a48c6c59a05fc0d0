"""Fetch records as file ranges instead of bytes (the sendfile path).

A SliceRecords wraps impl/storage's FetchSlice (a dup'd segment fd + byte range); the core only
needs its size. The core answers a fetch with an EncodedResponse: the frame as parts (bytes,
slice, bytes, ...) that a network thread writes with send() and os.sendfile().
"""

from __future__ import annotations

import attrs


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


@attrs.frozen
class EncodedResponse:
    """A response the core encoded itself: the frame as parts, bytes and storage FetchSlices,
    which a network thread writes with send() and os.sendfile(). close() releases the slices
    of a response that will not be sent."""

    parts: list

    def close(self) -> None:
        for part in self.parts:
            if hasattr(part, "close"):
                part.close()
