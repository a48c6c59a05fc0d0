"""FetchSlice: a byte range of one segment file, what a read hands to the network layer.

It owns a duplicate of the segment's file descriptor, so it stays readable (sendfile or pread)
after the server's core lock is released, even if the segment is truncated or deleted meanwhile (a
truncation can make the range shorter than promised: readers handle short reads). Close it when
done; it closes itself when garbage-collected as a safety net.
"""

import os

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import check_batch, split_batches


class FetchSlice:
    __slots__ = ("error", "fd", "path", "position", "size", "first_offset", "next_offset")

    def __init__(self, error: ErrorCode, fd: int, path: str | None, position: int, size: int,
                 first_offset: int, next_offset: int | None = None):
        self.error = error
        self.fd = fd  # -1 for an empty slice
        self.path = path
        self.position = position  # byte position in the segment file
        self.size = size  # bytes, whole batches
        self.first_offset = first_offset  # base offset of the first batch (or the fetch offset)
        # the offset to fetch next: just past the last batch in the range
        self.next_offset = first_offset if next_offset is None else next_offset

    def __len__(self) -> int:
        return self.size

    @classmethod
    def empty(cls, error: ErrorCode, offset: int) -> "FetchSlice":
        return cls(error, -1, None, 0, 0, offset)

    def read_bytes(self) -> bytes:
        """The range's bytes, read with pread (unchecked, like sendfile)."""
        if self.fd < 0 or self.size == 0:
            return b""
        parts, done = [], 0
        while done < self.size:
            chunk = os.pread(self.fd, self.size - done, self.position + done)
            if not chunk:  # truncated under us
                break
            parts.append(chunk)
            done += len(chunk)
        return b"".join(parts)

    def read_verified(self) -> tuple[ErrorCode, bytes]:
        """The range's bytes with every batch's size and CRC checked; the bytes stop before the
        first bad batch, and the error is CORRUPT_MESSAGE if there was one."""
        data = self.read_bytes()
        error, batches = split_batches(data)
        good = 0
        for batch in batches:
            if check_batch(batch) != ErrorCode.none:
                return ErrorCode.corrupt_message, data[:good]
            good += len(batch)
        return error, data[:good]

    def sendfile(self, out_fd: int, offset: int, count: int | None = None) -> int:
        """os.sendfile part of the range (from `offset` within it) to out_fd; returns the bytes
        sent (may be fewer than asked on a non-blocking socket; 0 at a truncated end)."""
        if self.fd < 0:
            return 0
        count = self.size - offset if count is None else min(count, self.size - offset)
        if count <= 0:
            return 0
        return os.sendfile(out_fd, self.fd, self.position + offset, count)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self) -> str:
        return (f"FetchSlice({self.error.name}, {self.path}, position={self.position}, "
                f"size={self.size}, first_offset={self.first_offset})")
