"""One-way layering (issue 16, item 5): no import circle inside ``netfl/``, and the schema
(``netfl/config/``) and ``channel_models/`` import nothing above themselves.

Imports are read with :mod:`ast` (every ``import``, also inside functions; those under
``if TYPE_CHECKING:`` are left out of the circle check, since they never run, but count for
the layering rule). A package's ``__init__`` is a module of its own; importing
``a.b.c`` is an arrow to ``a.b.c`` only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]

#: What each bottom layer may import from the project (prefixes of module names).
ALLOWED = {
    "netfl.config": ("netfl.config", "netfl.errors", "channel_models"),
    "channel_models": ("channel_models",),
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, name: str, known: set[str]) -> list[tuple[str, int, bool]]:
    """``(imported module, line, only for type checking)`` for each project import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, node.lineno, typing_only))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            for target in submodules:
                found.append((target, node.lineno, typing_only))
            if len(submodules) < len(node.names):
                found.append((base, node.lineno, typing_only))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return [item for item in found if item[0] in known and item[0] != name]


def import_graph(root: Path, packages: tuple[str, ...]) -> nx.DiGraph:
    files = {
        module_name(path, root): path
        for package in packages
        for path in (root / package).rglob("*.py")
    }
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        for target, line, typing_only in imports(path, name, set(files)):
            if graph.has_edge(name, target):
                graph.edges[name, target]["runtime"] |= not typing_only
            else:
                graph.add_edge(name, target, line=line, runtime=not typing_only)
    return graph


def circles(graph: nx.DiGraph) -> list[str]:
    runtime = graph.edge_subgraph(
        [(a, b) for a, b, runtime in graph.edges(data="runtime") if runtime]
    )
    return [
        " -> ".join(
            f"{a} (line {graph.edges[a, b]['line']})"
            for a, b in zip(c, [*c[1:], c[0]], strict=True)
        )
        for c in nx.simple_cycles(runtime)
    ]


def upward_imports(graph: nx.DiGraph) -> list[str]:
    wrong = []
    for name, target, line in graph.edges(data="line"):
        for layer, allowed in ALLOWED.items():
            if (name == layer or name.startswith(layer + ".")) and not target.startswith(allowed):
                wrong.append(f"{name} (line {line}) imports {target}")
    return wrong


def test_no_import_circle_in_netfl() -> None:
    assert circles(import_graph(ROOT, ("netfl",))) == []


def test_config_and_channel_models_import_nothing_above_them() -> None:
    assert upward_imports(import_graph(ROOT, ("netfl", "channel_models"))) == []


def test_the_checks_find_a_planted_circle_and_an_upward_import(tmp_path: Path) -> None:
    (tmp_path / "netfl" / "config").mkdir(parents=True)
    (tmp_path / "netfl" / "__init__.py").write_text("")
    (tmp_path / "netfl" / "errors.py").write_text("")
    (tmp_path / "netfl" / "cli.py").write_text("from netfl import commands\n")
    (tmp_path / "netfl" / "commands.py").write_text("def f():\n    from netfl.cli import X\n")
    (tmp_path / "netfl" / "config" / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nfrom . import base\nif TYPE_CHECKING:\n"
        "    from netfl.cli import Y\n"
    )
    (tmp_path / "netfl" / "config" / "base.py").write_text(
        "from ..errors import E\nimport netfl.config\n"
    )
    graph = import_graph(tmp_path, ("netfl",))
    found = circles(graph)
    assert len(found) == 2  # cli <-> commands (a lazy import counts); config <-> config.base
    assert any("netfl.cli" in c and "netfl.commands" in c for c in found)
    assert upward_imports(graph) == ["netfl.config (line 4) imports netfl.cli"]


#: Arrows issue 16 named as pointing the wrong way: a layer must not import these.
FORBIDDEN = {
    "netfl.radio": ("netfl.fl", "netfl.selection", "netfl.learning", "netfl.trace"),
    "netfl.learning": ("netfl.fl", "netfl.selection"),
    # Issue 33: the map below the kinematics, the kinematics below the radio, the recorder
    # below the engine and apart from the analysis that reads runs.
    "netfl.map": ("netfl.mobility", "netfl.radio", "netfl.fl", "netfl.recorder", "netfl.trace"),
    "netfl.mobility": ("netfl.radio", "netfl.fl", "netfl.recorder", "netfl.trace"),
    "netfl.recorder": ("netfl.radio", "netfl.mobility", "netfl.fl", "netfl.trace", "netfl.sweep"),
}


def folder_graph(graph: nx.DiGraph, root: Path) -> nx.DiGraph:
    """The arrows between netfl's folders (sub-packages), each labelled by one file arrow."""
    folders = {p.name for p in (root / "netfl").iterdir() if (p / "__init__.py").exists()}
    contracted = nx.DiGraph()
    for name, target, line in graph.edges(data="line"):
        a, b = name.split("."), target.split(".")
        if len(a) > 2 and len(b) > 2 and a[1] in folders and b[1] in folders and a[1] != b[1]:
            contracted.add_edge(a[1], b[1], example=f"{name} (line {line}) imports {target}")
    return contracted


def folder_circles(graph: nx.DiGraph) -> list[str]:
    return [
        "; ".join(graph.edges[a, b]["example"] for a, b in zip(c, [*c[1:], c[0]], strict=True))
        for c in nx.simple_cycles(graph)
    ]


def test_no_import_circle_between_netfl_folders() -> None:
    """Folders are layered like files: no two sub-packages import each other, even
    through different files (issue 33: radio <-> mobility, radio -> trace -> ... )."""
    assert folder_circles(folder_graph(import_graph(ROOT, ("netfl",)), ROOT)) == []


def test_the_folder_check_finds_a_planted_folder_circle(tmp_path: Path) -> None:
    for folder in ("radio", "mobility"):
        (tmp_path / "netfl" / folder).mkdir(parents=True)
        (tmp_path / "netfl" / folder / "__init__.py").write_text("")
    (tmp_path / "netfl" / "__init__.py").write_text("")
    (tmp_path / "netfl" / "radio" / "motion.py").write_text("from netfl.mobility import base\n")
    (tmp_path / "netfl" / "mobility" / "base.py").write_text("")
    (tmp_path / "netfl" / "mobility" / "area.py").write_text("import netfl.radio.geometry\n")
    (tmp_path / "netfl" / "radio" / "geometry.py").write_text("")
    graph = import_graph(tmp_path, ("netfl",))
    assert circles(graph) == []  # no file circle ...
    found = folder_circles(folder_graph(graph, tmp_path))
    assert len(found) == 1 and "netfl.mobility.area (line 1)" in found[0]  # ... a folder one


def test_radio_and_learning_do_not_import_the_protocol_or_the_strategies() -> None:
    graph = import_graph(ROOT, ("netfl",))
    wrong = [
        f"{name} (line {line}) imports {target}"
        for name, target, line in graph.edges(data="line")
        for layer, above in FORBIDDEN.items()
        if name.startswith(layer + ".")
        and any(target == a or target.startswith(a + ".") for a in above)
    ]
    assert wrong == []
