"""Schema of the results database as ordered migrations
(docs/architecture.md#the-sqlite-results-database).

:class:`retrieval_bench.store.db.ResultsDB` applies the migrations a store
lacks, in order, and records each in ``schema_version``. Append new
migrations at the end; never edit an applied one.

Tables: ``runs`` (one row per benchmark run, with its resolved config,
provenance, dataset fingerprint, timings, failure reason and owner
process), ``stage_info`` (per stage: parent stage, seconds, LLM
calls/tokens, failures), ``stage_metrics`` (aggregate metric per stage and
subset such as ``all`` or ``leaks_path=false``), ``query_metrics`` (per
query) and ``failures``; ``sweeps`` and ``sweep_cells`` (a sweep's cells, each
scored cell pointing at its run).
"""

from __future__ import annotations

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: initial schema
    (
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
            config_json TEXT NOT NULL DEFAULT '{}',
            provenance_json TEXT NOT NULL DEFAULT '{}',
            dataset_fingerprint TEXT,
            timings_json TEXT NOT NULL DEFAULT '{}',
            notes TEXT
        )""",
        """CREATE TABLE stage_info (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            stage TEXT NOT NULL,
            parent TEXT,
            seconds REAL NOT NULL DEFAULT 0,
            llm_calls INTEGER NOT NULL DEFAULT 0,
            llm_tokens INTEGER NOT NULL DEFAULT 0,
            n_failures INTEGER NOT NULL DEFAULT 0,
            position INTEGER NOT NULL,
            PRIMARY KEY (run_id, stage)
        )""",
        """CREATE TABLE stage_metrics (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            stage TEXT NOT NULL,
            subset TEXT NOT NULL,
            metric TEXT NOT NULL,
            value REAL,
            UNIQUE (run_id, stage, subset, metric)
        )""",
        """CREATE TABLE query_metrics (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            stage TEXT NOT NULL,
            query_id TEXT NOT NULL,
            metric TEXT NOT NULL,
            value REAL,
            PRIMARY KEY (run_id, stage, query_id, metric)
        ) WITHOUT ROWID""",
        """CREATE TABLE failures (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            stage TEXT NOT NULL,
            query_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            PRIMARY KEY (run_id, stage, query_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX runs_by_created ON runs (created_at)",
    ),
    # 2: why a run failed (``error``), which process runs it (``owner_json``: host,
    # pid, process start token, to tell a killed run from a live one) and the
    # status ``interrupted``. SQLite cannot alter a CHECK constraint, so ``runs``
    # is rebuilt (foreign keys are off while migrating; the children keep their rows).
    (
        """CREATE TABLE runs_v2 (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL
                CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
            config_json TEXT NOT NULL DEFAULT '{}',
            provenance_json TEXT NOT NULL DEFAULT '{}',
            dataset_fingerprint TEXT,
            timings_json TEXT NOT NULL DEFAULT '{}',
            notes TEXT,
            error TEXT,
            owner_json TEXT
        )""",
        "INSERT INTO runs_v2 (id, name, created_at, finished_at, status, config_json, "
        "provenance_json, dataset_fingerprint, timings_json, notes) "
        "SELECT id, name, created_at, finished_at, status, config_json, provenance_json, "
        "dataset_fingerprint, timings_json, notes FROM runs",
        "DROP TABLE runs",
        "ALTER TABLE runs_v2 RENAME TO runs",
        "CREATE INDEX runs_by_created ON runs (created_at)",
    ),
    # 3: sweeps (docs/sweeps.md#storage): a sweep and its cells; each scored cell is
    # also a run in ``runs`` (``run_id``), so ``rbench compare`` works on any two.
    (
        """CREATE TABLE sweeps (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL
                CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
            config_json TEXT NOT NULL DEFAULT '{}',
            sweep_json TEXT NOT NULL DEFAULT '{}',
            summary_json TEXT NOT NULL DEFAULT '{}',
            error TEXT
        )""",
        """CREATE TABLE sweep_cells (
            sweep_id TEXT NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
            cell INTEGER NOT NULL,
            split TEXT NOT NULL,
            label TEXT NOT NULL,
            assignments_json TEXT NOT NULL DEFAULT '{}',
            run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
            status TEXT NOT NULL,
            error TEXT,
            row_json TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (sweep_id, cell, split)
        ) WITHOUT ROWID""",
    ),
)
"""Ordered schema migrations; migration i (1-based) is ``MIGRATIONS[i - 1]``.

Append, never edit: a store records which versions it has applied.
"""
