"""Ground-truth rows and prompts in the workspace database, every edit kept
(docs/architecture.md#prompt-evaluation).

Lives in the same SQLite file as the benchmark results (``Workspace.db_path``)
but in its own ``pe_*`` tables with its own ordered migrations
(:mod:`.schema`), recorded in ``pe_schema_version``.

Versioning: each row/prompt edit inserts a new version (a delete inserts a
tombstone), so the full edit history is kept. Writes are optimistic: an edit
carries the version it was based on (0 for new) and is refused with
:class:`StaleWriteError` when the stored version has moved on — two browser
tabs editing the same table cannot silently overwrite each other. Every write
is one ``BEGIN IMMEDIATE`` transaction (WAL mode, busy timeout), so a batch
import is all-or-nothing and concurrent processes serialise.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from retrieval_bench.prompt_eval.errors import NotFoundError, PromptEvalError, StaleWriteError
from retrieval_bench.prompt_eval.records import Prompt, Row
from retrieval_bench.prompt_eval.schema import PROMPT_EVAL_MIGRATIONS
from retrieval_bench.prompt_eval.template import check_prompt
from retrieval_bench.prompt_eval.usecase import UseCase
from retrieval_bench.store.sqlite import SQLiteFile
from retrieval_bench.workspace import Workspace


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class PromptVersion:
    """One stored edit of a prompt (``deleted``: the edit removed it)."""

    prompt: Prompt
    created_at: str
    deleted: bool


@dataclass(frozen=True)
class ImportSummary:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0

    def __str__(self) -> str:
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed"
        )


_ROW_COLS = "row_id, version, variables_json, expected_json"
_PROMPT_COLS = "name, version, model, system, user, parameters_json"


def _row(r: Sequence[Any]) -> Row:
    return Row(r[0], json.loads(r[2]), json.loads(r[3]), int(r[1]))


def _prompt(r: Sequence[Any]) -> Prompt:
    return Prompt(
        name=r[0], version=int(r[1]), model=r[2], system=r[3], user=r[4],
        parameters=json.loads(r[5]),
    )  # fmt: skip


class PromptStore(SQLiteFile):
    """Rows, prompts and baselines of every use case; thread-safe."""

    what = "prompt store"
    error = PromptEvalError
    version_table = "pe_schema_version"
    corrupt_hint = (  # it shares the results database's file
        "run `rbench runs --rebuild-db` to move it aside and rebuild it (the prompt lab's "
        "tables are copied over where still readable)"
    )

    @classmethod
    def for_workspace(cls, ws: Workspace) -> PromptStore:
        return cls(ws.db_path)

    def migrations(self) -> Sequence[Sequence[str]]:
        return PROMPT_EVAL_MIGRATIONS

    # ------------------------------------------------------------ reading
    def _current(self, table: str, key: str, cols: str, use_case: str) -> list[tuple[Any, ...]]:
        return self.query(
            f"SELECT {cols} FROM {table} t JOIN (SELECT {key} AS k, MAX(version) AS v, "
            f"MIN(seq) AS first FROM {table} WHERE use_case = ? GROUP BY {key}) m "
            f"ON t.{key} = m.k AND t.version = m.v WHERE t.use_case = ? AND t.deleted = 0 "
            "ORDER BY m.first",
            (use_case, use_case),
        )

    def rows(self, use_case: str) -> list[Row]:
        """Current rows, in the order they were first created."""
        return [_row(r) for r in self._current("pe_rows", "row_id", _ROW_COLS, use_case)]

    def prompts(self, use_case: str) -> list[Prompt]:
        """Current prompts, in the order they were first created."""
        return [_prompt(r) for r in self._current("pe_prompts", "name", _PROMPT_COLS, use_case)]

    def row(self, use_case: str, row_id: str) -> Row:
        found = next((r for r in self.rows(use_case) if r.id == row_id), None)
        if found is None:
            raise NotFoundError(f"use case {use_case}: no row {row_id!r}")
        return found

    def prompt(self, use_case: str, name: str) -> Prompt:
        found = next((p for p in self.prompts(use_case) if p.name == name), None)
        if found is None:
            names = ", ".join(p.name for p in self.prompts(use_case)) or "none"
            raise NotFoundError(f"use case {use_case}: no prompt {name!r} (prompts: {names})")
        return found

    def prompt_versions(self, use_case: str, name: str | None = None) -> list[PromptVersion]:
        """Every stored edit of a use case's prompts (or of one), oldest first."""
        sql = f"SELECT {_PROMPT_COLS}, created_at, deleted FROM pe_prompts WHERE use_case = ?"
        params: list[Any] = [use_case]
        if name is not None:
            sql += " AND name = ?"
            params.append(name)
        rows = self.query(sql + " ORDER BY seq", params)
        return [PromptVersion(_prompt(r), r[6], bool(r[7])) for r in rows]

    def use_cases(self) -> list[str]:
        """Use cases that have stored rows or prompts."""
        rows = self.query(
            "SELECT use_case FROM pe_rows UNION SELECT use_case FROM pe_prompts ORDER BY 1"
        )
        return [r[0] for r in rows]

    def has_data(self, use_case: str) -> bool:
        """Whether any row or prompt of the use case was ever stored (deleted ones too)."""
        return bool(
            self.query(
                "SELECT 1 FROM pe_rows WHERE use_case = ? UNION ALL "
                "SELECT 1 FROM pe_prompts WHERE use_case = ? LIMIT 1",
                (use_case, use_case),
            )
        )

    # ------------------------------------------------------------ writing
    @staticmethod
    def _stored(
        c: sqlite3.Connection, table: str, key: str, use_case: str, value: str
    ) -> tuple[int, bool, tuple[Any, ...] | None]:
        """(latest version or 0, whether it is a tombstone, its row)."""
        cols = _ROW_COLS if table == "pe_rows" else _PROMPT_COLS
        r = c.execute(
            f"SELECT {cols}, deleted FROM {table} WHERE use_case = ? AND {key} = ? "
            "ORDER BY version DESC LIMIT 1",
            (use_case, value),
        ).fetchone()
        if r is None:
            return 0, False, None
        return int(r[1]), bool(r[-1]), tuple(r[:-1])

    @staticmethod
    def _check_base(what: str, latest: int, deleted: bool, base: int | None) -> None:
        """Optimistic check: ``base`` must be the live version (0 = none / deleted)."""
        live = 0 if deleted else latest
        if base is None or base == live:
            return
        if live == 0:
            raise StaleWriteError(
                f"{what} was deleted elsewhere after you loaded version {base}; "
                "reload and add it again if you still want it"
            )
        if base == 0:
            raise StaleWriteError(
                f"{what} already exists (version {live}); load it and edit that version"
            )
        raise StaleWriteError(
            f"{what} was changed elsewhere: stored version {live}, your edit was based on "
            f"version {base}; reload it and re-apply your edit"
        )

    def write_row(self, c: sqlite3.Connection, use_case: str, row: Row, base: int | None) -> str:
        """Insert a new version of ``row`` inside transaction ``c``; ``base`` None skips
        the optimistic check. Returns ``added``, ``updated`` or ``unchanged``."""
        latest, deleted, stored = self._stored(c, "pe_rows", "row_id", use_case, row.id)
        self._check_base(f"use case {use_case}: row {row.id!r}", latest, deleted, base)
        variables, expected = _dumps(dict(row.variables)), _dumps(dict(row.expected))
        if stored is not None and not deleted and (stored[2], stored[3]) == (variables, expected):
            return "unchanged"
        c.execute(
            "INSERT INTO pe_rows (use_case, row_id, version, variables_json, expected_json, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (use_case, row.id, latest + 1, variables, expected, now_iso()),
        )
        return "added" if stored is None or deleted else "updated"

    def write_prompt(
        self, c: sqlite3.Connection, use_case: str, prompt: Prompt, base: int | None
    ) -> str:
        """Like :meth:`write_row`, for a prompt."""
        latest, deleted, stored = self._stored(c, "pe_prompts", "name", use_case, prompt.name)
        self._check_base(f"use case {use_case}: prompt {prompt.name!r}", latest, deleted, base)
        values = (prompt.model, prompt.system, prompt.user, _dumps(dict(prompt.parameters)))
        if stored is not None and not deleted and tuple(stored[2:]) == values:
            return "unchanged"
        c.execute(
            "INSERT INTO pe_prompts (use_case, name, version, model, system, user, "
            "parameters_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (use_case, prompt.name, latest + 1, *values, now_iso()),
        )
        return "added" if stored is None or deleted else "updated"

    def _tombstone(
        self,
        c: sqlite3.Connection,
        table: str,
        key: str,
        use_case: str,
        value: str,
        base: int | None,
    ) -> bool:
        latest, deleted, stored = self._stored(c, table, key, use_case, value)
        what = f"use case {use_case}: {'row' if table == 'pe_rows' else 'prompt'} {value!r}"
        if stored is None or deleted:
            if base is None:
                return False
            raise NotFoundError(f"{what} does not exist (already deleted?)")
        self._check_base(what, latest, deleted, base)
        cols = (
            "row_id, variables_json, expected_json"
            if table == "pe_rows"
            else ("name, model, system, user, parameters_json")
        )
        c.execute(
            f"INSERT INTO {table} (use_case, version, deleted, created_at, {cols}) "
            f"SELECT use_case, version + 1, 1, ?, {cols} FROM {table} "
            f"WHERE use_case = ? AND {key} = ? AND version = ?",
            (now_iso(), use_case, value, latest),
        )
        return True

    def save_row(self, use_case: UseCase, row: Row) -> Row:
        """Validate and store an edit of ``row`` (``row.version`` = the version it was
        based on, 0 for a new row); returns the row with its stored version."""
        use_case.validate_row(row)
        with self.transaction() as c:
            self.write_row(c, use_case.name, row, row.version)
        return self.row(use_case.name, row.id)

    def save_prompt(self, use_case: UseCase, prompt: Prompt) -> Prompt:
        """Validate and store an edit of ``prompt`` (optimistic, as :meth:`save_row`)."""
        check_prompt(prompt, use_case.variables, use_case.name)
        with self.transaction() as c:
            self.write_prompt(c, use_case.name, prompt, prompt.version)
        return self.prompt(use_case.name, prompt.name)

    def delete_row(self, use_case: str, row_id: str, version: int) -> None:
        with self.transaction() as c:
            self._tombstone(c, "pe_rows", "row_id", use_case, row_id, version)

    def delete_prompt(self, use_case: str, name: str, version: int) -> None:
        with self.transaction() as c:
            self._tombstone(c, "pe_prompts", "name", use_case, name, version)

    def import_rows(
        self, use_case: UseCase, rows: Sequence[Row], *, replace: bool = False
    ) -> ImportSummary:
        """Validate every row, then store them in one transaction (all or nothing).
        Rows with a known id become new versions; ``replace`` deletes the others."""
        for row in rows:
            use_case.validate_row(row)
        return self._import(use_case.name, "pe_rows", "row_id", rows, replace)

    def import_prompts(
        self, use_case: UseCase, prompts: Sequence[Prompt], *, replace: bool = False
    ) -> ImportSummary:
        """Like :meth:`import_rows`, for prompts."""
        for prompt in prompts:
            check_prompt(prompt, use_case.variables, use_case.name)
        return self._import(use_case.name, "pe_prompts", "name", prompts, replace)

    def _import(
        self, use_case: str, table: str, key: str, items: Sequence[Row | Prompt], replace: bool
    ) -> ImportSummary:
        keys = [item.id if isinstance(item, Row) else item.name for item in items]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise PromptEvalError(f"use case {use_case}: duplicate id/name(s) {', '.join(dupes)}")
        counts = {"added": 0, "updated": 0, "unchanged": 0}
        removed = 0
        with self.transaction() as c:
            for item in items:
                if isinstance(item, Row):
                    counts[self.write_row(c, use_case, item, None)] += 1
                else:
                    counts[self.write_prompt(c, use_case, item, None)] += 1
            if replace:
                live = c.execute(
                    f"SELECT DISTINCT {key} FROM {table} WHERE use_case = ?", (use_case,)
                ).fetchall()
                for (value,) in live:
                    if value not in keys:
                        removed += self._tombstone(c, table, key, use_case, value, None)
        return ImportSummary(counts["added"], counts["updated"], counts["unchanged"], removed)

    # ---------------------------------------------------------- baselines
    def baseline(self, use_case: str) -> str | None:
        rows = self.query("SELECT prompt FROM pe_baselines WHERE use_case = ?", (use_case,))
        return str(rows[0][0]) if rows else None

    def set_baseline(self, use_case: str, prompt: str) -> None:
        self.prompt(use_case, prompt)  # must exist
        with self.transaction() as c:
            c.execute(
                "INSERT OR REPLACE INTO pe_baselines (use_case, prompt, updated_at) "
                "VALUES (?, ?, ?)",
                (use_case, prompt, now_iso()),
            )
