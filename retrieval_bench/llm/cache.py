"""SQLite response cache and call log for model calls (SPEC §4 "every model
response is cached", §7 "interrupted runs resumable from the cache").

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
from pathlib import Path
from typing import Any

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
    """Thread-safe; WAL mode so several runs may share one file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as c:
            c.executescript(_SCHEMA)

    @classmethod
    def in_dir(cls, folder: str | Path) -> ResponseCache:
        return cls(Path(folder) / "llm_cache.sqlite")

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        row = (
            self._conn()
            .execute("SELECT response_json FROM responses WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else dict(json.loads(row[0]))

    def put(self, key: str, model: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO responses (key, model, request_json, response_json, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (key, model, json.dumps(request, sort_keys=True), json.dumps(response), time.time()),
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
        self._conn().execute(
            "INSERT INTO calls (at, key, model, latency_s, prompt_tokens, completion_tokens,"
            " cost, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (time.time(), key, model, latency_s, prompt_tokens, completion_tokens, cost, error),
        )

    def count(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def call_count(self, errors: bool | None = None) -> int:
        sql = "SELECT COUNT(*) FROM calls"
        if errors is True:
            sql += " WHERE error IS NOT NULL"
        elif errors is False:
            sql += " WHERE error IS NULL"
        return int(self._conn().execute(sql).fetchone()[0])
