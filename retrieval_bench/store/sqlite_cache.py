"""The shared plumbing of the on-disk SQLite caches (embeddings, chunks).

One connection behind a lock, WAL journal and a busy timeout so processes and
threads can share the file; the table is created on connect. A cache holds
nothing that cannot be computed again, so a damaged file (truncated,
overwritten: ``database disk image is malformed``) is moved aside with one
warning and replaced by an empty one, whether the damage shows when opening or
on a later read or write (``docs/architecture.md#caches``). A row whose content is
not what the cache writes (hand-edited, half-written, another format) is damaged
too: :meth:`SQLiteCache.drop_damaged` deletes it with one warning per cache, and
the value is computed and stored again.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from retrieval_bench.store.corrupt import file_id, is_corrupt, recover_cache

_T = TypeVar("_T")
_C = TypeVar("_C", bound="SQLiteCache")
log = logging.getLogger(__name__)
_SHARED: dict[tuple[type, Path], SQLiteCache] = {}
"""The process's open caches by class and file (:meth:`SQLiteCache.shared`)."""


class DamagedRowError(ValueError):
    """A stored row is not what its cache writes."""


class SQLiteCache:
    """Base of a SQLite cache; subclasses name it and give its schema."""

    what: ClassVar[str] = "cache"
    """How warnings name the cache (``embedding cache``)."""
    schema: ClassVar[str] = ""
    """The ``CREATE TABLE IF NOT EXISTS`` statement(s) of its table(s), ``;``-separated."""
    insert: ClassVar[str] = ""
    """The ``INSERT`` that :meth:`queue`d rows are written with by :meth:`flush`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._opened: tuple[int, int] | None = None
        self._dropped = 0  # damaged rows met (and deleted) so far
        self._pending: list[tuple[Any, ...]] = []
        try:
            self._conn = self._connect()
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            recover_cache(self.path, self._opened, self.what, exc)
            self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False)
        self._opened = file_id(self.path)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # a cache holds nothing that cannot be computed again, and a damaged file is
            # moved aside and started afresh: no fsync on commit or checkpoint
            conn.execute("PRAGMA synchronous=OFF")
            conn.executescript(self.schema)
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    def _guarded(self, op: Callable[[sqlite3.Connection], _T]) -> _T:
        """``op(connection)`` under the lock; on a damaged file: move it aside (unless
        another connection already did), reopen, and run ``op`` once more."""
        with self._lock:
            try:
                return op(self._conn)
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise
                self._conn.close()
                recover_cache(self.path, self._opened, self.what, exc)
                self._conn = self._connect()
                return op(self._conn)

    def insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """``executemany(sql, rows)`` in one transaction (rolled back on any error);
        nothing happens for no rows."""

        def store(conn: sqlite3.Connection) -> None:
            try:
                conn.executemany(sql, rows)
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

        if rows:
            self._guarded(store)

    def read_row(
        self, select: str, delete: str, key: tuple[Any, ...], decode: Callable[[str], _T]
    ) -> tuple[bool, _T | None]:
        """``(found, value)``: the one text column ``select`` reads for ``key``, decoded;
        a row ``decode`` refuses (:class:`DamagedRowError`) is deleted with ``delete``
        (:meth:`drop_damaged`) and counts as not found."""

        def lookup(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(select, key).fetchone()
            return None if row is None else str(row[0])

        blob = self._guarded(lookup)
        if blob is None:
            return False, None
        try:
            return True, decode(blob)
        except DamagedRowError as exc:
            self.drop_damaged(delete, key, exc)
            return False, None

    def drop_damaged(self, sql: str, params: tuple[Any, ...], why: object) -> None:
        """Delete a damaged row (``sql`` with ``params`` deletes it) so its value is
        computed and stored again; the first damaged row of this cache is reported with
        one warning, the others only counted."""
        self._dropped += 1
        if self._dropped == 1:
            log.warning(
                "%s %s had a damaged row (%s); dropped it; recomputing", self.what, self.path, why
            )

        def delete(conn: sqlite3.Connection) -> None:
            conn.execute(sql, params)
            conn.commit()

        self._guarded(delete)

    @classmethod
    def shared(cls: type[_C], path: str | Path) -> _C:
        """The process's one open cache of this class at ``path``: every stage and
        snapshot of a run reads and writes through one connection (and one queue)."""
        key = (cls, Path(path).resolve())
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = cls(path)
        assert isinstance(found, cls)
        return found

    def queue(self, row: tuple[Any, ...], every: int = 0) -> None:
        """Queue ``row`` for :attr:`insert`; written by :meth:`flush` (and, with
        ``every``, as soon as that many rows wait)."""
        self._pending.append(row)
        if every and len(self._pending) >= every:
            self.flush()

    def flush(self) -> None:
        """Write the queued rows in one transaction."""
        rows, self._pending = self._pending, []
        self.insert_many(self.insert, rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
