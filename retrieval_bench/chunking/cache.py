"""The content-addressed chunk cache (docs/architecture.md#caches).

A file's chunks depend only on its bytes, the chunker (name and
:meth:`~retrieval_bench.contracts.chunker.Chunker.config`, which names the
tokenizer) and what its path decides (the language label and whether a
tree-sitter grammar parses it). They are stored under that key in one SQLite
file, without the path, which is re-attached when they are read back: the same
content can live at several paths, and a chunk id is rebuilt for the path from
its stored text hash, exactly as
:func:`~retrieval_bench.contracts.chunker.chunk_id` makes it (a chunker whose ids
do not have that form, ``path:start-end:<16 hex digits>``, is not cached). A run
over many snapshots of one repository so chunks each distinct file once. The
process also keeps the chunks it read or made last, per cache file and key plus
path (bounded), so a file unchanged at its path since an
earlier snapshot of the run costs neither a query nor a decode; the walk still
hashes every file it reads (:mod:`retrieval_bench.files` reads a read-only file
of a repository tree once per process).

Like the embedding cache it is only a cache: a damaged file is moved aside
(:mod:`retrieval_bench.store.corrupt`) and refilled, and a row whose content is not
what it writes is dropped with one warning and the file chunked again.
``RBENCH_CHUNK_CACHE=0`` turns it off.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from retrieval_bench.chunking.languages import language_for_path, spec_for_path
from retrieval_bench.contracts.chunker import Chunker
from retrieval_bench.files import SourceFile, WalkReport, iter_source_files
from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache
from retrieval_bench.types import Chunk

_T = TypeVar("_T")

CACHE_ENV = "RBENCH_CHUNK_CACHE"
CACHE_FILE = "chunks.sqlite"
_FORMAT = 2  # bump when the stored row layout changes (2: each chunk's text hash)
_INSERT = "INSERT OR IGNORE INTO chunks (sha, chunker, pathkey, rows) VALUES (?, ?, ?, ?)"
_HASH = re.compile(r"[0-9a-f]{16}")
"""The hex digits of a text's sha256 in a chunk id (:func:`chunk_id`)."""
_MEMO_CHUNKS = 400_000
"""Chunks the process keeps (over all cache files) before it starts afresh."""
_MEMO: dict[tuple[str, object], dict[tuple[str, str, str], list[Chunk]]] = {}
"""(cache file, its identity when opened) → (sha256, chunker key, path) → chunks."""
_memo_held = 0


def chunk_cache_enabled() -> bool:
    """False when ``$RBENCH_CHUNK_CACHE`` is ``0``/``false``/``no``/``off``."""
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def chunker_key(chunker: Chunker) -> str:
    """The chunker part of the key: name and parameters (tokenizer included)."""
    cfg = {"v": _FORMAT, "name": chunker.name, "tok": chunker.tokenizer_name}
    return json.dumps(cfg | {"cfg": chunker.config()}, sort_keys=True, default=str)


@lru_cache(maxsize=1 << 16)
def path_key(path: str) -> str:
    """What a path decides about chunking: the language label and the grammar."""
    spec = spec_for_path(path)
    return f"{language_for_path(path)}|{'ts' if spec is not None else '-'}"


@dataclass
class ChunkStats:
    """Files chunked afresh vs served from the cache during one walk."""

    files_chunked: int = 0
    files_reused: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"files_chunked": self.files_chunked, "files_reused": self.files_reused}


def _derived(chunks: list[Chunk]) -> bool:
    """Whether every id has :func:`chunk_id`'s form, ``path:start-end:<16 hex digits>``
    (else the file is not cached: ids read back must equal fresh ones). The digits are
    stored with the chunk and read back as they are, so they need not be hashed
    again here."""
    for c in chunks:
        head, _, digits = c.id.rpartition(":")
        if head != f"{c.path}:{c.start_line}-{c.end_line}" or not _is_hash(digits):
            return False
    return True


def _is_hash(digits: str) -> bool:
    return _HASH.fullmatch(digits) is not None


def _encode(chunks: list[Chunk]) -> str | None:
    """The chunks without their path (each with its id's text hash, so a warm read
    does not hash every text again), or None when an id is not the derived one."""
    if not _derived(chunks):
        return None
    rows = [
        [c.start_line, c.end_line, c.language, c.kind, c.symbol, c.text, c.n_tokens,
         c.id.rpartition(":")[2]]
        for c in chunks
    ]  # fmt: skip
    return json.dumps(rows, ensure_ascii=False)


def _decode(path: str, blob: str) -> list[Chunk]:
    """The chunks :func:`_encode` wrote for ``path``; :class:`DamagedRowError` when
    ``blob`` is not such a text (the row is then dropped and the file chunked again)."""
    try:
        rows = json.loads(blob)
    except ValueError as exc:
        raise DamagedRowError(f"not JSON: {exc}") from None
    if not isinstance(rows, list):
        raise DamagedRowError(f"not a list but {type(rows).__name__}")
    out = []
    for row in rows:
        if not (type(row) is list and len(row) == 8):
            raise DamagedRowError(
                "a chunk is not [start, end, language, kind, symbol, text, n, hash]"
            )
        s, e, lang, kind, sym, text, n, h = row
        # exact types (a JSON true is a bool, not a line number); kept to plain tests:
        # a warm run decodes every file it reads
        if not (type(s) is int and type(e) is int and type(n) is int and 1 <= s <= e and n >= 0):
            raise DamagedRowError(f"a chunk's lines or token count are wrong: {s!r}..{e!r}, {n!r}")
        if not (type(lang) is str and type(kind) is str and type(text) is str):
            raise DamagedRowError("a chunk's language, kind or text is not a string")
        if sym is not None and type(sym) is not str:
            raise DamagedRowError("a chunk's symbol is not a string")
        if not (type(h) is str and _is_hash(h)):
            raise DamagedRowError("a chunk's text hash is not 16 hex digits")
        out.append(Chunk(f"{path}:{s}-{e}:{h}", path, s, e, lang, kind, sym, text, n))
    return out


