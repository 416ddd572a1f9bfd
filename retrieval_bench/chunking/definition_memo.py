"""The chunks of top-level definitions remembered by their text, so a changed file
re-chunks only its changed definitions (docs/architecture.md#caches).

Used by the ``ast`` chunker for error-free Python files (see :class:`DefinitionMemo`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from retrieval_bench.chunking.cache import chunk_cache_enabled, chunker_key
from retrieval_bench.chunking.text import LineText, make_chunk
from retrieval_bench.contracts.chunker import Chunker
from retrieval_bench.types import Chunk

_DEFINITIONS: dict[tuple[str, str], dict[str, list[tuple[Any, ...]]]] = {}
_DEFINITIONS_LIMIT = 200_000
"""Top-level definitions whose chunks the process keeps, per chunker setting."""


class DefinitionMemo:
    """The chunks of top-level definitions by the text of their rows, for one file
    (docs/architecture.md#caches). In an error-free Python file a top-level
    definition (with its attached comments and decorators) owns whole rows, and its
    chunks depend on those rows' text only: tree-sitter parses it the same at the top
    level of any file, its token counts are its lines' and its hidden byte ranges
    move with it. So a changed file re-chunks only its changed definitions; the
    chunks of the others are re-made for their rows and path (ids re-derived)."""

    def __init__(
        self, path: str, language: str, doc: LineText, table: dict[str, list[tuple[Any, ...]]]
    ) -> None:
        self.path, self.language, self.doc = path, language, doc
        self.table = table

    def chunks(self, first: int, last: int, make: Callable[[], list[Chunk]]) -> list[Chunk]:
        key = self.doc.join(first, last)
        rows = self.table.get(key)
        if rows is None:
            made = make()
            if len(self.table) >= _DEFINITIONS_LIMIT:
                self.table.clear()
            self.table[key] = [
                (c.kind, c.symbol, c.start_line - 1 - first, c.end_line - 1 - first,
                 c.text, c.n_tokens)
                for c in made
            ]  # fmt: skip
            return made
        return [
            make_chunk(self.path, self.language, kind, symbol, first + a, first + b, text, n)
            for kind, symbol, a, b, text, n in rows
        ]


def definition_memo(
    chunker: Chunker, path: str, language: str, doc: LineText
) -> DefinitionMemo | None:
    """The process's memo for the file ``path`` chunked by ``chunker`` (its name and
    configuration) as ``language``; None when the chunk cache is off
    (``RBENCH_CHUNK_CACHE=0``: everything is made afresh)."""
    if not chunk_cache_enabled():
        return None
    key = (chunker_key(chunker), language)
    return DefinitionMemo(path, language, doc, _DEFINITIONS.setdefault(key, {}))
