"""Tables of the prompt-evaluation workflow, as ordered migrations
(docs/architecture.md#prompt-evaluation, docs/architecture.md#the-sqlite-results-database).

They live in the workspace database beside the benchmark results, applied by
:meth:`retrieval_bench.prompt_eval.store.PromptStore.migrate` and recorded in
their own ``pe_schema_version`` table. Keeping a separate list (rather than
appending to :data:`retrieval_bench.store.schema.MIGRATIONS`) lets the two
schemas evolve without renumbering each other, and an older results store
opens unchanged; both follow the same rules: append, never edit; applied
once, under the write lock.

- ``pe_rows`` / ``pe_prompts``: every version of every row/prompt (``deleted``
  marks a tombstone); the current one is the highest version;
- ``pe_baselines``: the baseline prompt of each use case;
- ``pe_runs``, ``pe_results`` (per prompt), ``pe_row_results`` (per prompt × row).
"""

from __future__ import annotations

PROMPT_EVAL_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE pe_rows (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            use_case TEXT NOT NULL,
            row_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            variables_json TEXT NOT NULL,
            expected_json TEXT NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            UNIQUE (use_case, row_id, version)
        )""",
        """CREATE TABLE pe_prompts (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            use_case TEXT NOT NULL,
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            model TEXT NOT NULL,
            system TEXT NOT NULL,
            user TEXT NOT NULL,
            parameters_json TEXT NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            UNIQUE (use_case, name, version)
        )""",
        """CREATE TABLE pe_baselines (
            use_case TEXT PRIMARY KEY,
            prompt TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        """CREATE TABLE pe_runs (
            id TEXT PRIMARY KEY,
            use_case TEXT NOT NULL,
            created_at TEXT NOT NULL,
            baseline TEXT,
            n_rows INTEGER NOT NULL,
            model_calls INTEGER NOT NULL,
            cache_hits INTEGER NOT NULL,
            failures INTEGER NOT NULL,
            seconds REAL NOT NULL,
            meta_json TEXT NOT NULL DEFAULT '{}'
        )""",
        """CREATE TABLE pe_results (
            run_id TEXT NOT NULL REFERENCES pe_runs(id) ON DELETE CASCADE,
            prompt TEXT NOT NULL,
            prompt_version INTEGER NOT NULL,
            model TEXT NOT NULL,
            rank INTEGER NOT NULL,
            score REAL,
            n_rows INTEGER NOT NULL,
            n_failed INTEGER NOT NULL,
            counts_json TEXT NOT NULL,
            verdict TEXT,
            p_value REAL,
            delta REAL,
            PRIMARY KEY (run_id, prompt)
        )""",
        """CREATE TABLE pe_row_results (
            run_id TEXT NOT NULL REFERENCES pe_runs(id) ON DELETE CASCADE,
            prompt TEXT NOT NULL,
            row_id TEXT NOT NULL,
            row_version INTEGER NOT NULL,
            raw TEXT,
            response_json TEXT,
            evaluation_json TEXT,
            error TEXT,
            score REAL NOT NULL,
            cached INTEGER NOT NULL,
            PRIMARY KEY (run_id, prompt, row_id)
        )""",
        "CREATE INDEX pe_runs_by_use_case ON pe_runs (use_case, created_at)",
    ),
)
"""Ordered migrations of the ``pe_*`` tables; append, never edit."""
