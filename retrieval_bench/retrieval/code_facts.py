"""What the code graph reads from one Python file: its definitions, imports and used
names (docs/stages.md#code-structure).

:func:`cached_facts` gives them for the many snapshots of one repository's
history, remembered by content in the process and on disk. They are read from
the file's tree-sitter tree (:mod:`~retrieval_bench.chunking.tree_facts`): the
tree the ``ast`` chunker built when it chunked the file, whose facts it hands
over (:func:`~retrieval_bench.chunking.facts_handover.hand_over`), so a file is
parsed once for both stages; a file the chunker did not parse (one chunk: it fits
the budget; or its chunks came from the chunk cache) is parsed here. The chunker
hands facts over once this stage has asked for some in the process: a run
without a code graph pays nothing, one with it parses its first snapshot here.

:func:`parse_facts` reads the same facts with Python's :mod:`ast`. It is the
definition the tree-sitter rules are checked against on real histories
(tests/unit/retrieval/test_tree_facts.py); the two differ only where the grammars
do, on files one of them parses and the other does not.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from retrieval_bench.chunking.facts_handover import take_handed
from retrieval_bench.chunking.tree_facts import FileFacts, ImportRef, parse_tree_facts

__all__ = ["FactsStore", "FileFacts", "ImportRef", "cached_facts", "facts_key", "parse_facts"]

FACTS_CACHE_SIZE = 5_000
"""Parsed files remembered per process, by content (:func:`cached_facts`)."""
_BUILTINS = frozenset(dir(builtins))


class FactsStore(Protocol):
    """Where facts outlive the process (the on-disk facts cache)."""

    def get(self, key: bytes) -> tuple[bool, FileFacts | None]:
        """``(found, facts)`` of the text whose :func:`facts_key` is ``key``."""
        ...

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, FileFacts | None]:
        """The facts found of ``keys`` (:meth:`get` of many, in few reads)."""
        ...

    def put(self, key: bytes, facts: FileFacts | None) -> None: ...


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


def _ast_facts(tree: ast.Module) -> FileFacts:
    """Definitions, imports, uses and ``name.attr`` reads of ``tree``, visited level by
    level in :func:`ast.walk`'s order (so imports come in that order), then used names
    filtered: no dunders, builtins, own definitions or imported names."""
    facts = FileFacts(defines=set(_module_level(tree.body)))
    uses, attrs = set(), facts.module_attrs
    level: list[ast.AST] = list(tree.body)
    while level:
        below: list[ast.AST] = []
        for node in level:
            below.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                facts.defines.add(node.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    alias = a.asname or a.name.split(".", 1)[0]
                    facts.imports.append(ImportRef(0, a.name, None, alias))
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    ref = ImportRef(node.level, node.module or "", a.name, a.asname or a.name)
                    facts.imports.append(ref)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                uses.add(node.func.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                uses.add(node.attr)
                if isinstance(node.value, ast.Name):
                    attrs.add((node.value.id, node.attr))
        level = below
    bound = {ref.alias for ref in facts.imports}
    facts.uses = {
        n
        for n in uses
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
    return None if tree is None else _ast_facts(tree)


_FACTS: OrderedDict[bytes, FileFacts | None] = OrderedDict()


def facts_key(text: str) -> bytes:
    """The content key of a file's text: blake2b-128 of its UTF-8 bytes."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def prefetch_facts(files: Iterable[tuple[str, str | None]], store: FactsStore | None) -> None:
    """Read into the process memo, in one pass over ``store``, the facts of the files
    ``(text, sha256 or None)`` it lacks: :func:`cached_facts` then finds them there
    (a snapshot's files read together, not one query each)."""
    if store is None:
        return
    wanted: dict[bytes, bytes] = {}  # the store's key → the memo's
    for text, sha256 in files:
        key = b"sha256:" + bytes.fromhex(sha256) if sha256 else facts_key(text)
        if key not in _FACTS:
            wanted[facts_key(text)] = key
    if not wanted:
        return
    for text_key, facts in store.get_many(list(wanted)).items():
        _FACTS[wanted[text_key]] = facts
    while len(_FACTS) > FACTS_CACHE_SIZE:
        _FACTS.popitem(last=False)


def cached_facts(
    source: str, store: FactsStore | None = None, sha256: str | None = None
) -> FileFacts | None:
    """The facts of ``source`` (:func:`~retrieval_bench.chunking.tree_facts.parse_tree_facts`),
    remembered for the last :data:`FACTS_CACHE_SIZE` texts and, with ``store``, on
    disk (:class:`~retrieval_bench.retrieval.facts_cache.FactsCache`). Remembered by
    the text's hash, or by ``sha256`` — the hash of the file's bytes the walker
    already computed, which determines the text it was decoded to — when the caller
    has it; then the facts the chunker handed over for those bytes are taken first
    (and written to ``store``, which keeps a row it has). Facts depend on the text
    alone, so snapshots never mix; callers must not modify the returned object."""
    key = b"sha256:" + bytes.fromhex(sha256) if sha256 else facts_key(source)
    if key in _FACTS:
        _FACTS.move_to_end(key)
        return _FACTS[key]
    text_key = facts_key(source) if sha256 and store is not None else key
    found, facts = take_handed(key) if sha256 else (False, None)
    if not found and store is not None:
        found, stored = store.get(text_key)
        if found:
            facts, store = stored, None  # nothing to write back
    if not found:
        facts = parse_tree_facts(source)
    if store is not None:
        store.put(text_key, facts)
    _FACTS[key] = facts
    while len(_FACTS) > FACTS_CACHE_SIZE:
        _FACTS.popitem(last=False)
    return facts
