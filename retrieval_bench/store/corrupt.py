"""Damaged SQLite files: telling them apart from other database errors, moving them aside.

A truncated or overwritten SQLite file fails with ``database disk image is
malformed`` (SQLITE_CORRUPT) or ``file is not a database`` (SQLITE_NOTADB),
sometimes only when a damaged page is first read. The caches (embeddings, LLM
responses) recover by moving the file aside and starting empty; the results
database cannot (it holds the runs), so it reports the file and the command
that rebuilds it (:mod:`retrieval_bench.store.rebuild`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from retrieval_bench.errors import RBenchError

__all__ = ["CorruptDBError", "file_id", "is_corrupt", "move_aside", "recover_cache"]

log = logging.getLogger(__name__)

_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (primary codes)
_SIDE_FILES = ("-wal", "-shm", "-journal")


class CorruptDBError(RBenchError):
    """An SQLite file is damaged; the message names it and how to recover."""


def is_corrupt(exc: BaseException) -> bool:
    """True for the errors of a damaged file (not for locks, constraints or bad SQL)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _CORRUPT_CODES  # extended codes keep the primary in the low byte
    text = str(exc)
    return "malformed" in text or "not a database" in text


def move_aside(path: str | Path) -> Path:
    """Rename ``path`` (and its -wal/-shm/-journal files) to ``<name>.corrupt-<UTC time>``
    so that a fresh file can take its place; returns the new path of the main file."""
    path = Path(path)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    if path.exists():
        os.replace(path, target)
    for suffix in _SIDE_FILES:  # a stale WAL must not be replayed into the new file
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def file_id(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``: tells whether it is still the file a
    connection opened, or one that another connection already put in its place."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def recover_cache(
    path: Path, opened: tuple[int, int] | None, what: str, exc: BaseException
) -> Path | None:
    """A cache file is damaged: move it aside and warn (once), so that the caller can
    reopen an empty one and carry on — a cache only costs time to refill. When the
    file at ``path`` is no longer the one the caller ``opened``, another connection
    has already done this: nothing is moved and None is returned."""
    if file_id(path) != opened:
        return None
    moved = move_aside(path)
    # the reason as text: a log record holding the exception would keep its frames,
    # and with them the damaged file's connection, alive
    log.warning("%s %s was corrupt (%s); moved to %s; rebuilding", what, path, str(exc), moved)
    return moved
