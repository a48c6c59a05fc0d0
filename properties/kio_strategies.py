"""Hypothesis strategies for any message of any version, read off kio's classes.

`message(cls)` draws a kio object of class `cls` (one API, one version, request or response):
every field with a value of its wire type (int8 .. int64 in range, strings, bytes, uuids, arrays
of structs, nullable values sometimes null, tagged fields sometimes left at their default). The
wire tests use it to hold the codecs to kio at every version kafkaref advertises, not only at
the ones a hand-written request happens to name.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing

from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_TEXT = st.text(max_size=8)
_SCALARS = {
    "uint16": st.integers(0, 2**16 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "float64": st.floats(allow_nan=False),
    "bool": st.booleans(),
    "string": _TEXT,
    "bytes": st.binary(max_size=8),
    "records": st.binary(max_size=8),
    "uuid": st.uuids(),
    "error_code": st.sampled_from([ErrorCode.none, ErrorCode.unknown_server_error,
                                   ErrorCode.not_leader_or_follower]),
    "timedelta_i32": st.integers(0, 2**31 - 1).map(
        lambda ms: datetime.timedelta(milliseconds=ms)),
    "timedelta_i64": st.integers(0, 2**40).map(lambda ms: datetime.timedelta(milliseconds=ms)),
    "datetime_i64": st.integers(0, 2**40).map(
        lambda ms: datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)),
}
_ARRAY_MAX = 2


def _scalar(kafka_type: str):
    if kafka_type in _INTS:
        bits = _INTS[kafka_type]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return _SCALARS[kafka_type]


@functools.cache
def message(cls) -> st.SearchStrategy:
    """A kio object of class cls with every field drawn."""
    hints = typing.get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        if not f.init or (typing.get_origin(f.type) is typing.ClassVar):
            continue
        fields[f.name] = _value(hints[f.name], f.metadata.get("kafka_type"))
        if "tag" in f.metadata:  # a tagged field is written only when not at its default
            fields[f.name] = st.one_of(st.just(_default(f)), fields[f.name])
    return st.builds(cls, **fields)


def _value(hint, kafka_type: str | None) -> st.SearchStrategy:
    unions = (typing.Union, types.UnionType)
    options = typing.get_args(hint) if typing.get_origin(hint) in unions else (hint,)
    nullable = type(None) in options
    kept = [o for o in options if o is not type(None)]
    (only,) = kept
    if typing.get_origin(only) is tuple:
        element = typing.get_args(only)[0]
        inner = message(element) if dataclasses.is_dataclass(element) else _scalar(kafka_type)
        drawn = st.lists(inner, max_size=_ARRAY_MAX).map(tuple)
    elif dataclasses.is_dataclass(only):
        drawn = st.deferred(lambda: message(only))
    else:
        drawn = _scalar(kafka_type)
    return st.one_of(st.none(), drawn) if nullable else drawn


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()
