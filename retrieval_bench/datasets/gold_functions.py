"""Gold functions and modules of a question from its fix's patch
(docs/metrics.md#function-and-module-level).

The code-localization benchmarks (LocAgent, SweRank, CoSIL, Agentless) score
files, **modules** and **functions**. A question's gold entities here are
derived from the patch and the files of the base version, in LocAgent's id
form ``path:Outer.inner`` (so its released ``found_entities`` can be scored):

* a removed or changed line of the base version belongs to the innermost
  definition (``def``, ``async def`` or ``class``, decorators included) whose
  lines hold it; that definition, named by its chain of enclosing definitions
  (``path:Class.method``), is gold — cut after the first function of the chain,
  so a function nested in a function is its outer function (``path:outer``,
  ``path:Class.method``), as the ``ast`` chunker's symbols and LocAgent's
  entities name them;
* an added line belongs to the innermost definition holding it in the patched
  version, or, when the base version has no definition of that name (the patch
  creates it), to the nearest enclosing one it has: lines appended to a method
  name that method, a method added to a class names the class, and a new
  top-level function names nothing (it could not be found in the base version);
* lines outside every definition (imports, module constants) name no
  function; a file the patch adds has no base version and names none; a
  renamed definition is gold under its base name, a deleted one under its name;
* a gold **module** is the top-level definition of a gold function
  (``path:Class`` for ``path:Class.method``), as in LocAgent's evaluation.

Only Python files (by their ``.py`` suffix) are parsed (tree-sitter, the
grammar the ``ast`` chunker uses); a file that does not parse still yields the
definitions tree-sitter recovers around the error.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from unidiff import PatchedFile, PatchSet

from retrieval_bench.errors import DatasetError
from retrieval_bench.types import module_of

DEFINITIONS = ("function_definition", "class_definition")


@dataclass(frozen=True)
class Definition:
    """One definition of a file: its dotted name and its lines (1-based, inclusive,
    decorators included)."""

    name: str
    start: int
    end: int
    entity: str = ""
    """``name`` cut after its first function (the gold entity it stands for)."""


def definitions(source: str) -> list[Definition]:
    """Every ``def``/``class`` of a Python source with its chain of enclosing names,
    outermost first (tree-sitter)."""
    import tree_sitter_python
    from tree_sitter import Language, Node, Parser

    parser = Parser(Language(tree_sitter_python.language()))
    tree = parser.parse(source.encode("utf-8", "surrogatepass"))
    out: list[Definition] = []

    def visit(node: Node, chain: tuple[str, ...], entity: str | None = None) -> None:
        for child in node.children:
            target, span = child, child
            if child.type == "decorated_definition":
                target = child.child_by_field_name("definition") or child
            if target.type in DEFINITIONS:
                name_node = target.child_by_field_name("name")
                raw = name_node.text if name_node is not None else None
                inner = (*chain, raw.decode("utf-8", "replace") if raw else "?")
                first, last = span.start_point[0] + 1, span.end_point[0] + 1
                name = ".".join(inner)
                mine = entity or name  # below a function: that function's entity
                out.append(Definition(name, first, last, mine))
                fixed = mine if (entity or target.type == "function_definition") else None
                visit(target, inner, fixed)
            else:
                visit(child, chain, entity)

    visit(tree.root_node, ())
    return out


def innermost(defs: Iterable[Definition], line: int) -> Definition | None:
    """The narrowest definition holding ``line`` (None: none holds it)."""
    holding = [d for d in defs if d.start <= line <= d.end]
    return min(holding, key=lambda d: (d.end - d.start, -d.start), default=None)


def _patched(base: str, pf: PatchedFile) -> str:
    """The text of one file after its hunks."""
    src = base.splitlines(keepends=True)
    out: list[str] = []
    pos = 0  # next base line to copy, 0-based
    for hunk in pf:
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        out += src[pos:start]
        out += [ln.value for ln in hunk if not ln.is_removed]
        pos = start + hunk.source_length
    return "".join(out + src[pos:])


def gold_entities(patch: str, base_source: Callable[[str], str | None]) -> list[str]:
    """The gold functions of ``patch`` (module doc), sorted (their modules:
    :func:`modules_of`); ``base_source(path)`` gives a file's base text (None: not in
    the base)."""
    try:
        parsed = PatchSet(patch)
    except Exception as exc:  # noqa: BLE001 - unidiff raises its own error types
        raise DatasetError(f"the patch cannot be read as a unified diff: {exc}") from None
    functions: set[str] = set()
    for pf in parsed:
        path = pf.source_file.removeprefix("a/")
        if pf.is_added_file or not path.endswith(".py"):
            continue
        source = base_source(path)
        if source is None:
            continue
        base_defs = definitions(source)
        found = [innermost(base_defs, ln.source_line_no) for h in pf for ln in h if ln.is_removed]
        added = [ln.target_line_no for h in pf for ln in h if ln.is_added]
        entity_of = {d.name: d.entity for d in base_defs}
        entities = {d.entity for d in found if d is not None}
        if added:
            target_defs = definitions(_patched(source, pf))
            for d in (innermost(target_defs, ln) for ln in added):
                chain = d.name.split(".") if d is not None else []
                while chain and ".".join(chain) not in entity_of:
                    chain.pop()  # created by the patch: its nearest enclosing base definition
                if chain:
                    entities.add(entity_of[".".join(chain)])
        functions.update(f"{path}:{name}" for name in entities)
    return sorted(functions)


def modules_of(functions: Iterable[str]) -> set[str]:
    """The module of each gold function: ``path:Class`` for ``path:Class.method``."""
    return {module_of(f) for f in functions}


def at_commit(repo: str | Path, commit: str) -> Callable[[str], str | None]:
    """``base_source`` of a git repository (a clone, mirror or bare repository) at
    ``commit``: ``git show COMMIT:PATH``, None when the commit has no such file (or
    ``commit`` starts with ``-``: no commit does, and git would read it as an option)."""

    def show(path: str) -> str | None:
        if commit.startswith("-"):
            return None
        cmd = ["git", "-C", str(repo), "show", f"{commit}:{path}"]
        out = subprocess.run(cmd, capture_output=True)
        return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None

    return show
