"""A damaged table of the codebase index: recognised, moved aside, rebuilt
(docs/architecture.md#caches).

The index is derived data, like the embedding and chunk caches: losing it costs
only the time to build it again. A truncated or overwritten data file or version
manifest makes LanceDB fail with ``RuntimeError("lance error: ...")`` when the
table is opened or read. :func:`open_table` and :func:`read_table` then rename
the table's folder to ``<table>.lance.corrupt-<UTC time>`` with one warning (the
same line the SQLite caches print, :mod:`retrieval_bench.store.corrupt`) and
return None, so that :class:`~retrieval_bench.index.store.CodebaseIndex` builds a
fresh table instead of ending the command with a traceback. A table that is only
missing is None without a warning.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from retrieval_bench.store.corrupt import file_id, recover_cache

WHAT = "LanceDB index table"
"""How the warning names what was damaged."""
_RUST_LOCATION = re.compile(r",\s*/\S+\.rs:\d+:\d+")


def is_damaged(exc: BaseException) -> bool:
    """True for LanceDB's errors about a table's files (not for a missing table)."""
    return isinstance(exc, RuntimeError) and str(exc).startswith("lance error")


def reason(exc: BaseException) -> str:
    """LanceDB's message on one line, without the Rust source locations it carries."""
    return " ".join(_RUST_LOCATION.sub("", str(exc)).split())


def table_path(uri: Path, table: str) -> Path:
    """The folder LanceDB keeps ``table`` in under the database folder ``uri``."""
    return uri / f"{table}.lance"


def open_table(db: Any, uri: Path, table: str) -> Any | None:
    """``db.open_table(table)``; None when it is missing or damaged (then moved aside)."""
    opened = file_id(table_path(uri, table))
    try:
        return db.open_table(table)
    except (ValueError, OSError):  # no such table
        return None
    except RuntimeError as exc:
        if not is_damaged(exc):
            raise
        set_aside(uri, table, opened, exc)
        return None


def read_table(uri: Path, table: str, handle: Any) -> pa.Table | None:
    """Every row of the open table ``handle``; None when its files are damaged (then
    the table is moved aside)."""
    opened = file_id(table_path(uri, table))
    try:
        rows: pa.Table = handle.to_arrow()
        return rows
    except RuntimeError as exc:
        if not is_damaged(exc):
            raise
        set_aside(uri, table, opened, exc)
        return None


def set_aside(uri: Path, table: str, opened: tuple[int, int] | None, exc: BaseException) -> None:
    """Rename the damaged table's folder out of LanceDB's sight (a name not ending in
    ``.lance``) and warn once; nothing is moved when another process already did."""
    recover_cache(table_path(uri, table), opened, WHAT, RuntimeError(reason(exc)))
