"""One direction of imports between the top-level folders (docs/architecture.md, "Layers").

Every module's imports are read from its source with ast: import statements anywhere in the file
(a function's lazy import and a typing-only one count like a top-level one) and strings naming a
kafkaref module, as importlib and the command registries name them ("kafkaref.spec.bench",
"kafkaref.commands.check:check", f"kafkaref.chaos.conform.{name}"); a docstring or a string
statement is prose, not a reference. Then:

- a folder imports only folders below it in LAYERS, never a folder beside it;
- below properties/ (the lockstep's home), no folder imports both model/ and impl/;
- no file imports itself through others (no loop between files);
- LAYERS places every top-level folder, and setup.py maps each onto kafkaref.<folder>.

There is no exception list: a new arrow the other way is a design change, made here and in
docs/architecture.md, or a module in the wrong folder.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[3]
TESTS = "tests"  # properties/tests/: the test files, above every folder (not a package)

# Lowest first; folders in one tuple are siblings and import neither each other.
LAYERS = (
    ("spec",),
    ("model",),
    ("impl",),
    ("history",),
    ("chaos", "spark_checks"),
    ("properties",),
    ("commands",),
    (TESTS,),
)
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
MODULE_STRING = re.compile(r"kafkaref(?:\.\w+)+")


def folders() -> list[str]:
    return sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))


def modules() -> dict[str, Path]:
    """kafkaref module name -> file, for every module of every folder (a package by its
    __init__.py); test files as tests.<path>."""
    found = {}
    for folder in folders():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[:2] == ("properties", TESTS):
                found[".".join((TESTS, *parts[2:]))] = path
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(("kafkaref", *parts))] = path
    return found


def layer(module: str) -> str:
    return module.split(".")[0] if module.startswith(f"{TESTS}.") else module.split(".")[1]


def named_modules(tree: ast.AST, known: dict[str, Path]) -> set[str]:
    """The modules of known that the source imports or names."""
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from package import module` names the module, else the package
            candidates = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known
                          else node.module for alias in node.names]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in prose):
            candidates = MODULE_STRING.findall(node.value)
        else:
            continue
        named.update(name for name in candidates if name in known)
    return named


def import_graph() -> tuple[nx.DiGraph, dict[tuple[str, str], list[str]]]:
    """The graph of files (module -> modules it imports) and, per pair of folders, the imports
    from one to the other ("module -> module")."""
    known = modules()
    graph, between = nx.DiGraph(), {}
    for module, path in known.items():
        graph.add_node(module)
        for target in named_modules(ast.parse(path.read_text(), str(path)), known) - {module}:
            graph.add_edge(module, target)
            between.setdefault((layer(module), layer(target)), []).append(f"{module} -> {target}")
    return graph, between


def test_every_folder_has_a_place_in_the_layers_and_in_setup_py():
    assert set(folders()) | {TESTS} == set(RANK)
    setup = ast.parse((ROOT / "setup.py").read_text())
    mapped = next(ast.literal_eval(node.value) for node in ast.walk(setup)
                  if isinstance(node, ast.Assign) and node.targets[0].id == "LAYERS")
    assert sorted(mapped) == folders()


def test_imports_point_down_the_layers():
    _, between = import_graph()
    upward = {f"{source} -> {target}": edges[:5] for (source, target), edges in between.items()
              if source != target and RANK[target] >= RANK[source]}
    assert not upward, upward


def test_properties_is_the_one_library_folder_importing_model_and_impl_together():
    _, between = import_graph()
    both = [source for source in RANK if RANK[source] < RANK["properties"]
            and (source, "model") in between and (source, "impl") in between]
    assert not both, {source: between[source, "model"][:3] + between[source, "impl"][:3]
                      for source in both}


def test_no_file_imports_itself_through_others():
    graph, _ = import_graph()
    loops = list(nx.simple_cycles(graph))
    assert not loops, loops[:5]


def test_the_reader_sees_lazy_imports_and_module_strings():
    """The reader finds what the checks above rely on: a function's import, a typing-only one,
    an importlib string, a registry's "module:attribute", an f-string's head; and ignores
    docstrings and names of no module."""
    known = {name: Path() for name in (
        "kafkaref.spec.bench", "kafkaref.model.step", "kafkaref.chaos.conform",
        "kafkaref.chaos.conform.runner", "kafkaref.commands.check", "kafkaref.impl.cli")}
    tree = ast.parse(
        '"""`python -m kafkaref.impl.cli` in a docstring"""\n'
        "def f():\n    import kafkaref.spec.bench\n"
        "if TYPE_CHECKING:\n    from kafkaref.model.step import step\n"
        "TABLE = {'check': 'kafkaref.commands.check:check', 'config': 'kafkaref.mutants'}\n"
        "def g(name):\n    return importlib.import_module(f'kafkaref.chaos.conform.{name}')\n"
        "from kafkaref.chaos.conform import runner\n")
    assert named_modules(tree, known) == {
        "kafkaref.spec.bench", "kafkaref.model.step", "kafkaref.commands.check",
        "kafkaref.chaos.conform", "kafkaref.chaos.conform.runner"}
