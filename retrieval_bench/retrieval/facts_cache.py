"""The on-disk cache of code-graph facts, by file content (docs/architecture.md#caches).

A file's definitions, imports and used names (:mod:`~retrieval_bench.retrieval.code_facts`)
depend on its text alone, so they are stored once per distinct text (blake2b of
its UTF-8 bytes) in one SQLite file: a later run, a sweep's other cells or a
pool worker starting on the same repository parse only the files no earlier
process met. Like the chunk cache it is only a cache: a damaged file is moved
aside and refilled, and ``RBENCH_CHUNK_CACHE=0`` turns it off with the others.
A row whose text is not the facts this version writes (hand-edited, half-written,
from another format) is damaged too: :meth:`FactsCache.get` deletes it with one
warning per cache and reports a miss, so the file is parsed again and the row
written afresh, instead of the run ending with ``KeyError: 'd'``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from retrieval_bench.chunking.cache import chunk_cache_enabled
from retrieval_bench.retrieval.code_facts import FileFacts, ImportRef
from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache

CACHE_FILE = "facts.sqlite"
_FORMAT = b"2"  # bump when FileFacts, its encoding or how facts are read changes
_BATCH = 500
"""Keys one :meth:`FactsCache.get_many` query looks up."""
# 2: read from the tree-sitter tree (chunking/tree_facts.py), not with ast


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


def _strings(value: object, key: str) -> list[str]:
    # one pass in C: the types of all items (a warm run decodes every file's facts)
    if type(value) is not list or (value and set(map(type, value)) != {str}):
        raise DamagedRowError(f"{key!r} is not a list of strings")
    return value


def _import(value: object) -> ImportRef:
    if not isinstance(value, list) or len(value) != 4:
        raise DamagedRowError("an import is not [level, module, name, alias]")
    level, module, name, alias = value
    if not (isinstance(level, int) and isinstance(module, str) and isinstance(alias, str)):
        raise DamagedRowError("an import is not [level, module, name, alias]")
    if name is not None and not isinstance(name, str):
        raise DamagedRowError("an import's name is not a string")
    return ImportRef(level, module, name, alias)


def decode_facts(blob: str) -> FileFacts | None:
    """The facts :func:`encode_facts` wrote; :class:`DamagedRowError` (a ``ValueError``)
    when ``blob`` is not such a text."""
    try:
        row = json.loads(blob)
    except ValueError as exc:
        raise DamagedRowError(f"not JSON: {exc}") from None
    if row is None:
        return None
    if not isinstance(row, dict):
        raise DamagedRowError(f"not an object but {type(row).__name__}")
    missing = [k for k in ("d", "i", "u", "a") if k not in row]
    if missing:
        raise DamagedRowError(f"missing key(s) {', '.join(map(repr, missing))}")
    imports = row["i"]
    if not isinstance(imports, list):
        raise DamagedRowError("'i' is not a list")
    attrs = row["a"]
    if not isinstance(attrs, list) or not all(type(a) is list and len(a) == 2 for a in attrs):
        raise DamagedRowError("'a' is not a list of [local, attribute] pairs")
    _strings(list(chain.from_iterable(attrs)), "a")
    return FileFacts(
        defines=set(_strings(row["d"], "d")),
        imports=[_import(r) for r in imports],
        uses=set(_strings(row["u"], "u")),
        module_attrs={(local, attr) for local, attr in attrs},
    )


class FactsCache(SQLiteCache):
    """Code-graph facts keyed by the hash of a file's text (module doc)."""

    what = "code-graph facts cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS facts (key BLOB PRIMARY KEY, facts TEXT NOT NULL) WITHOUT ROWID"
    )

    insert = "INSERT OR IGNORE INTO facts (key, facts) VALUES (?, ?)"

    @classmethod
    def in_dir(cls, folder: str | Path) -> FactsCache | None:
        """The cache in ``folder``; None when ``RBENCH_CHUNK_CACHE`` is off."""
        return cls(Path(folder) / CACHE_FILE) if chunk_cache_enabled() else None

    def get(self, key: bytes) -> tuple[bool, FileFacts | None]:
        """``(found, facts)`` of the text whose
        :func:`~retrieval_bench.retrieval.code_facts.facts_key` is ``key``."""
        select, delete = "SELECT facts FROM facts WHERE key = ?", "DELETE FROM facts WHERE key = ?"
        return self.read_row(select, delete, (_FORMAT + key,), decode_facts)

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, FileFacts | None]:
        """The facts found of ``keys`` (as :meth:`get`), read :data:`_BATCH` keys to a
        query: a snapshot's files at once. A damaged row is dropped and left out."""
        found: dict[bytes, FileFacts | None] = {}
        for start in range(0, len(keys), _BATCH):
            batch = [_FORMAT + k for k in keys[start : start + _BATCH]]

            def lookup(conn: sqlite3.Connection, batch: list[bytes] = batch) -> list[Any]:
                marks = ",".join("?" * len(batch))
                sql = f"SELECT key, facts FROM facts WHERE key IN ({marks})"
                return conn.execute(sql, batch).fetchall()

            for stored, blob in self._guarded(lookup):
                try:
                    found[bytes(stored)[len(_FORMAT) :]] = decode_facts(str(blob))
                except DamagedRowError as exc:
                    self.drop_damaged("DELETE FROM facts WHERE key = ?", (bytes(stored),), exc)
        return found

    def put(self, key: bytes, facts: FileFacts | None) -> None:
        """Remember ``facts`` of the text whose key is ``key``; written by :meth:`flush`."""
        self.queue((_FORMAT + key, encode_facts(facts)))

    def close(self) -> None:
        self.flush()
        super().close()
