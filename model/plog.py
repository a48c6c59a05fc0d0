"""An immutable, persistent log: appends and truncations share structure instead of copying.

Why: a replica's log can hold hundreds of thousands of entries in a long lockstep run, and a
plain tuple would be copied on every append (O(n) per produce). Here the log is a tuple of full
chunks of CHUNK entries plus a short tail; an append copies only the tail and, every CHUNK
entries, the (short) tuple of chunk pointers.

The representation is canonical (every chunk is full, the tail is shorter than CHUNK), so two
logs with the same entries have the same chunks and tail: equality and hashing are structural.
Its naive twin is a plain tuple; properties/tests/model/test_model_plog.py checks they agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

CHUNK = 256


class PLog:
    """Treat as immutable: no method changes an existing PLog (attributes are private)."""

    __slots__ = ("_chunks", "_tail", "_len", "_hash")

    def __init__(self, chunks: tuple[tuple[Any, ...], ...] = (), tail: tuple[Any, ...] = ()):
        self._chunks = chunks
        self._tail = tail
        self._len = len(chunks) * CHUNK + len(tail)
        self._hash = None

    @classmethod
    def of(cls, entries) -> PLog:
        return EMPTY.append(tuple(entries))

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.slice(*index.indices(self._len)[:2])
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        chunk, within = divmod(index, CHUNK)
        if chunk < len(self._chunks):
            return self._chunks[chunk][within]
        return self._tail[within]

    def slice(self, start: int, stop: int) -> tuple[Any, ...]:
        """Entries [start, stop) as a tuple (the cost is the size of the slice)."""
        stop = min(stop, self._len)
        if start >= stop:
            return ()
        first, last = start // CHUNK, (stop - 1) // CHUNK
        if first == last:
            source = self._chunks[first] if first < len(self._chunks) else self._tail
            return source[start - first * CHUNK : stop - first * CHUNK]
        parts = []
        for chunk in range(first, last + 1):
            source = self._chunks[chunk] if chunk < len(self._chunks) else self._tail
            lo = max(start - chunk * CHUNK, 0)
            hi = min(stop - chunk * CHUNK, CHUNK)
            parts.append(source[lo:hi])
        return tuple(entry for part in parts for entry in part)

    def __iter__(self) -> Iterator[Any]:
        for chunk in self._chunks:
            yield from chunk
        yield from self._tail

    @property
    def last(self) -> Any:
        """The last entry, or None for an empty log."""
        if self._tail:
            return self._tail[-1]
        return self._chunks[-1][-1] if self._chunks else None

    def append(self, entries: tuple[Any, ...]) -> PLog:
        if not entries:
            return self
        tail = self._tail + entries
        if len(tail) < CHUNK:
            return PLog(self._chunks, tail)
        full = len(tail) // CHUNK * CHUNK
        new_chunks = tuple(tail[i : i + CHUNK] for i in range(0, full, CHUNK))
        return PLog(self._chunks + new_chunks, tail[full:])

    def truncate(self, length: int) -> PLog:
        """The first `length` entries (the whole log when it is not longer)."""
        if length >= self._len:
            return self
        if length <= 0:
            return EMPTY
        chunk, within = divmod(length, CHUNK)
        if chunk >= len(self._chunks):
            return PLog(self._chunks, self._tail[:within])
        return PLog(self._chunks[:chunk], self._chunks[chunk][:within])

    def to_tuple(self) -> tuple[Any, ...]:
        return tuple(self)

    def __eq__(self, other) -> bool:
        if isinstance(other, PLog):
            return self._len == other._len and self._tail == other._tail and self._chunks == other._chunks
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self._chunks, self._tail))
        return self._hash

    def __repr__(self) -> str:
        return f"PLog({list(self)!r})" if self._len <= 8 else f"PLog(<{self._len} entries>)"


EMPTY = PLog()
