"""What the code graph reads from one Python file: its definitions, imports and used
names (docs/stages.md#code-structure), parsed once per distinct top-level block.

:func:`parse_facts` parses a whole file with :mod:`ast`. :func:`cached_facts`
gives the same facts for the many snapshots of one repository's history at a
cost proportional to what changed between them: a file is cut into its
top-level blocks (a statement that starts at column 0, with its decorators and
its ``else``/``elif``/``except``/``finally`` parts), each distinct block is
parsed once per process, and the file's facts are the blocks' facts merged.

Why the merge is exact. Python tokenizes a file left to right; a block that
parses alone ended with no bracket, string or line continuation open, so the
next column-0 line starts a statement in the whole file too, and the tokens of
every block are those the whole file has there. A cut that falls inside a
bracket, a triple-quoted string or after a backslash leaves the block before it
unparsable, so any block that fails sends the file to :func:`parse_facts`
whole (and a file that does not parse has a block that does not). The facts
are sets, but for :attr:`FileFacts.imports`, whose order is that of
:func:`ast.walk` — breadth first, so all imports at depth *d* come before any
at depth *d + 1*, in file order — which the merge rebuilds from each block's
imports and their depths.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

FACTS_CACHE_SIZE = 5_000
"""Parsed files remembered per process, by content (:func:`cached_facts`)."""
BLOCKS_CACHE_SIZE = 400_000
"""Parsed top-level blocks remembered per process, by content."""
MAX_JOINS = 16
"""Blocks joined because they did not parse alone before the whole file is parsed
instead (a file with a syntax error would otherwise be parsed once per block)."""
_BUILTINS = frozenset(dir(builtins))
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")
"""Column-0 lines that continue the statement above them."""
_NOT_A_START = frozenset(" \t\f\r\n#\\)]}")
"""First characters of lines that do not start a statement."""


@dataclass(frozen=True)
class ImportRef:
    """One imported binding: ``level`` dots, ``module`` (may be ""), the imported
    ``name`` (None for ``import module``), and the local ``alias`` it binds."""

    level: int
    module: str
    name: str | None
    alias: str


@dataclass
class FileFacts:
    """What :func:`parse_facts` reads from one Python file."""

    defines: set[str] = field(default_factory=set)
    imports: list[ImportRef] = field(default_factory=list)
    uses: set[str] = field(default_factory=set)
    module_attrs: set[tuple[str, str]] = field(default_factory=set)
    """(local name, attribute) for every ``local.attribute`` read."""


class FactsStore(Protocol):
    """Where facts outlive the process (the on-disk facts cache)."""

    def get(self, key: bytes) -> tuple[bool, FileFacts | None]:
        """``(found, facts)`` of the text whose :func:`facts_key` is ``key``."""
        ...

    def put(self, key: bytes, facts: FileFacts | None) -> None: ...


@dataclass(frozen=True)
class _Raw:
    """One tree's facts before the file-level filter of used names; imports with the
    depth :func:`ast.walk` meets them at."""

    defines: frozenset[str]
    imports: tuple[tuple[int, ImportRef], ...]
    uses: frozenset[str]
    module_attrs: frozenset[tuple[str, str]]


def _assigned(targets: Iterable[ast.expr]) -> Iterator[str]:
    for t in targets:
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, ast.Tuple | ast.List):
            yield from _assigned(t.elts)


def _module_level(body: list[ast.stmt]) -> Iterator[str]:
    """Names assigned at module level, also inside module-level if/try/with."""
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            yield from _assigned(stmt.targets)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id
        elif isinstance(stmt, ast.If | ast.With | ast.AsyncWith):
            yield from _module_level(stmt.body)
            yield from _module_level(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, stmt.orelse, stmt.finalbody):
                yield from _module_level(part)
            for handler in stmt.handlers:
                yield from _module_level(handler.body)


def _parse(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning on old escape sequences
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _raw_facts(tree: ast.Module) -> _Raw:
    """Definitions, imports (with depth), uses and ``name.attr`` reads of ``tree``,
    visited level by level in :func:`ast.walk`'s order."""
    defines = set(_module_level(tree.body))
    imports: list[tuple[int, ImportRef]] = []
    uses: set[str] = set()
    attrs: set[tuple[str, str]] = set()
    level: list[ast.AST] = list(tree.body)
    depth = 1
    children = ast.iter_child_nodes
    while level:
        below: list[ast.AST] = []
        for node in level:
            below.extend(children(node))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defines.add(node.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    ref = ImportRef(0, a.name, None, a.asname or a.name.split(".", 1)[0])
                    imports.append((depth, ref))
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    ref = ImportRef(node.level, node.module or "", a.name, a.asname or a.name)
                    imports.append((depth, ref))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                uses.add(node.func.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                uses.add(node.attr)
                if isinstance(node.value, ast.Name):
                    attrs.add((node.value.id, node.attr))
        level, depth = below, depth + 1
    return _Raw(frozenset(defines), tuple(imports), frozenset(uses), frozenset(attrs))


def _file_facts(parts: list[_Raw]) -> FileFacts:
    """The facts of a file from those of its consecutive blocks (module doc): sets
    joined, imports in breadth-first order, used names filtered once for the file."""
    facts = FileFacts()
    ordered: list[tuple[int, int, int, ImportRef]] = []
    for b, raw in enumerate(parts):
        facts.defines |= raw.defines
        facts.uses |= raw.uses
        facts.module_attrs |= raw.module_attrs
        ordered += [(depth, b, i, ref) for i, (depth, ref) in enumerate(raw.imports)]
    ordered.sort(key=lambda t: t[:3])
    facts.imports = [ref for *_, ref in ordered]
    bound = {ref.alias for ref in facts.imports}
    facts.uses = {
        n
        for n in facts.uses
        if not (n.startswith("__") or n in _BUILTINS or n in facts.defines or n in bound)
    }
    return facts


def parse_facts(source: str) -> FileFacts | None:
    """Definitions, imports and used names of one file; None when it does not parse.

    Per file: every ``def``/``async def``/``class`` name (any depth) and every
    module-level assignment target (also inside module-level ``if``/``try``/``with``);
    every ``import``/``from … import`` (any depth); names called and attribute names
    read, minus dunders, builtins, the file's own definitions and imported names.
    """
    tree = _parse(source)
    return None if tree is None else _file_facts([_raw_facts(tree)])


def top_level_blocks(source: str) -> list[str]:
    """``source`` cut before the column-0 lines that likely start a statement (module
    doc); the blocks joined are ``source``. Blank, comment and indented lines, lines
    that close a bracket, the continuing keywords, the line after a decorator and the
    lines inside a triple-quoted string (by a count of its quotes) stay with the block
    above. Only a guess: :func:`blockwise_facts` joins a block that does not parse alone
    with the next."""
    blocks: list[str] = []
    start = pos = 0
    glue = False  # the next line belongs to this block (decorator, open string)
    in_string = False
    n = len(source)
    while pos < n:
        end = source.find("\n", pos)
        end = n if end < 0 else end + 1
        first = source[pos]
        if (
            not in_string
            and not glue
            and pos > start
            and first not in _NOT_A_START
            and not _CONTINUES.match(source, pos)
        ):
            blocks.append(source[start:pos])
            start = pos
        line = source[pos:end]
        if ('"""' in line or "'''" in line) and (line.count('"""') + line.count("'''")) % 2:
            in_string = not in_string
        glue = first == "@" and not in_string
        pos = end
    blocks.append(source[start:])
    return blocks


_FACTS: OrderedDict[bytes, FileFacts | None] = OrderedDict()
_BLOCKS: OrderedDict[bytes, _Raw | None] = OrderedDict()


def facts_key(text: str) -> bytes:
    """The content key of a file or block text: blake2b-128 of its UTF-8 bytes."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _block_facts(block: str) -> _Raw | None:
    key = facts_key(block)
    if key in _BLOCKS:
        _BLOCKS.move_to_end(key)
        return _BLOCKS[key]
    tree = _parse(block)
    raw = None if tree is None else _raw_facts(tree)
    _BLOCKS[key] = raw
    while len(_BLOCKS) > BLOCKS_CACHE_SIZE:
        _BLOCKS.popitem(last=False)
    return raw


def blockwise_facts(source: str) -> FileFacts | None:
    """:func:`parse_facts` of ``source`` from its top-level blocks, each parsed once
    per process (module doc). A block that does not parse alone is joined with the
    next until it does; after :data:`MAX_JOINS` joins, or with none left to join (the
    file does not parse), or when the file may change how Python parses it
    (``barry_as_FLUFL``), the whole file is parsed, as :func:`parse_facts` does."""
    if "barry_as_FLUFL" in source:
        return parse_facts(source)
    parts = []
    pending, joins = "", 0
    for block in top_level_blocks(source):
        if pending:
            joins += 1
            if joins > MAX_JOINS:
                return parse_facts(source)
        pending += block
        raw = _block_facts(pending)
        if raw is not None:
            parts.append(raw)
            pending = ""
    if pending:
        return parse_facts(source)
    return _file_facts(parts)


def cached_facts(
    source: str, store: FactsStore | None = None, sha256: str | None = None
) -> FileFacts | None:
    """The facts of ``source`` (:func:`blockwise_facts`), remembered for the last
    :data:`FACTS_CACHE_SIZE` texts and, with ``store``, on disk
    (:class:`~retrieval_bench.retrieval.facts_cache.FactsCache`). Remembered by the
    text's hash, or by ``sha256`` — the hash of the file's bytes the walker already
    computed, which determines the text it was decoded to — when the caller has it.
    Facts depend on the text alone, so snapshots never mix; callers must not modify
    the returned object."""
    key = b"sha256:" + bytes.fromhex(sha256) if sha256 else facts_key(source)
    if key in _FACTS:
        _FACTS.move_to_end(key)
        return _FACTS[key]
    text_key = facts_key(source) if sha256 and store is not None else key
    found, facts = store.get(text_key) if store is not None else (False, None)
    if not found:
        facts = blockwise_facts(source)
        if store is not None:
            store.put(text_key, facts)
    _FACTS[key] = facts
    while len(_FACTS) > FACTS_CACHE_SIZE:
        _FACTS.popitem(last=False)
    return facts
