"""Unknown tagged fields of a request, dropped so that kio can read the rest.

A flexible message ends every struct with tagged fields (KIP-482), and a reader keeps the tags
it does not know aside and reads on: a newer client may send tags an older broker never heard
of. Apache Kafka does so (seen on 4.3.1: Metadata v12 with an unknown tag in its header or its
body is answered; duplicated or unordered tags too); kio raises KeyError instead. So when kio
refuses a tag, wire.decode_request asks `without_unknown_tags` for the same payload minus every
tag its struct does not define, and hands that to kio. The walk follows kio's own classes (field
order, types, the tags each struct defines), so it reads what kio reads; a payload that does not
parse raises flexible.Truncated, and the request is malformed either way.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing

from kafkaref.impl.protocol import flexible
from kafkaref.impl.protocol.varint import encode_unsigned

_FIXED = {"int8": 1, "bool": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
          "uint32": 4, "timedelta_i32": 4, "int64": 8, "timedelta_i64": 8, "datetime_i64": 8,
          "float64": 8, "uuid": 16}
_SIZED = ("string", "bytes", "records")  # a compact length, then that many bytes
_HEADER_FIXED = 8  # api key, api version, correlation id


class _Field(typing.NamedTuple):
    kafka_type: str | None
    struct: type | None  # the nested class, for a struct or an array of structs
    array: bool
    nullable_struct: bool  # a struct that may be null: an int8 marker before it


@functools.cache
def _layout(cls) -> tuple[tuple[_Field, ...], dict[int, _Field]]:
    """(the fields in wire order, {tag: field} for the tagged ones) of a kio class."""
    hints = typing.get_type_hints(cls)
    plain, tagged = [], {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        unions = (typing.Union, types.UnionType)
        options = typing.get_args(hint) if typing.get_origin(hint) in unions else (hint,)
        elements = [typing.get_args(o)[0] for o in options if typing.get_origin(o) is tuple]
        struct = next((c for c in elements or options if dataclasses.is_dataclass(c)), None)
        field = _Field(f.metadata.get("kafka_type"), struct, bool(elements),
                       struct is not None and not elements and type(None) in options)
        if "tag" in f.metadata:
            tagged[f.metadata["tag"]] = field
        else:
            plain.append(field)
    return tuple(plain), tagged


def without_unknown_tags(payload, body_cls) -> bytes:
    """The request payload (header v2 and a flexible body of class body_cls) without the tags
    its structs do not define; bytes after the body are kept as they are."""
    walker = _Walker(memoryview(payload))
    walker.header()
    walker.struct(body_cls)
    walker.out += walker.view[walker.copied:]
    return bytes(walker.out)


class _Walker:
    """Reads the payload field by field; copies it to `out` as it goes, rewriting each tagged
    fields section without its unknown tags."""

    def __init__(self, view: memoryview):
        self.view, self.pos, self.copied = view, 0, 0
        self.out = bytearray()
        self.sections: list[int] = []  # where each tagged fields section walked starts

    def skip(self, size: int) -> None:
        self.pos += size
        if self.pos > len(self.view):
            raise flexible.Truncated("field past the end")

    def header(self) -> None:
        """Request header v2: the client id keeps its int16 length even there."""
        self.skip(_HEADER_FIXED)
        if self.pos + 2 > len(self.view):
            raise flexible.Truncated("header past the end")
        size = int.from_bytes(self.view[self.pos : self.pos + 2], "big", signed=True)
        self.skip(2 + max(size, 0))
        self.tags({})

    def struct(self, cls) -> None:
        plain, tagged = _layout(cls)
        for field in plain:
            self.field(field)
        self.tags(tagged)

    def field(self, field: _Field) -> None:
        if field.array:
            count, self.pos = flexible.length(self.view, self.pos, nullable=True)
            for _ in range(count or 0):
                self.value(field)
        elif field.nullable_struct:
            self.skip(1)
            if self.view[self.pos - 1] != 0xFF:  # -1: null
                self.struct(field.struct)
        else:
            self.value(field)

    def value(self, field: _Field) -> None:
        if field.struct is not None:
            self.struct(field.struct)
        elif field.kafka_type in _SIZED:
            size, self.pos = flexible.length(self.view, self.pos, nullable=True)
            self.skip(size or 0)
        else:
            self.skip(_FIXED[field.kafka_type])

    def tags(self, known: dict[int, _Field]) -> None:
        """Rewrite this tagged fields section with the known tags only (each known value walked
        too: a struct in it has tagged fields of its own)."""
        start = self.pos
        self.sections.append(start)
        count, self.pos = flexible.unsigned(self.view, self.pos)
        kept = []
        for _ in range(count):
            tag, self.pos = flexible.unsigned(self.view, self.pos)
            size, self.pos = flexible.unsigned(self.view, self.pos)
            end = self.pos + size
            if end > len(self.view):
                raise flexible.Truncated("tagged field past the end")
            if tag in known:
                kept.append((tag, self._value_alone(known[tag], end)))
            self.pos = end
        self.out += self.view[self.copied : start]
        self.out += encode_unsigned(len(kept))
        for tag, value in kept:
            self.out += encode_unsigned(tag) + encode_unsigned(len(value)) + value
        self.copied = self.pos

    def _value_alone(self, field: _Field, end: int) -> bytes:
        """A known tag's value with the unknown tags inside it dropped."""
        inner = _Walker(self.view[:end])
        inner.pos = inner.copied = self.pos
        inner.field(field)
        inner.out += inner.view[inner.copied : end]
        return bytes(inner.out)
