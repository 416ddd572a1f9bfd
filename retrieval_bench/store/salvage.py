"""What ``rbench runs --rebuild-db`` reads back from a damaged results database.

The runs and sweeps are rebuilt from ``results/`` (:mod:`retrieval_bench.store.rebuild`);
two things are not derived from it and are copied from the damaged file,
row by row, as far as it can be read:

* the sweeps written before ``sweep.json`` existed (``sweeps`` and their
  ``sweep_cells``, a cell's run dropped when the new database lacks it);
* the tables of every other store sharing the file — the prompt lab's
  ``pe_*`` tables, which hold the prompts and ground-truth rows people typed
  in (docs/architecture.md#prompt-evaluation). A store is found by its
  ``<prefix>schema_version`` table; its tables are created from the damaged
  file's own ``CREATE`` statements (so this module needs no import of that
  store) and copied with their version table, so the store opens at the
  schema version its rows have. A store whose version table cannot be read
  is not copied at all (it then starts empty rather than half-migrated).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["KeptStore", "Salvage", "salvage"]

OWN_VERSION_TABLE = "schema_version"
"""The results database's own version table (its tables are rebuilt, not copied)."""
STORE_NAMES = {"pe_": "prompt"}
"""How the report names a store by its table prefix (``could not read prompt tables``)."""


@dataclass
class KeptStore:
    """One store's tables copied from the damaged file."""

    name: str
    rows: dict[str, int] = field(default_factory=dict)
    """Table → rows copied (the version table left out)."""
    partial: dict[str, str] = field(default_factory=dict)
    """Table → why some of its rows could not be read."""


@dataclass
class Salvage:
    sweeps: list[str] = field(default_factory=list)
    """Ids of the sweeps copied from the damaged file."""
    kept: list[KeptStore] = field(default_factory=list)
    not_kept: list[tuple[str, str]] = field(default_factory=list)
    """(store name or ``sweeps``, reason) of tables the damaged file has but that could
    not be read at all."""
    unreadable: str | None = None
    """Why the damaged file's list of tables could not be read (then nothing is known
    of what it held: every store and its sweeps are reported as not read)."""

    def unread(self) -> list[tuple[str, str]]:
        """(store name or ``sweeps``, reason) of everything that could not be read."""
        if self.unreadable is not None:
            return [(name, self.unreadable) for name in ("sweeps", *STORE_NAMES.values())]
        return self.not_kept


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _copy_rows(
    con: sqlite3.Connection,
    select: str,
    insert: str,
    keep: Callable[[tuple[Any, ...]], tuple[Any, ...] | None] = lambda r: r,
) -> tuple[int, str | None]:
    """Copy the rows ``select`` yields with ``insert``, one by one, so that the rows
    before a damaged page are kept: (rows copied, why the rest could not be read)."""
    copied = 0
    try:
        for row in _rows(con, select):
            kept = keep(row)
            if kept is not None:
                copied += con.execute(insert, kept).rowcount
    except sqlite3.DatabaseError as exc:
        return copied, str(exc)
    return copied, None


def _rows(con: sqlite3.Connection, select: str) -> Iterable[tuple[Any, ...]]:
    cur = con.cursor()  # a cursor of its own: the inserts must not reset it
    cur.execute(select)
    while batch := cur.fetchmany(256):
        yield from batch


def salvage(path: Path, damaged: Path) -> Salvage:
    """Copy into the rebuilt database at ``path`` what only the damaged file holds."""
    out = Salvage()
    con = sqlite3.connect(path.resolve().as_uri(), uri=True, isolation_level=None)
    try:
        try:
            con.execute("ATTACH DATABASE ? AS old", (damaged.resolve().as_uri() + "?mode=ro",))
            master = con.execute(
                "SELECT type, name, tbl_name, sql FROM old.sqlite_master"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            out.unreadable = str(exc)
            return out
        tables = {name: sql for kind, name, _, sql in master if kind == "table" and sql}
        if "sweeps" in tables:
            _sweeps(con, out)
        for version_table in sorted(t for t in tables if t.endswith(OWN_VERSION_TABLE)):
            if version_table != OWN_VERSION_TABLE:
                _store(con, master, version_table, out)
    finally:
        con.close()
    return out


def _columns(con: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA {schema}.table_info({_q(table)})")]


def _copy_table(
    con: sqlite3.Connection,
    table: str,
    keep: Callable[[list[str], tuple[Any, ...]], tuple[Any, ...] | None] | None = None,
) -> tuple[int, str | None]:
    """Copy ``old.table`` into ``main.table`` (the columns both have), in one transaction;
    ``keep(columns, row)`` may drop (None) or change a row."""
    old = set(_columns(con, "old", table))
    cols = [c for c in _columns(con, "main", table) if c in old]
    names = ", ".join(_q(c) for c in cols)
    insert = (
        f"INSERT OR IGNORE INTO main.{_q(table)} ({names}) VALUES ({', '.join('?' * len(cols))})"
    )
    con.execute("BEGIN")
    try:
        copied, error = _copy_rows(
            con,
            f"SELECT {names} FROM old.{_q(table)}",
            insert,
            (lambda row: keep(cols, row)) if keep is not None else (lambda row: row),
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return copied, error


def _sweeps(con: sqlite3.Connection, out: Salvage) -> None:
    """The sweeps the rebuilt database lacks, and their cells (a run it lacks dropped)."""
    have = {r[0] for r in con.execute("SELECT id FROM main.sweeps")}
    runs = {r[0] for r in con.execute("SELECT id FROM main.runs")}

    def new_sweep(cols: list[str], row: tuple[Any, ...]) -> tuple[Any, ...] | None:
        return None if row[cols.index("id")] in have else row

    try:
        _, error = _copy_table(con, "sweeps", new_sweep)
        copied = {r[0] for r in con.execute("SELECT id FROM main.sweeps")} - have
        out.sweeps = sorted(copied)

        def its_cell(cols: list[str], row: tuple[Any, ...]) -> tuple[Any, ...] | None:
            if row[cols.index("sweep_id")] not in copied:
                return None
            at = cols.index("run_id")
            return row if row[at] in runs else (*row[:at], None, *row[at + 1 :])

        if not error:
            _, error = _copy_table(con, "sweep_cells", its_cell)
    except sqlite3.DatabaseError as exc:
        error = str(exc)
    if error:
        out.not_kept.append(("sweeps", error))


def _store(
    con: sqlite3.Connection, master: list[tuple[Any, ...]], version_table: str, out: Salvage
) -> None:
    """Copy one other store's tables (those named ``<prefix>*``) and its indexes."""
    prefix = version_table.removesuffix(OWN_VERSION_TABLE)
    name = STORE_NAMES.get(prefix, f"{prefix}*")
    try:
        con.execute(f"SELECT * FROM old.{_q(version_table)}").fetchall()
    except sqlite3.DatabaseError as exc:
        out.not_kept.append((name, str(exc)))
        return
    existing = {r[0] for r in con.execute("SELECT name FROM main.sqlite_master")}
    kept = KeptStore(name)
    for kind, table, _, sql in master:
        if kind != "table" or not sql or not table.startswith(prefix):
            continue
        if table not in existing:
            con.execute(sql)  # an unqualified CREATE TABLE makes it in main
        try:
            copied, error = _copy_table(con, table)
        except sqlite3.DatabaseError as exc:
            copied, error = 0, str(exc)
        if table != version_table:
            kept.rows[table] = copied
        if error:
            kept.partial[table] = error
    for kind, index, table, sql in master:
        if kind == "index" and sql and table.startswith(prefix) and index not in existing:
            con.execute(sql)
    out.kept.append(kept)
