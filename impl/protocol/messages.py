"""Build kio message objects of any version from plain dicts.

Handlers describe a response once, as nested dicts with every field any version might carry;
`build(cls, values)` keeps only the fields `cls` (one kio class for one API version) has (a name
no version of the message has raises ValueError), fills fields it lacks with their default or a
zero, and converts plain values to the types kio's
writers need (ErrorCode, timedelta, UUID). So one handler serves every advertised version.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import importlib
import pkgutil
import typing
import uuid

from kio.schema.errors import ErrorCode

_ZERO = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
    "bool": False, "string": "", "bytes": b"", "records": None, "error_code": ErrorCode.none,
    "timedelta_i32": 0, "timedelta_i64": 0, "uuid": None, "datetime_i64": -1,
}


@functools.cache
def _schema(cls) -> tuple:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        kafka_type = f.metadata.get("kafka_type")
        nested = None
        hint = hints[f.name]
        for arg in typing.get_args(hint) or (hint,):
            if dataclasses.is_dataclass(arg):
                nested = arg
            elif typing.get_origin(arg) is tuple:
                inner = typing.get_args(arg)[0]
                if dataclasses.is_dataclass(inner):
                    nested = inner
        has_default = f.default is not dataclasses.MISSING or (
            f.default_factory is not dataclasses.MISSING)
        is_tuple = typing.get_origin(hint) is tuple or any(
            typing.get_origin(a) is tuple for a in typing.get_args(hint))
        out.append((f.name, kafka_type, nested, has_default, is_tuple))
    return tuple(out)


def _convert(kafka_type: str | None, value):
    if value is None:
        return None
    if kafka_type == "error_code":
        return ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return value if isinstance(value, datetime.timedelta) else datetime.timedelta(
            milliseconds=value)
    if kafka_type == "datetime_i64" and not isinstance(value, datetime.datetime):
        if value < 0:
            return None
        return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
    if kafka_type == "uuid":  # a UUID, its text, or an int (0: Kafka's zero id)
        if isinstance(value, uuid.UUID) or value is None:
            return value
        return uuid.UUID(value) if isinstance(value, str) else uuid.UUID(int=int(value))
    return value


@functools.cache
def known_fields(cls) -> frozenset[str]:
    """The field names of `cls` in ANY version of its message: the same-named class in each
    sibling version module (kio.schema.<api>.v<N>.<request|response>)."""
    names = {f.name for f in dataclasses.fields(cls)}
    parts = cls.__module__.split(".")
    if len(parts) < 2 or not parts[-2].startswith("v") or not parts[-2][1:].isdigit():
        return frozenset(names)
    package = importlib.import_module(".".join(parts[:-2]))
    for version in pkgutil.iter_modules(package.__path__):
        if not (version.name.startswith("v") and version.name[1:].isdigit()):
            continue
        try:
            module = importlib.import_module(".".join([*parts[:-2], version.name, parts[-1]]))
        except ImportError:
            continue
        other = getattr(module, cls.__name__, None)
        if other is not None and dataclasses.is_dataclass(other):
            names.update(f.name for f in dataclasses.fields(other))
    return frozenset(names)


def build(cls, values: dict | None = None, **extra):
    """An instance of kio class `cls` from a dict (nested dicts / lists for nested entities).

    A name that is a field of the message in some other version is dropped (one handler
    serves every version); a name that is a field in no version is a programming error
    (a typo would silently send a default): ValueError."""
    values = {**(values or {}), **extra}
    unknown = values.keys() - known_fields(cls)
    if unknown:
        raise ValueError(f"{cls.__module__}.{cls.__name__} has no field {sorted(unknown)} in "
                         f"any version")
    kwargs = {}
    for name, kafka_type, nested, has_default, is_tuple in _schema(cls):
        if name not in values:
            if has_default:
                continue
            value = () if is_tuple else _ZERO.get(kafka_type, 0)
        else:
            value = values[name]
        if nested is not None and value is not None:
            value = (tuple(_nested(nested, v) for v in value) if is_tuple
                     else _nested(nested, value))
        elif is_tuple and value is not None:
            value = tuple(_convert(kafka_type, v) for v in value)
        else:
            value = _convert(kafka_type, value)
        kwargs[name] = value
    return cls(**kwargs)


def _nested(cls, value):
    return value if dataclasses.is_dataclass(value) else build(cls, value)


def millis(value) -> int:
    """A kio timedelta field (or a plain int) as whole milliseconds."""
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    return int(value)