class ChunkCache(SQLiteCache):
    """A file's chunks keyed by ``(sha256 of its bytes, chunker key, path key)``."""

    what = "chunk cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS chunks ("
        " sha BLOB NOT NULL, chunker TEXT NOT NULL, pathkey TEXT NOT NULL,"
        " rows TEXT NOT NULL, PRIMARY KEY (sha, chunker, pathkey)) WITHOUT ROWID"
    )

    @classmethod
    def in_dir(cls, folder: str | Path) -> ChunkCache:
        return cls(Path(folder) / CACHE_FILE)

    def get_many(self, sources: list[SourceFile], ckey: str) -> list[list[Chunk] | None]:
        """The cached chunks of each of ``sources`` (ids derived for its path; None: not
        cached), from the process memo, else in one query for those it lacks: a warm
        snapshot reads its files' rows in batches."""
        memo = self._memo()
        out: list[list[Chunk] | None] = [memo.get((s.sha256, ckey, s.path)) for s in sources]
        wanted = {bytes.fromhex(s.sha256) for s, c in zip(sources, out, strict=True) if c is None}
        if not wanted:
            return out
        keys = list(wanted)

        def lookup(conn: sqlite3.Connection) -> dict[tuple[bytes, str], str]:
            marks = ",".join("?" * len(keys))
            sql = f"SELECT sha, pathkey, rows FROM chunks WHERE chunker = ? AND sha IN ({marks})"
            return {(bytes(h), str(pk)): str(r) for h, pk, r in conn.execute(sql, (ckey, *keys))}

        rows = self._guarded(lookup)
        for i, source in enumerate(sources):
            if out[i] is not None:
                continue
            key = (bytes.fromhex(source.sha256), ckey, path_key(source.path))
            blob = rows.get((key[0], key[2]))
            if blob is None:
                continue
            try:
                out[i] = chunks = _decode(source.path, blob)
            except DamagedRowError as exc:
                sql = "DELETE FROM chunks WHERE sha = ? AND chunker = ? AND pathkey = ?"
                self.drop_damaged(sql, key, exc)
                continue
            self.remember(source, ckey, chunks)
        return out

    def remember(self, source: SourceFile, ckey: str, chunks: list[Chunk]) -> None:
        """Keep ``chunks`` of ``source`` in the process memo of this cache file."""
        global _memo_held
        if _memo_held + len(chunks) > _MEMO_CHUNKS:
            _MEMO.clear()
            _memo_held = 0
        self._memo()[(source.sha256, ckey, source.path)] = chunks
        _memo_held += len(chunks)

    def _memo(self) -> dict[tuple[str, str, str], list[Chunk]]:
        # keyed by the file's identity as opened: a file moved aside or replaced is
        # another cache, whose memo starts empty
        return _MEMO.setdefault((str(self.path), self._opened), {})

    def put_many(self, entries: list[tuple[SourceFile, str, list[Chunk]]]) -> None:
        """Store ``(source, chunker key, chunks)`` rows (existing keys are kept)."""
        rows = []
        for source, ckey, chunks in entries:
            blob = _encode(chunks)
            if blob is not None:
                rows.append((bytes.fromhex(source.sha256), ckey, path_key(source.path), blob))
        self.insert_many(_INSERT, rows)

    def count(self) -> int:
        return self._guarded(lambda c: int(c.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]))


def chunk_tree_cached(
    root: Path,
    chunker: Chunker,
    cache: ChunkCache,
    report: WalkReport | None = None,
    stats: ChunkStats | None = None,
    sources: dict[str, SourceFile] | None = None,
    **walk_options: object,
) -> Iterator[Chunk]:
    """:func:`~retrieval_bench.contracts.chunker.chunk_tree` with the cache: the same
    chunks in the same order; only files whose key is not cached are chunked. With
    ``sources``, every file the walk read is kept there by path."""
    stats = stats if stats is not None else ChunkStats()
    ckey = chunker_key(chunker)
    pending: list[tuple[SourceFile, str, list[Chunk]]] = []
    walk = iter_source_files(root, report=report, **walk_options)  # type: ignore[arg-type]
    for batch in _batches(walk, 256):
        for source, cached in zip(batch, cache.get_many(batch, ckey), strict=True):
            yield from _chunks_of(source, cached, chunker, cache, ckey, stats, pending, sources)
    cache.put_many(pending)


def _batches(items: Iterator[_T], size: int) -> Iterator[list[_T]]:
    batch: list[_T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _chunks_of(
    source: SourceFile,
    chunks: list[Chunk] | None,
    chunker: Chunker,
    cache: ChunkCache,
    ckey: str,
    stats: ChunkStats,
    pending: list[tuple[SourceFile, str, list[Chunk]]],
    sources: dict[str, SourceFile] | None,
) -> list[Chunk]:
    """The chunks of ``source``: ``chunks`` (from the cache), else chunked now (and
    queued in ``pending`` for the cache, written every 200 files)."""
    if sources is not None:
        sources[source.path] = source
    if chunks is not None:
        stats.files_reused += 1
        return chunks
    chunks = chunker.chunk_file(source)
    stats.files_chunked += 1
    pending.append((source, ckey, chunks))
    if _derived(chunks):  # what the cache will hand back
        cache.remember(source, ckey, chunks)
    if len(pending) >= 200:
        cache.put_many(pending)
        pending.clear()
    return chunks
