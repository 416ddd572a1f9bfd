"""Layering: no import cycle between the modules of ``retrieval_bench``, and no
import from a higher package layer (the order: docs/architecture.md#layers).

Every module is parsed with :mod:`ast`; an import at any depth counts
(module level, inside functions and methods, in ``try`` blocks), except those
under ``if TYPE_CHECKING:``, which never run. ``import a.b`` and
``from a import b`` (``b`` a submodule) are edges to ``a.b``; ``from a import
name`` (``name`` not a submodule) is an edge to ``a`` (its ``__init__``).
Parent packages a dotted import initialises on the way are not counted.

Package layers: ``docs/architecture.md`` lists them, lowest first, in its one
fenced ``layers`` block (``name: module module ...``); a module is in the layer
of the longest listed name that is it or a package above it, and may import
only from its own layer and those below.

A cycle means two modules each need the other, so neither can be read,
tested or moved alone; break it by moving what both need into a module below
them (see docs/architecture.md).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import retrieval_bench

PACKAGE = "retrieval_bench"
ROOT = Path(retrieval_bench.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement below ``node``, skipping ``if TYPE_CHECKING:`` bodies."""
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _imports(child)
        return
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    for child in ast.iter_child_nodes(node):
        yield from _imports(child)


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(
    module: str, path: Path, node: ast.Import | ast.ImportFrom, known: set[str]
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name
        return
    source = _resolve_from(module, path.name == "__init__.py", node)
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in known:
            yield sub
        elif source in known:
            yield source


def import_graph() -> dict[str, set[str]]:
    """module → the ``retrieval_bench`` modules it imports (at any depth)."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges = {t for node in _imports(tree) for t in _targets(module, path, node, known)}
        edges.discard(module)
        graph[module] = edges
    return graph


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _shortest_cycle(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """A shortest cycle through the first member, inside the component."""
    inside = set(members)
    start = members[0]
    prev: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & inside):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    return [*members, start]  # unreachable for a real component


def import_cycles() -> list[list[str]]:
    graph = import_graph()
    return [_shortest_cycle(graph, comp) for comp in _components(graph)]


def test_graph_sees_function_level_and_relative_imports() -> None:
    graph = import_graph()
    assert len(graph) > 100
    assert f"{PACKAGE}.errors" in graph[f"{PACKAGE}.config"]


def test_cycle_finder_reports_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [_shortest_cycle(graph, comp) for comp in _components(graph)] == [["a", "b", "c", "a"]]


def test_no_module_import_cycles() -> None:
    cycles = import_cycles()
    assert not cycles, "import cycles between modules:\n" + "\n".join(
        " -> ".join(c) for c in cycles
    )


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_llm_does_not_depend_on_the_config() -> None:
    """``llm/`` owns its settings type; the config uses it, never the other way."""
    graph = import_graph()
    config = f"{PACKAGE}.config"
    bad = sorted(
        m for m in graph if m.startswith(f"{PACKAGE}.llm") and config in _reachable(graph, m)
    )
    assert not bad, f"these llm modules reach {config}: {', '.join(bad)}"


def test_specs_module_is_dependency_free() -> None:
    """The spec types sit below the config and the metric factory: toolkit imports
    are limited to the errors module and two modules that import only it (the names
    rule, the YAML reader)."""
    graph = import_graph()
    leaves = {f"{PACKAGE}.identifiers", f"{PACKAGE}.config_files"}
    assert graph[f"{PACKAGE}.specs"] <= {f"{PACKAGE}.errors", *leaves}
    for leaf in leaves:
        assert graph[leaf] <= {f"{PACKAGE}.errors"}


def test_no_private_names_imported_across_modules() -> None:
    """A ``_name`` is its module's business: another module needing it means it
    should be public (e.g. ``api.py`` uses the pipeline's public helpers)."""
    found = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _resolve_from(module, path.name == "__init__.py", node)
            if not source.startswith(PACKAGE):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{module}: from {source} import {alias.name}")
    assert not found, "private names imported from another module:\n" + "\n".join(found)


# ----------------------------------------------------------------------------- package layers

DOCS = ROOT.parent / "docs" / "architecture.md"


def layer_order(text: str | None = None) -> list[tuple[str, list[str]]]:
    """``(layer, [module names relative to the package])`` lowest first, from the
    ``layers`` block of docs/architecture.md (``retrieval_bench`` is the package)."""
    text = DOCS.read_text(encoding="utf-8") if text is None else text
    blocks = text.split("```layers\n")
    assert len(blocks) == 2, "docs/architecture.md must hold exactly one ```layers block"
    body = blocks[1].split("```", 1)[0]
    order = []
    for line in body.splitlines():
        if line.strip():
            name, _, members = line.partition(":")
            order.append((name.strip(), members.split()))
    return order


def layer_of(module: str, order: list[tuple[str, list[str]]]) -> int | None:
    """Index of ``module``'s layer: its longest listed prefix (None: unlisted)."""
    rel = module.removeprefix(PACKAGE).removeprefix(".")
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, (_, members) in enumerate(order):
        for m in members:
            name = "" if m == PACKAGE else m
            holds = rel == name or (name and rel.startswith(name + "."))
            if holds and (best is None or len(name) > best[0]):
                best = (len(name), i)
    return None if best is None else best[1]


def upward_imports(graph: dict[str, set[str]], order: list[tuple[str, list[str]]]) -> list[str]:
    """``importer (layer) -> imported (layer)`` for every import from a higher layer."""
    found = []
    for module in sorted(graph):
        mine = layer_of(module, order)
        for target in sorted(graph[module]):
            theirs = layer_of(target, order)
            if mine is not None and theirs is not None and theirs > mine:
                found.append(f"{module} ({order[mine][0]}) -> {target} ({order[theirs][0]})")
    return found


def test_every_module_has_a_layer() -> None:
    order = layer_order()
    missing = sorted(m for m in import_graph() if layer_of(m, order) is None)
    assert not missing, "modules in no layer of docs/architecture.md#layers: " + ", ".join(missing)


def test_layer_rule_finds_an_upward_import() -> None:
    order = layer_order("```layers\nlow: a.base errors\nhigh: a\ntop: retrieval_bench\n```\n")
    graph = {
        f"{PACKAGE}.a.base": {f"{PACKAGE}.errors"},
        f"{PACKAGE}.a.impl": {f"{PACKAGE}.a.base"},
        f"{PACKAGE}.errors": {f"{PACKAGE}.a.impl", f"{PACKAGE}"},
        PACKAGE: {f"{PACKAGE}.a.impl"},
    }
    assert upward_imports(graph, order) == [
        f"{PACKAGE}.errors (low) -> {PACKAGE} (top)",
        f"{PACKAGE}.errors (low) -> {PACKAGE}.a.impl (high)",
    ]


def test_no_import_from_a_higher_layer() -> None:
    found = upward_imports(import_graph(), layer_order())
    assert not found, "imports from a higher layer (docs/architecture.md#layers):\n" + "\n".join(
        found
    )
