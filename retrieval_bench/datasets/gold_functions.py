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

import functools
import hashlib
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from unidiff import PatchedFile, PatchSet

from retrieval_bench.datasets.hunk_positions import LocatedHunk, locate_hunks
from retrieval_bench.errors import DatasetError
from retrieval_bench.types import module_of

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Query

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


@functools.cache
def _parser_and_query() -> tuple[Parser, Query]:
    """One tree-sitter parser and the query matching every ``def`` and ``class``."""
    import tree_sitter_python
    from tree_sitter import Language, Parser, Query

    language = Language(tree_sitter_python.language())
    return Parser(language), Query(language, "(function_definition) @d (class_definition) @d")


def _name(node: Node) -> str:
    name_node = node.child_by_field_name("name")
    raw = name_node.text if name_node is not None else None
    return raw.decode("utf-8", "replace") if raw else "?"


def definitions(source: str) -> list[Definition]:
    """Every ``def``/``class`` of a Python source with its chain of enclosing names,
    outermost first (tree-sitter; the query finds the definitions in C, and each
    names itself by walking up its parents)."""
    from tree_sitter import QueryCursor

    parser, query = _parser_and_query()
    tree = parser.parse(source.encode("utf-8", "surrogatepass"))
    nodes = QueryCursor(query).captures(tree.root_node).get("d", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    out: list[Definition] = []
    for node in nodes:
        chain: list[tuple[str, str]] = []  # (type, name), innermost first
        up: Node | None = node
        while up is not None:
            if up.type in DEFINITIONS:
                chain.append((up.type, _name(up)))
            up = up.parent
        chain.reverse()
        names = [name for _, name in chain]
        first_function = next(
            (i for i, (kind, _) in enumerate(chain) if kind == "function_definition"), None
        )
        cut = len(names) if first_function is None else first_function + 1
        parent = node.parent
        span = parent if parent is not None and parent.type == "decorated_definition" else node
        first, last = span.start_point[0] + 1, span.end_point[0] + 1
        out.append(Definition(".".join(names), first, last, ".".join(names[:cut])))
    return out


_BY_CONTENT: dict[bytes, tuple[Definition, ...]] = {}
_BY_CONTENT_LIMIT = 100_000


def content_key(text: str) -> bytes:
    """A 16-byte hash of a file's text: the key of the process's per-content caches."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class DefinitionsStore(Protocol):
    """Where definitions outlive the process (the on-disk definitions cache)."""

    def get(self, key: bytes) -> tuple[Definition, ...] | None: ...

    def put(self, key: bytes, defs: Sequence[Definition]) -> None: ...


def definitions_cached(
    text: str, key: bytes | None = None, store: DefinitionsStore | None = None
) -> tuple[Definition, ...]:
    """:func:`definitions` of ``text``, parsed once per file content and process (``key``:
    its :func:`content_key`, when the caller has it), and with ``store`` once per
    content for every process that shares it: the snapshots of one repository share
    most files, and the function measures and the function ranker read the same
    ones."""
    key = content_key(text) if key is None else key
    found = _BY_CONTENT.get(key)
    if found is None:
        if len(_BY_CONTENT) >= _BY_CONTENT_LIMIT:
            _BY_CONTENT.clear()
        found = store.get(key) if store is not None else None
        if found is None:
            found = tuple(definitions(text))
            if store is not None:
                store.put(key, found)
        _BY_CONTENT[key] = found
    return found


def innermost(defs: Iterable[Definition], line: int) -> Definition | None:
    """The narrowest definition holding ``line`` (None: none holds it)."""
    holding = [d for d in defs if d.start <= line <= d.end]
    return min(holding, key=lambda d: (d.end - d.start, -d.start), default=None)


def patched_text(
    base: str, pf: PatchedFile, located: Sequence[LocatedHunk]
) -> tuple[str, list[int]]:
    """The text of one file after its hunks, each applied where it was located, and
    the 1-based line numbers its added lines have there."""
    src = base.splitlines(keepends=True)
    out: list[str] = []
    added: list[int] = []
    pos = 0  # next base line to copy, 0-based
    for hunk, place in zip(pf, located, strict=True):
        out += src[pos : place.start]
        for ln in hunk:
            if ln.is_added:
                added.append(len(out) + 1)
            if ln.is_added or ln.is_context:  # not a removed line, nor "\ No newline…"
                out.append(ln.value)
        pos = place.start + hunk.source_length
    return "".join(out + src[pos:]), added


@dataclass(frozen=True)
class FileChange:
    """One Python file's change, its hunks located in the base text."""

    path: str
    base: str
    removed: list[int]
    """1-based base line numbers of the removed lines."""
    patched: str
    added: list[int]
    """1-based line numbers of the added lines in ``patched``."""
    removed_text: list[str]
    added_text: list[str]


def read_patch(patch: str) -> PatchSet:
    """``patch`` parsed by unidiff; a :class:`DatasetError` when it is no unified diff."""
    try:
        return PatchSet(patch)
    except Exception as exc:  # noqa: BLE001 - unidiff raises its own error types
        raise DatasetError(f"the patch cannot be read as a unified diff: {exc}") from None


def file_changes(patch: str, base_source: Callable[[str], str | None]) -> list[FileChange]:
    """The Python files ``patch`` modifies that the base has, each with its hunks
    located by context (:mod:`~retrieval_bench.datasets.hunk_positions`); raise
    :class:`~retrieval_bench.errors.DatasetError` for a patch that is no unified diff
    and :class:`~retrieval_bench.datasets.hunk_positions.HunkError` for a hunk that
    does not apply."""
    out: list[FileChange] = []
    for pf in read_patch(patch):
        path = pf.source_file.removeprefix("a/")
        if pf.is_added_file or not path.endswith(".py"):
            continue
        source = base_source(path)
        if source is None:
            continue
        located = locate_hunks(source, pf, path)
        removed, removed_text = [], []
        for hunk, place in zip(pf, located, strict=True):
            for ln in hunk:
                if ln.is_removed:
                    removed.append(ln.source_line_no + place.offset)
                    removed_text.append(ln.value)
        text, added = patched_text(source, pf, located)
        added_text = [ln.value for h in pf for ln in h if ln.is_added]
        out.append(FileChange(path, source, removed, text, added, removed_text, added_text))
    return out


def gold_entities(patch: str, base_source: Callable[[str], str | None]) -> list[str]:
    """The gold functions of ``patch`` (module doc), sorted (their modules:
    :func:`modules_of`); ``base_source(path)`` gives a file's base text (None: not in
    the base). Hunks are located by their context (a hunk that does not apply is a
    :class:`~retrieval_bench.datasets.hunk_positions.HunkError`)."""
    return entities_in(file_changes(patch, base_source))


def entities_in(changes: Iterable[FileChange]) -> list[str]:
    """The gold functions of located file changes (:func:`file_changes`), sorted: what
    :func:`gold_entities` derives, for a caller that also derives LocAgent's from the
    same changes."""
    functions: set[str] = set()
    for change in changes:
        base_defs = definitions(change.base)
        found = [innermost(base_defs, line) for line in change.removed]
        entity_of = {d.name: d.entity for d in base_defs}
        entities = {d.entity for d in found if d is not None}
        if change.added:
            target_defs = definitions(change.patched)
            for d in (innermost(target_defs, ln) for ln in change.added):
                chain = d.name.split(".") if d is not None else []
                while chain and ".".join(chain) not in entity_of:
                    chain.pop()  # created by the patch: its nearest enclosing base definition
                if chain:
                    entities.add(entity_of[".".join(chain)])
        functions.update(f"{change.path}:{name}" for name in entities)
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
