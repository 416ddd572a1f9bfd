"""The results database: every benchmark run with its provenance and scores
(docs/architecture.md#the-sqlite-results-database).

One embedded SQLite file (stdlib :mod:`sqlite3`) that the CLI ``compare``
command and the web UI read. Design points:

- **Concurrency.** WAL journal mode and a busy timeout, so several runs (in
  threads or processes) can write the same store; every write transaction
  starts with ``BEGIN IMMEDIATE`` so a writer waits for the lock up front
  instead of failing on a read→write upgrade.
- **Atomicity.** Each public write is one transaction; a crash mid-run
  leaves earlier runs (and the earlier parts of this one) intact.
- **Run states.** ``running`` → ``done`` | ``failed`` (with the reason in
  ``error``) | ``interrupted`` (Ctrl-C). A run records its owner process
  (:mod:`retrieval_bench.store.owner`); one still ``running`` whose owner is
  gone from this host (``kill -9``, crash) is read back — and stored — as
  ``interrupted``.
- **Damage.** A corrupt file raises :class:`CorruptDBError` naming the file
  and ``rbench runs --rebuild-db`` (:mod:`retrieval_bench.store.rebuild`
  rebuilds it from ``results/``).
- **Migrations.** ``schema_version`` records each applied migration of the
  ordered :data:`MIGRATIONS`; opening a store applies the missing ones, once,
  under the write lock (idempotent, safe when two processes open together).
- **Provenance.** :func:`provenance` records what made the numbers: package
  versions, models, dataset fingerprint, snapshot, tokenizer, git commit,
  Python and platform (results that record their versions: docs/architecture.md#provenance).

NaN metric values are stored as NULL and read back as NaN. The records it
returns, its errors and run ids are :mod:`retrieval_bench.store.records`,
re-exported here.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from retrieval_bench.store.corrupt import CorruptDBError
from retrieval_bench.store.owner import current_owner, describe_owner, owner_alive
from retrieval_bench.store.provenance import provenance
from retrieval_bench.store.records import (
    FINISHED_BADLY,
    RUN_STATUSES,
    ResultsDBError,
    RunInProgressError,
    RunRecord,
    StageInfo,
    UnknownRunError,
    failure_reason,
    new_run_id,
    now,
)
from retrieval_bench.store.schema import MIGRATIONS
from retrieval_bench.store.sqlite import SQLiteFile
from retrieval_bench.types import StageResult

__all__ = [
    "FINISHED_BADLY",
    "MIGRATIONS",
    "CorruptDBError",
    "ResultsDB",
    "ResultsDBError",
    "RunInProgressError",
    "RunRecord",
    "StageInfo",
    "UnknownRunError",
    "failure_reason",
    "new_run_id",
    "provenance",
]


def _num(v: float | None) -> float | None:
    return None if v is None or math.isnan(float(v)) else float(v)


def _val(v: float | None) -> float:
    return math.nan if v is None else float(v)


class ResultsDB(SQLiteFile):
    """SQLite store of benchmark runs; one instance may be shared between threads.

    Typical use: ``start_run`` → ``record_stage`` / ``record_query_metrics``
    per stage → ``finish_run(run_id, "done" | "failed", timings)``.
    """

    what = "results database"
    error = ResultsDBError
    corrupt_hint = "run `rbench runs --rebuild-db` to move it aside and rebuild it from results/"

    def migrations(self) -> Sequence[Sequence[str]]:
        return MIGRATIONS  # read at call time (tests extend the module's list)

    def start_run(
        self,
        name: str,
        config: Mapping[str, Any] | None = None,
        provenance: Mapping[str, Any] | None = None,
        dataset_fingerprint: str | None = None,
        notes: str | None = None,
        run_id: str | None = None,
        owner: Mapping[str, Any] | None = None,
    ) -> str:
        """Insert a ``running`` run and return its id (generated unless given).
        ``owner`` defaults to this process (see :mod:`retrieval_bench.store.owner`)."""
        owner_json = json.dumps(dict(owner if owner is not None else current_owner()))
        for _ in range(5):
            rid = run_id or new_run_id()
            try:
                with self.transaction() as c:
                    c.execute(
                        "INSERT INTO runs (id, name, created_at, status, config_json, "
                        "provenance_json, dataset_fingerprint, notes, owner_json) "
                        "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                        (
                            rid,
                            name,
                            now().isoformat(),
                            json.dumps(dict(config or {}), sort_keys=True, default=str),
                            json.dumps(dict(provenance or {}), sort_keys=True, default=str),
                            dataset_fingerprint,
                            notes,
                            owner_json,
                        ),
                    )
                return rid
            except sqlite3.IntegrityError:
                if run_id is not None:
                    raise ResultsDBError(f"a run with id {run_id} already exists") from None
        raise ResultsDBError("could not allocate a unique run id")  # pragma: no cover

    def record_stage(
        self,
        run_id: str,
        stage: str,
        metrics: Mapping[str, Mapping[str, float]] | None = None,
        *,
        parent: str | None = None,
        seconds: float = 0.0,
        llm_calls: int = 0,
        llm_tokens: int = 0,
        failures: Mapping[str, str] | None = None,
    ) -> None:
        """Store one stage: its info, aggregate ``metrics`` (subset → metric → value)
        and failed queries (query id → reason). Re-recording a stage replaces it."""
        self._require(run_id)
        failures = dict(failures or {})
        with self.transaction() as c:
            (pos,) = c.execute(
                "SELECT COALESCE((SELECT position FROM stage_info WHERE run_id = ? AND stage = ?),"
                " (SELECT COUNT(*) FROM stage_info WHERE run_id = ?))",
                (run_id, stage, run_id),
            ).fetchone()
            c.execute(
                "INSERT OR REPLACE INTO stage_info (run_id, stage, parent, seconds, llm_calls, "
                "llm_tokens, n_failures, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, stage, parent, seconds, llm_calls, llm_tokens, len(failures), pos),
            )
            c.execute("DELETE FROM stage_metrics WHERE run_id = ? AND stage = ?", (run_id, stage))
            c.executemany(
                "INSERT INTO stage_metrics (run_id, stage, subset, metric, value) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (run_id, stage, subset, metric, _num(value))
                    for subset, values in (metrics or {}).items()
                    for metric, value in values.items()
                ],
            )
            c.execute("DELETE FROM failures WHERE run_id = ? AND stage = ?", (run_id, stage))
            c.executemany(
                "INSERT INTO failures (run_id, stage, query_id, reason) VALUES (?, ?, ?, ?)",
                [(run_id, stage, q, reason) for q, reason in failures.items()],
            )

    def record_stage_result(
        self,
        run_id: str,
        result: StageResult,
        metrics: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        """:meth:`record_stage` from a :class:`~retrieval_bench.types.StageResult`."""
        self.record_stage(
            run_id,
            result.name,
            metrics,
            parent=result.parent,
            seconds=result.seconds,
            llm_calls=result.llm_calls,
            llm_tokens=result.llm_tokens,
            failures=result.failures,
        )

    def record_query_metrics(
        self, run_id: str, stage: str, per_query: Mapping[str, Mapping[str, float]]
    ) -> int:
        """Bulk-store per-query metrics (query id → metric → value); returns rows written."""
        self._require(run_id)
        rows = [
            (run_id, stage, q, metric, _num(value))
            for q, values in per_query.items()
            for metric, value in values.items()
        ]
        with self.transaction() as c:
            c.executemany(
                "INSERT OR REPLACE INTO query_metrics (run_id, stage, query_id, metric, value) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def finish_run(
        self,
        run_id: str,
        status: str = "done",
        timings: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """Mark a run ``done``, ``failed`` or ``interrupted``; store its timings and,
        for a run that did not succeed, the one-line reason ``error``."""
        if status not in RUN_STATUSES or status == "running":
            raise ResultsDBError(f"run status must be one of {RUN_STATUSES[1:]}, got {status!r}")
        with self.transaction() as c:
            cur = c.execute(
                "UPDATE runs SET status = ?, finished_at = ?, timings_json = ?, error = ? "
                "WHERE id = ?",
                (
                    status,
                    now().isoformat(),
                    json.dumps(dict(timings or {}), default=str),
                    error,
                    run_id,
                ),
            )
            if cur.rowcount == 0:
                raise UnknownRunError(f"no run {run_id!r} in {self.path}")

    def reopen_run(
        self,
        run_id: str,
        config: Mapping[str, Any],
        provenance: Mapping[str, Any],
        owner: Mapping[str, Any] | None = None,
    ) -> None:
        """Mark an interrupted or failed run ``running`` again, owned by this process
        (``rbench run --resume``); whatever it had recorded of its results is removed,
        since the resumed run records them all."""
        self._require(run_id)
        owner_json = json.dumps(dict(owner if owner is not None else current_owner()))
        with self.transaction() as c:
            for table in ("stage_info", "stage_metrics", "query_metrics", "failures"):
                c.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            c.execute(
                "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, "
                "timings_json = '{}', config_json = ?, provenance_json = ?, owner_json = ? "
                "WHERE id = ?",
                (
                    json.dumps(dict(config), sort_keys=True, default=str),
                    json.dumps(dict(provenance), sort_keys=True, default=str),
                    owner_json,
                    run_id,
                ),
            )

    def update_provenance(
        self, run_id: str, provenance: Mapping[str, Any], dataset_fingerprint: str | None = None
    ) -> None:
        """Replace a run's provenance (e.g. once the models it used are known) and, when
        given, its dataset fingerprint (known once the datasets are prepared)."""
        self._require(run_id)
        with self.transaction() as c:
            c.execute(
                "UPDATE runs SET provenance_json = ?, "
                "dataset_fingerprint = COALESCE(?, dataset_fingerprint) WHERE id = ?",
                (json.dumps(dict(provenance), sort_keys=True, default=str), dataset_fingerprint,
                 run_id),
            )  # fmt: skip

    def delete_run(self, run_id: str) -> None:
        """Remove a run and everything recorded for it."""
        with self.transaction() as c:
            c.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    _RUN_COLS = (
        "id, name, created_at, finished_at, status, config_json, provenance_json, "
        "dataset_fingerprint, timings_json, notes, error, owner_json"
    )

    def _record(self, row: tuple[Any, ...]) -> RunRecord:
        rid, name, created, finished, status, cfg, prov, fp, timings, notes, error, owner = row
        rec = RunRecord(
            rid, name, created, finished, status,
            json.loads(cfg), json.loads(prov), fp, json.loads(timings), notes,
            error, json.loads(owner) if owner else None,
        )  # fmt: skip
        return self._settle(rec)

    def _settle(self, rec: RunRecord) -> RunRecord:
        """A ``running`` run whose owner process is gone from this host is ``interrupted``:
        stored as such (when the store is writable) and returned so."""
        if rec.status != "running" or owner_alive(rec.owner) is not False:
            return rec
        error = f"{describe_owner(rec.owner)} ended before the run finished: killed or crashed"
        try:
            with self.transaction() as c:
                c.execute(
                    "UPDATE runs SET status = 'interrupted', error = ? "
                    "WHERE id = ? AND status = 'running'",
                    (error, rec.id),
                )
        except sqlite3.OperationalError:  # read-only or locked: still report it truthfully
            pass
        return replace(rec, status="interrupted", error=error)

    def list_runs(self) -> list[RunRecord]:
        """All runs, newest first (stale ``running`` ones as ``interrupted``)."""
        rows = self.query(f"SELECT {self._RUN_COLS} FROM runs ORDER BY created_at DESC, id DESC")
        return [self._record(r) for r in rows]

    def get_run(self, run_id: str) -> RunRecord:
        rows = self.query(f"SELECT {self._RUN_COLS} FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise UnknownRunError(f"no run {run_id!r} in {self.path}")
        return self._record(rows[0])

    def run_alive(self, run: RunRecord) -> bool | None:
        """For a ``running`` run: whether its process still runs (None: cannot tell,
        e.g. another host's run or one recorded before owners were)."""
        return owner_alive(run.owner) if run.status == "running" else False

    def _require(self, run_id: str) -> None:
        if not self.query("SELECT 1 FROM runs WHERE id = ?", (run_id,)):
            raise UnknownRunError(f"no run {run_id!r} in {self.path}")

    def stages(self, run_id: str) -> list[StageInfo]:
        """Stage info in the order stages were first recorded."""
        rows = self.query(
            "SELECT stage, parent, seconds, llm_calls, llm_tokens, n_failures FROM stage_info "
            "WHERE run_id = ? ORDER BY position",
            (run_id,),
        )
        return [StageInfo(*r) for r in rows]

    def stage_table(self, run_id: str, subset: str = "all") -> dict[str, dict[str, float]]:
        """stage → metric → value for one subset; stages in the order first recorded,
        metrics in the order given to :meth:`record_stage`."""
        self._require(run_id)
        rows = self.query(
            "SELECT m.stage, m.metric, m.value FROM stage_metrics m "
            "LEFT JOIN stage_info s ON s.run_id = m.run_id AND s.stage = m.stage "
            "WHERE m.run_id = ? AND m.subset = ? ORDER BY s.position, m.stage, m.rowid",
            (run_id, subset),
        )
        table: dict[str, dict[str, float]] = {}
        for stage, metric, value in rows:
            table.setdefault(stage, {})[metric] = _val(value)
        return table

    def subsets(self, run_id: str) -> list[str]:
        rows = self.query(
            "SELECT DISTINCT subset FROM stage_metrics WHERE run_id = ? ORDER BY subset", (run_id,)
        )
        return [r[0] for r in rows]

    def query_metrics(self, run_id: str, stage: str) -> dict[str, dict[str, float]]:
        """query id → metric → value for one stage."""
        rows = self.query(
            "SELECT query_id, metric, value FROM query_metrics WHERE run_id = ? AND stage = ?",
            (run_id, stage),
        )
        out: dict[str, dict[str, float]] = {}
        for q, metric, value in rows:
            out.setdefault(q, {})[metric] = _val(value)
        return out

    def failures(self, run_id: str, stage: str | None = None) -> list[tuple[str, str, str]]:
        """(stage, query id, reason) rows."""
        sql = "SELECT stage, query_id, reason FROM failures WHERE run_id = ?"
        params: list[Any] = [run_id]
        if stage is not None:
            sql += " AND stage = ?"
            params.append(stage)
        return [tuple(r) for r in self.query(sql + " ORDER BY stage, query_id", params)]
