"""SQLite response cache and call log for model calls: every model response is
cached, and an interrupted run resumes from the cache (docs/architecture.md#caches).

Key = sha256 of the canonical JSON of (model, endpoint, messages or prompt,
parameters, repeat index), so a re-run, a resumed run or a single edited
prompt only pays for the calls that changed. Every call that reaches the
model is also logged (latency, tokens, cost, error) in ``calls``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from retrieval_bench.store.corrupt import file_id, is_corrupt, recover_cache

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request_json TEXT NOT NULL,
    response_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    key TEXT NOT NULL,
    model TEXT NOT NULL,
    latency_s REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost REAL,
    error TEXT
);
"""


def request_key(payload: dict[str, Any]) -> str:
    """Stable cache key of a request payload."""
    canon = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class ResponseCache:
    """Thread-safe (one connection per thread); WAL mode so several runs may share one file.

    It is only a cache: a damaged file (``database disk image is malformed``)
    is moved aside with one warning and replaced by an empty one, and the
    operation that hit the damage is retried there; the calls are then made
    again. The call log in the damaged file goes with it.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._generation = 0  # bumped when the file is replaced: every thread reconnects
        self._guarded(lambda c: None)

    @classmethod
    def in_dir(cls, folder: str | Path) -> ResponseCache:
        return cls(Path(folder) / "llm_cache.sqlite")

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.generation == self._generation:
            return conn
        if conn is not None:
            conn.close()
            self._local.conn = None
        generation = self._generation
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._local.opened = file_id(self.path)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=60000")
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        self._local.conn, self._local.generation = conn, generation
        return conn

    def _guarded(self, op: Callable[[sqlite3.Connection], _T]) -> _T:
        """``op(connection)``; on a damaged file: move it aside (unless another
        connection already did), reconnect, and run ``op`` once more."""
        try:
            return op(self._conn())
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            with self._lock:
                opened = getattr(self._local, "opened", None)
                recover_cache(self.path, opened, "LLM response cache", exc)
                self._generation += 1
            return op(self._conn())

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._guarded(
            lambda c: c.execute(
                "SELECT response_json FROM responses WHERE key = ?", (key,)
            ).fetchone()
        )
        return None if row is None else dict(json.loads(row[0]))

    def put(self, key: str, model: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        self._guarded(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO responses "
                "(key, model, request_json, response_json, created_at) VALUES (?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    json.dumps(request, sort_keys=True),
                    json.dumps(response),
                    time.time(),
                ),
            )
        )

    def log_call(
        self,
        key: str,
        model: str,
        latency_s: float,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost: float = 0.0,
        error: str | None = None,
    ) -> None:
        self._guarded(
            lambda c: c.execute(
                "INSERT INTO calls (at, key, model, latency_s, prompt_tokens, completion_tokens,"
                " cost, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (time.time(), key, model, latency_s, prompt_tokens, completion_tokens, cost, error),
            )
        )

    def count(self) -> int:
        return self._guarded(
            lambda c: int(c.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
        )

    def call_count(self, errors: bool | None = None) -> int:
        sql = "SELECT COUNT(*) FROM calls"
        if errors is True:
            sql += " WHERE error IS NOT NULL"
        elif errors is False:
            sql += " WHERE error IS NULL"
        return self._guarded(lambda c: int(c.execute(sql).fetchone()[0]))
