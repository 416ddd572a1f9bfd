"""The chunked repository every retriever searches: chunks plus lookups.

A :class:`Corpus` is built once per (snapshot, chunker config) and shared by
all retrievers of a run, so they index the very same chunks and their runs
can be fused and scored against the same gold.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from retrieval_bench.types import Chunk

if TYPE_CHECKING:
    from retrieval_bench.files import SourceFile

_T = TypeVar("_T")


@dataclass
class Corpus:
    root: Path
    """Working tree of the snapshot (ripgrep searches here)."""
    chunks: list[Chunk]
    tokenizer: str = ""
    """Name of the tokenizer that counted ``Chunk.n_tokens``."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Files not chunked, path → reason."""
    sources: dict[str, SourceFile] = field(default_factory=dict, repr=False)
    """What the chunking walk read, path → file (its text and sha256), when it kept
    it: the whole-file stages read a file from here instead of the tree. Not pickled."""
    cache_dir: Path | None = None
    """The workspace's folder of per-file caches, when the run has a workspace and its
    caches are on: term counts (:attr:`terms_dir`) and definitions
    (:attr:`definitions_dir`), read by the stages instead of tokenising or parsing a
    file an earlier run met."""

    def __post_init__(self) -> None:
        self.by_id: dict[str, Chunk] = {c.id: c for c in self.chunks}
        self._by_path: dict[str, list[Chunk]] = {}
        for c in self.chunks:
            self._by_path.setdefault(c.path, []).append(c)
        self._starts: dict[str, list[int]] = {}
        self._reach: dict[str, list[int]] = {}
        for path, cs in self._by_path.items():
            cs.sort(key=lambda c: (c.start_line, c.end_line))
            self._starts[path] = [c.start_line for c in cs]
            reach, furthest = [], 0  # the last line any chunk up to this one covers
            for c in cs:
                furthest = max(furthest, c.end_line)
                reach.append(furthest)
            self._reach[path] = reach
        self._derived: dict[Hashable, Any] = {}
        self._derived_lock = threading.Lock()
        self._at: dict[str, list[Chunk | None]] = {}  # chunk_at's line tables

    def derived(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """``make()``, computed once per corpus and ``key``: what several stages build
        alike from the same chunks (one BM25 index for every ``bm25``-family stage
        with the same analyser and parameters, docs/architecture.md#caches). It lives
        and dies with this corpus object; a pickled corpus leaves it behind."""
        with self._derived_lock:
            if key not in self._derived:
                self._derived[key] = make()
            value: _T = self._derived[key]
            return value

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_derived"], state["_derived_lock"], state["_at"]
        state["sources"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._derived = {}
        self._derived_lock = threading.Lock()
        self._at = {}

    @property
    def terms_dir(self) -> Path | None:
        """The term-count cache's folder (:mod:`~retrieval_bench.retrieval.term_store`)."""
        return None if self.cache_dir is None else self.cache_dir / "terms"

    @property
    def definitions_dir(self) -> Path | None:
        """The definitions cache's folder (:mod:`~retrieval_bench.retrieval.definitions_cache`)."""
        return None if self.cache_dir is None else self.cache_dir / "definitions"

    @property
    def paths(self) -> list[str]:
        return sorted(self._by_path)

    def chunks_of(self, path: str) -> Sequence[Chunk]:
        return self._by_path.get(path, ())

    def chunks_at(self, path: str, line: int) -> list[Chunk]:
        """Chunks of ``path`` whose span contains ``line`` (1-based).

        Collapsed chunks (a class header with hidden bodies) also span the
        lines of their methods; the most specific (shortest) chunk comes first.
        """
        cs = self._by_path.get(path)
        if not cs:
            return []
        reach = self._reach[path]
        hits = []
        # back from the last chunk starting at or before the line, while some chunk at
        # or before it still reaches the line (``reach`` is a running maximum)
        i = bisect.bisect_right(self._starts[path], line) - 1
        while i >= 0 and reach[i] >= line:
            if cs[i].end_line >= line:
                hits.append(cs[i])
            i -= 1
        hits.reverse()
        hits.sort(key=lambda c: (c.end_line - c.start_line, c.start_line))
        return hits

    def chunk_at(self, path: str, line: int) -> Chunk | None:
        """The first of :meth:`chunks_at` (the most specific chunk at the line), or
        None: read from a per-path table of lines built on first use, since the
        ``exact`` stages look up the line of every match."""
        table = self._at.get(path)
        if table is None:
            table = self._at[path] = self._line_table(path)
        return table[line] if 0 <= line < len(table) else None

    def _line_table(self, path: str) -> list[Chunk | None]:
        """Line → the chunk :meth:`chunks_at` gives first: the chunks written from the
        widest to the narrowest (ties: the later start, then the later chunk first),
        so the narrowest, earliest one is left on each line."""
        cs = self._by_path.get(path, [])
        table: list[Chunk | None] = [None] * (max((c.end_line for c in cs), default=0) + 1)
        order = sorted(
            range(len(cs)),
            key=lambda i: (cs[i].end_line - cs[i].start_line, cs[i].start_line, i),
            reverse=True,
        )
        for i in order:
            c = cs[i]
            lo = max(c.start_line, 0)
            table[lo : c.end_line + 1] = [c] * (c.end_line + 1 - lo)
        return table

    def path_of(self, chunk_id: str) -> str:
        return self.by_id[chunk_id].path

    def get(self, ids: Iterable[str]) -> list[Chunk]:
        return [self.by_id[i] for i in ids if i in self.by_id]
