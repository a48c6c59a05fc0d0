"""Null arrays where a version's schema forbids them.

kio reads an array whose length is -1 (0 in a compact array) as None at every version, where
the schema allows null only from some version on (OffsetFetch's topics from v2, Metadata's from
v1) or never (Fetch's topics). It refuses a null string or bytes field itself. Kafka's
generated readers throw for such an array ("non-nullable field ... was serialized as null")
and the request is closed as malformed: `forbidden_null(body)` names the field so that
wire.decode_request can do the same.

The check runs on every request kio decodes, Fetch among them, so it is written once per
request class, from its dataclass annotations, as the plain Python one would write by hand
(the way dataclasses writes __init__) and reads only the arrays. Fetch v11's:

    def check(e0):
        if e0.topics is None: return 'topics'
        if e0.forgotten_topics_data is None: return 'forgotten_topics_data'
        for e1 in e0.topics or ():
            if e1.partitions is None: return 'topics.partitions'
        for e1 in e0.forgotten_topics_data or ():
            if e1.partitions is None: return 'forgotten_topics_data.partitions'
        return None
"""

from __future__ import annotations

import dataclasses
import types
import typing

_CHECKS: dict[type, object] = {}  # request class -> its check, None if it has no array to check
_UNSEEN = object()


def forbidden_null(entity) -> str | None:
    """The path of the first array of `entity` (a kio request body) that is null where its
    version does not allow null, else None."""
    cls = type(entity)
    check = _CHECKS.get(cls, _UNSEEN)
    if check is _UNSEEN:
        check = check_of(cls)
    return None if check is None else check(entity)


def check_of(cls: type):
    """The check function of a kio request class (written and kept on first use), or None
    when the class has no array that could be null where it must not."""
    _CHECKS[cls] = _compile(cls)
    return _CHECKS[cls]


def _compile(cls: type):
    lines = _lines(cls, 0, "")
    if not lines:
        return None
    source = "\n".join(["def check(e0):", *lines, "    return None"])
    namespace: dict = {}
    exec(compile(source, f"<null check of {cls.__name__}>", "exec"), namespace)
    return namespace["check"]


def _lines(cls: type, depth: int, path: str) -> list[str]:
    """The lines checking a struct held in variable e<depth>: its arrays that may not be null,
    then a loop over each array of structs that have arrays to check."""
    hints = typing.get_type_hints(cls)
    var, indent = f"e{depth}", "    " * (depth + 1)
    required, loops = [], []
    for field in dataclasses.fields(cls):
        array, nullable = _array_type(hints[field.name])
        if array is None:
            continue
        where = f"{path}{field.name}"
        if not nullable:
            required.append(f"{indent}if {var}.{field.name} is None: return {where!r}")
        (element,) = {a for a in typing.get_args(array) if a is not Ellipsis}
        inner = _lines(element, depth + 1, f"{where}.") if dataclasses.is_dataclass(element) \
            else []
        if inner:
            loops += [f"{indent}for e{depth + 1} in {var}.{field.name} or ():", *inner]
    return required + loops


def _array_type(hint) -> tuple[object | None, bool]:
    """(the tuple[...] type of an array field, whether it may be null); (None, False) when the
    field is not an array."""
    if typing.get_origin(hint) is tuple:
        return hint, False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        arrays = [a for a in typing.get_args(hint) if typing.get_origin(a) is tuple]
        if arrays:
            return arrays[0], type(None) in typing.get_args(hint)
    return None, False
