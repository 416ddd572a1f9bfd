"""Gold functions from a patch by LocAgent's rules (docs/metrics.md#conventions).

LocAgent (Chen et al. 2025, "LocAgent: Graph-Guided LLM Agents for Code
Localization") and the tables that reprint its numbers (SweRank, CoSIL) derive a
bug's gold functions from its fix with Python's ``ast`` and a handful of rules
that differ from this project's own (:mod:`retrieval_bench.datasets.gold_functions`).
This module states those rules as facts and implements them, so module and
function numbers can be compared with the published ones (``metrics:
{conventions: locagent}``):

* the file's structure is Python's ``ast``: every class (any depth) with its
  direct methods, and every other function (any depth) whose name is not a
  method name of a class met before it in ``ast.walk`` order; a definition spans
  its ``def``/``class`` line to its last line — **decorator lines lie outside**;
* a line names the first method, in that order, whose span holds it
  (``path:Class.method``); a line inside a class but outside its methods names
  **nothing** (a class attribute, a nested class's method); otherwise the first
  function holding it (``path:function``; a nested function's line names its
  outer function, met first);
* **skipped**: blank lines, lines that start with ``#``, lines of an ``import``
  statement (anywhere, even inside a function) and lines of a class docstring
  (from its first line, as many lines as ``ast.get_docstring`` gives);
* a removed line is read in the base file, an added line in the patched file;
  an added line's function is gold only if the base file has it (a function of
  that name, or that class with that method): **a definition the patch creates
  is not gold**, and a new method does not name its class;
* hunks sit where their context puts them
  (:mod:`~retrieval_bench.datasets.hunk_positions`), as LocAgent applies the
  patch with ``patch`` and reads its offsets;
* a file whose base or patched text Python cannot parse names nothing.

LocAgent's generator also keeps only patches that touch a single Python file
and adds no file; that filter is the dataset's business, not a rule of
derivation, and is not applied here (SWE-bench Lite's fixes each touch one
file). Its evaluation folds ``Class.__init__`` into ``Class`` when it scores
(:mod:`retrieval_bench.metrics.retrieval.conventions`); the gold keeps the
``__init__`` name.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from retrieval_bench.datasets.gold_functions import FileChange, file_changes

Span = tuple[int, int]


@dataclass
class Structure:
    """What LocAgent reads of one Python file (module doc)."""

    classes: list[tuple[str, Span, list[tuple[str, Span]]]] = field(default_factory=list)
    """(class name, span, [(method name, span)]) in ``ast.walk`` order."""
    functions: list[tuple[str, Span]] = field(default_factory=list)
    skipped: list[Span] = field(default_factory=list)
    """Import statements and class docstrings."""

    def name_of(self, line: int) -> str | None:
        """The entity a line names (module doc), None for none."""
        for cls, (start, end), methods in self.classes:
            for method, (m_start, m_end) in methods:
                if m_start <= line <= m_end:
                    return f"{cls}.{method}"
            if start <= line <= end:
                return None  # class body outside every method
        for name, (start, end) in self.functions:
            if start <= line <= end:
                return name
        return None

    def has(self, name: str) -> bool:
        """Whether the file defines ``name`` (``function`` or ``Class.method``)."""
        if "." not in name:
            return any(f == name for f, _ in self.functions)
        cls, _, method = name.partition(".")
        first = next((methods for c, _, methods in self.classes if c == cls), None)
        return first is not None and any(m == method for m, _ in first)

    def is_skipped(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.skipped)


def _span(node: ast.stmt) -> Span:
    return node.lineno, node.end_lineno or node.lineno


def structure(source: str) -> Structure | None:
    """The file's :class:`Structure`; None when Python cannot parse it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    out = Structure()
    method_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods = [
                (n.name, _span(n))
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            method_names.update(m for m, _ in methods)
            out.classes.append((node.name, _span(node), methods))
            doc = ast.get_docstring(node)
            if doc:
                first = node.body[0].lineno
                out.skipped.append((first, first + len(doc.splitlines()) - 1))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name not in method_names:
                out.functions.append((node.name, _span(node)))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.skipped.append(_span(node))
    return out


def _counts(text: str) -> bool:
    """Whether a changed line's text is looked at: not blank, not a ``#`` comment."""
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def locagent_entities(patch: str, base_source: Callable[[str], str | None]) -> list[str]:
    """The gold functions of ``patch`` by LocAgent's rules (module doc), sorted;
    ``base_source(path)`` gives a file's base text (None: not in the base)."""
    return locagent_in(file_changes(patch, base_source))


def locagent_in(changes: Iterable[FileChange]) -> list[str]:
    """LocAgent's gold functions of located file changes
    (:func:`~retrieval_bench.datasets.gold_functions.file_changes`), sorted."""
    found: set[str] = set()
    for change in changes:
        old, new = structure(change.base), structure(change.patched)
        if old is None or new is None:
            continue
        names = _named(old, zip(change.removed, change.removed_text, strict=True))
        names += [
            n for n in _named(new, zip(change.added, change.added_text, strict=True)) if old.has(n)
        ]
        found.update(f"{change.path}:{n}" for n in names)
    return sorted(found)


def _named(where: Structure, lines: Iterable[tuple[int, str]]) -> list[str]:
    out: list[str] = []
    for line, text in lines:
        if not _counts(text) or where.is_skipped(line):
            continue
        name = where.name_of(line)
        if name is not None:
            out.append(name)
    return out
