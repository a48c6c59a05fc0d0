"""No request field is read with a silent default where Kafka's schema has it (issue 26, point 4).

The broker reads version-dependent request fields as `getattr(body, "field", default)`: the
default stands for the versions whose schema lacks the field. A misspelt name, or a name from
another API, is then never found and the default is read at every version, silently: no request
fails, the broker just ignores what the client sent. Each such read in a handler of the core
broker (impl/core/broker.py, admin.py, describe.py) is checked here against Kafka's schemas (kio, generated from them)
at the versions kafkaref advertises: the field exists at some advertised version of that API
(else the read is dead or misspelt), and is absent at some other (else it is always present and
must be read directly, so that a misread fails loudly)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from pathlib import Path

import attrs
import pytest

from kafkaref.impl.core import admin, broker, describe
from kafkaref.impl.protocol import wire


def handler_methods(tree: ast.Module) -> dict[int, ast.FunctionDef]:
    """api key -> the method a handler table names: a dict literal of api keys to `self.<method>`
    (the broker's `self._handlers`, AdminApis' and DescribeApis' `handlers()`)."""
    methods = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    tables = [n for n in ast.walk(tree) if isinstance(n, ast.Dict) and n.keys and all(
        isinstance(k, ast.Constant) and isinstance(k.value, int) for k in n.keys) and all(
        isinstance(v, ast.Attribute) and ast.unparse(v.value) == "self" for v in n.values)]
    return {key.value: methods[value.attr] for table in tables
            for key, value in zip(table.keys, table.values, strict=True)}


def defaulted_reads(method: ast.FunctionDef) -> set[str]:
    """The field names the method reads as getattr(x, "name", default)."""
    return {call.args[1].value for call in ast.walk(method)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "getattr" and len(call.args) == 3
            and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)}


def schema_fields(api_key: int, version: int) -> set[str]:
    """Every field of the request at this version, nested entities included."""
    module = importlib.import_module(wire.request_class(api_key, version).__module__)
    return {f.name for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__ and (dataclasses.is_dataclass(cls) or attrs.has(cls))
            for f in (dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else attrs.fields(cls))}


READS = {key: defaulted_reads(method) for module in (broker, admin, describe) for key, method in
         handler_methods(ast.parse(Path(module.__file__).read_text())).items()}


@pytest.mark.parametrize("api_key", sorted(k for k, fields in READS.items() if fields))
def test_a_field_read_with_a_default_exists_at_some_version_and_not_at_every_one(api_key):
    name, low, high = wire.SUPPORTED[api_key]
    versions = {v: schema_fields(api_key, v) for v in range(low, high + 1)}
    for field in sorted(READS[api_key]):
        present = [v for v, fields in versions.items() if field in fields]
        assert present, f"{name}: {field!r} is in no advertised version's schema (misspelt?)"
        assert len(present) < len(versions), (
            f"{name}: {field!r} is in every advertised version (v{low}-v{high}): read it directly")
