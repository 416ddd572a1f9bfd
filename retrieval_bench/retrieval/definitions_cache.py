"""The on-disk cache of a Python file's definitions, by content
(docs/architecture.md#caches).

The function-level stages read every ``def`` and ``class`` of the files they
rank (:func:`~retrieval_bench.datasets.gold_functions.definitions`, a
tree-sitter parse). A file's definitions depend on its text alone, so they are
stored once per distinct text (its
:func:`~retrieval_bench.datasets.gold_functions.content_key`) in one SQLite
file: a later run, a pool worker or a sweep cell parses only the files no
earlier process met. Like the other caches it is only a cache: a damaged file
is moved aside and refilled, a damaged row is dropped with one warning and the
file parsed again, and ``RBENCH_CHUNK_CACHE=0`` turns it off.
"""

from __future__ import annotations

import atexit
import json
from collections.abc import Sequence
from pathlib import Path

from retrieval_bench.chunking.cache import chunk_cache_enabled
from retrieval_bench.datasets.gold_functions import Definition
from retrieval_bench.store.sqlite_cache import DamagedRowError, SQLiteCache

CACHE_FILE = "definitions.sqlite"
_FORMAT = b"defs-1"  # bump when Definition or its encoding changes


def encode_definitions(defs: Sequence[Definition]) -> str:
    """``defs`` as compact JSON rows ``[name, start, end, entity]``."""
    rows = [[d.name, d.start, d.end, d.entity] for d in defs]
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def decode_definitions(blob: str) -> tuple[Definition, ...]:
    """The definitions :func:`encode_definitions` wrote; :class:`DamagedRowError` when
    ``blob`` is not such a text."""
    try:
        rows = json.loads(blob)
        out = tuple(Definition(n, s, e, en) for n, s, e, en in rows)
    except (ValueError, TypeError) as exc:
        raise DamagedRowError(f"not a list of definitions: {exc}") from None
    for d in out:
        names_ok = isinstance(d.name, str) and isinstance(d.entity, str)
        lines_ok = isinstance(d.start, int) and isinstance(d.end, int) and 1 <= d.start <= d.end
        if not (names_ok and lines_ok):
            raise DamagedRowError(f"a definition is not [name, start, end, entity]: {d}")
    return out


class DefinitionsCache(SQLiteCache):
    """Definitions keyed by the content key of a file's text (module doc)."""

    what = "definitions cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS defs (key BLOB PRIMARY KEY, rows TEXT NOT NULL) WITHOUT ROWID"
    )

    insert = "INSERT OR IGNORE INTO defs (key, rows) VALUES (?, ?)"

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        atexit.register(self.flush)  # what is still queued when the process ends

    @classmethod
    def for_folder(cls, folder: Path | None) -> DefinitionsCache | None:
        """The process's one cache in ``folder`` (None: no folder, or the caches off)."""
        if folder is None or not chunk_cache_enabled():
            return None
        return cls.shared(Path(folder) / CACHE_FILE)

    def get(self, key: bytes) -> tuple[Definition, ...] | None:
        """The stored definitions of the text whose content key is ``key``, or None."""
        select, delete = "SELECT rows FROM defs WHERE key = ?", "DELETE FROM defs WHERE key = ?"
        return self.read_row(select, delete, (_FORMAT + key,), decode_definitions)[1]

    def put(self, key: bytes, defs: Sequence[Definition]) -> None:
        """Remember ``defs``; written by :meth:`flush` (or after 200 puts)."""
        self.queue((_FORMAT + key, encode_definitions(defs)), every=200)
