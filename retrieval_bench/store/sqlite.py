"""One SQLite file shared by several stores (results, prompt evaluation).

Autocommit connection usable from several threads behind one lock, WAL so
readers never block the writer, a busy timeout so two processes writing the same
store wait instead of failing (concurrent runs may write the same store:
docs/architecture.md#bad-input-and-failures), and write transactions that take
the write lock up front.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from retrieval_bench.store.corrupt import CorruptDBError, is_corrupt


class SQLiteFile:
    """Base of the stores: connection, lock, transactions, reads, migrations.
    Subclasses set ``what`` (for error messages), ``error`` (the exception they
    raise) and ``version_table``, and return their migration list from
    ``migrations()`` (each migration a tuple of SQL statements).

    A damaged file (truncated, overwritten) raises :class:`CorruptDBError`
    naming the file and ``corrupt_hint``, from opening, reading or writing,
    instead of a bare ``sqlite3.DatabaseError`` traceback."""

    what = "database"
    error: type[Exception] = sqlite3.Error
    version_table = "schema_version"
    corrupt_hint = "move it aside or restore it from a backup"
    """What to do when the file is damaged (the end of the one-line error)."""

    def __init__(self, path: str | Path, timeout: float = 60.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as e:
            raise self.error(f"cannot open {self.what} {self.path}: {e}") from e
        self._lock = threading.RLock()
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self.migrate()
        except BaseException as exc:
            self._conn.close()
            if is_corrupt(exc):
                raise self.corrupt(exc) from exc
            raise

    def migrations(self) -> Sequence[Sequence[str]]:
        raise NotImplementedError

    @property
    def schema_version(self) -> int:
        return int(self.query(f"SELECT COALESCE(MAX(version), 0) FROM {self.version_table}")[0][0])

    def migrate(self) -> int:
        """Apply the missing migrations in order, all in one transaction (a failing
        statement leaves the file as it was); return the resulting version."""
        table, migrations = self.version_table, self.migrations()
        # Foreign keys are off while migrating so that a migration may rebuild a
        # parent table (SQLite's create-copy-drop-rename recipe for changes ALTER
        # cannot make) without the DROP cascading into the child tables; the
        # references are checked before committing. The pragma is a no-op inside
        # a transaction, hence set around it.
        with self._lock:
            self._conn.execute("PRAGMA foreign_keys = OFF")
            try:
                with self.transaction() as c:
                    c.execute(
                        f"CREATE TABLE IF NOT EXISTS {table} "
                        "(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
                    )
                    (current,) = c.execute(
                        f"SELECT COALESCE(MAX(version), 0) FROM {table}"
                    ).fetchone()
                    if current > len(migrations):
                        raise self.error(
                            f"{self.what} {self.path} has schema version {current}, newer than "
                            f"this retrieval_bench ({len(migrations)}); upgrade retrieval_bench"
                        )
                    for version in range(current + 1, len(migrations) + 1):
                        for statement in migrations[version - 1]:
                            c.execute(statement)
                        c.execute(
                            f"INSERT INTO {table} (version, applied_at) VALUES (?, ?)",
                            (version, datetime.now(UTC).isoformat()),
                        )
                    if (
                        current < len(migrations)
                        and c.execute("PRAGMA foreign_key_check").fetchone()
                    ):
                        raise self.error(
                            f"{self.what} {self.path}: migration to schema version "
                            f"{len(migrations)} left dangling references; nothing was changed"
                        )
            finally:
                self._conn.execute("PRAGMA foreign_keys = ON")
        return self.schema_version

    def corrupt(self, exc: BaseException) -> CorruptDBError:
        """The one-line error for a damaged file: which file, what SQLite said, what to do."""
        return CorruptDBError(f"{self.what} {self.path} is corrupt ({exc}); {self.corrupt_hint}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taking the write lock up front (BEGIN IMMEDIATE)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                if is_corrupt(exc):
                    raise self.corrupt(exc) from exc
                raise

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                if is_corrupt(exc):
                    raise self.corrupt(exc) from exc
                raise
