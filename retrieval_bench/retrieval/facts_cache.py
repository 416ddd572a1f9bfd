"""The on-disk cache of code-graph facts, by file content (docs/architecture.md#caches).

A file's definitions, imports and used names (:mod:`~retrieval_bench.retrieval.code_facts`)
depend on its text alone, so they are stored once per distinct text (blake2b of
its UTF-8 bytes) in one SQLite file: a later run, a sweep's other cells or a
pool worker starting on the same repository parse only the files no earlier
process met. Like the chunk cache it is only a cache: a damaged file is moved
aside and refilled, and ``RBENCH_CHUNK_CACHE=0`` turns it off with the others.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from retrieval_bench.chunking.cache import chunk_cache_enabled
from retrieval_bench.retrieval.code_facts import FileFacts, ImportRef
from retrieval_bench.store.sqlite_cache import SQLiteCache

CACHE_FILE = "facts.sqlite"
_FORMAT = b"1"  # bump when FileFacts or its encoding changes


def encode_facts(facts: FileFacts | None) -> str:
    """``facts`` as canonical JSON (``null``: the file does not parse)."""
    if facts is None:
        return "null"
    return json.dumps(
        {
            "d": sorted(facts.defines),
            "i": [[r.level, r.module, r.name, r.alias] for r in facts.imports],
            "u": sorted(facts.uses),
            "a": sorted(facts.module_attrs),
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode_facts(blob: str) -> FileFacts | None:
    row = json.loads(blob)
    if row is None:
        return None
    return FileFacts(
        defines=set(row["d"]),
        imports=[ImportRef(level, module, name, alias) for level, module, name, alias in row["i"]],
        uses=set(row["u"]),
        module_attrs={(local, attr) for local, attr in row["a"]},
    )


class FactsCache(SQLiteCache):
    """Code-graph facts keyed by the hash of a file's text (module doc)."""

    what = "code-graph facts cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS facts (key BLOB PRIMARY KEY, facts TEXT NOT NULL) WITHOUT ROWID"
    )

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._pending: list[tuple[bytes, str]] = []

    @classmethod
    def in_dir(cls, folder: str | Path) -> FactsCache | None:
        """The cache in ``folder``; None when ``RBENCH_CHUNK_CACHE`` is off."""
        return cls(Path(folder) / CACHE_FILE) if chunk_cache_enabled() else None

    def get(self, key: bytes) -> tuple[bool, FileFacts | None]:
        """``(found, facts)`` of the text whose
        :func:`~retrieval_bench.retrieval.code_facts.facts_key` is ``key``."""
        key = _FORMAT + key

        def lookup(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT facts FROM facts WHERE key = ?", (key,)).fetchone()
            return None if row is None else str(row[0])

        blob = self._guarded(lookup)
        return (False, None) if blob is None else (True, decode_facts(blob))

    def put(self, key: bytes, facts: FileFacts | None) -> None:
        """Remember ``facts`` of the text whose key is ``key``; written by :meth:`flush`."""
        self._pending.append((_FORMAT + key, encode_facts(facts)))

    def flush(self) -> None:
        rows, self._pending = self._pending, []
        self.insert_many("INSERT OR IGNORE INTO facts (key, facts) VALUES (?, ?)", rows)

    def close(self) -> None:
        self.flush()
        super().close()
