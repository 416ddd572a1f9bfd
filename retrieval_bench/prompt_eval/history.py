"""Every prompt-evaluation run kept, so a prompt's trend is visible
(docs/architecture.md#prompt-evaluation).

A run stores, per prompt, the prompt version it ran, its rank, per-column
counts, failures, mean row score and the verdict against the baseline; per
row, the raw model text, the processed response, the evaluation and the
error (the web UI's drill-down). :func:`history` lists those entries oldest
first and adds each prompt's change of score since its previous run, which is
what "is this prompt getting better or worse over time" reads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

from retrieval_bench.prompt_eval.errors import NotFoundError
from retrieval_bench.prompt_eval.records import EvaluationRun, RowOutcome
from retrieval_bench.prompt_eval.store import PromptStore, now_iso
from retrieval_bench.store.db import new_run_id


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None


def record_run(store: PromptStore, run: EvaluationRun) -> EvaluationRun:
    """Store ``run`` (one transaction) and return it with its ``run_id``."""
    run_id = new_run_id()
    with store.transaction() as c:
        c.execute(
            "INSERT INTO pe_runs (id, use_case, created_at, baseline, n_rows, model_calls, "
            "cache_hits, failures, seconds, meta_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id, run.use_case, now_iso(), run.baseline, run.n_rows, run.model_calls,
                run.cache_hits, run.failures, run.seconds,
                json.dumps({"skipped_rows": dict(run.skipped_rows)}),
            ),
        )  # fmt: skip
        for rank, result in enumerate(run.results, 1):
            cmp = run.comparisons.get(result.name)
            c.execute(
                "INSERT INTO pe_results (run_id, prompt, prompt_version, model, rank, score, "
                "n_rows, n_failed, counts_json, verdict, p_value, delta) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, result.name, result.prompt.version, result.prompt.model, rank,
                    _num(result.score), result.n_rows, result.n_failed,
                    json.dumps(dict(result.counts)),
                    cmp.verdict if cmp else "baseline",
                    _num(cmp.p_value) if cmp else None,
                    _num(cmp.delta) if cmp else None,
                ),
            )  # fmt: skip
            c.executemany(
                "INSERT INTO pe_row_results (run_id, prompt, row_id, row_version, raw, "
                "response_json, evaluation_json, error, score, cached) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        result.name,
                        o.row_id,
                        o.row_version,
                        o.raw,
                        None if o.response is None else json.dumps(o.response, default=str),
                        None if o.evaluation is None else json.dumps(dict(o.evaluation)),
                        o.error,
                        o.score,
                        int(o.cached),
                    )  # fmt: skip
                    for o in result.outcomes
                ],
            )
    return replace(run, run_id=run_id)


@dataclass(frozen=True)
class HistoryEntry:
    """One prompt in one stored run."""

    run_id: str
    created_at: str
    use_case: str
    prompt: str
    prompt_version: int
    model: str
    rank: int
    n_prompts: int
    score: float
    n_rows: int
    n_failed: int
    counts: dict[str, float]
    verdict: str
    """``baseline``, or ``better``/``worse``/``same`` than the run's baseline."""
    p_value: float
    model_calls: int
    cache_hits: int
    change: float
    """Score minus this prompt's score in its previous run (NaN for its first run)."""


def history(
    store: PromptStore, use_case: str | None = None, prompt: str | None = None
) -> list[HistoryEntry]:
    """Stored runs' per-prompt entries, oldest first (optionally one use case/prompt)."""
    sql = (
        "SELECT r.id, r.created_at, r.use_case, p.prompt, p.prompt_version, p.model, p.rank, "
        "(SELECT COUNT(*) FROM pe_results x WHERE x.run_id = r.id), p.score, p.n_rows, "
        "p.n_failed, p.counts_json, p.verdict, p.p_value, r.model_calls, r.cache_hits "
        "FROM pe_runs r JOIN pe_results p ON p.run_id = r.id WHERE 1 = 1"
    )
    params: list[Any] = []
    if use_case is not None:
        sql += " AND r.use_case = ?"
        params.append(use_case)
    if prompt is not None:
        sql += " AND p.prompt = ?"
        params.append(prompt)
    rows = store.query(sql + " ORDER BY r.created_at, r.id, p.rank", params)
    previous: dict[tuple[str, str], float] = {}
    out = []
    for r in rows:
        key = (r[2], r[3])
        score = math.nan if r[8] is None else float(r[8])
        change = score - previous[key] if key in previous else math.nan
        previous[key] = score
        out.append(
            HistoryEntry(
                run_id=r[0],
                created_at=r[1],
                use_case=r[2],
                prompt=r[3],
                prompt_version=r[4],
                model=r[5],
                rank=r[6],
                n_prompts=r[7],
                score=score,
                n_rows=r[9],
                n_failed=r[10],
                counts=json.loads(r[11]),
                verdict=r[12] or "",
                p_value=math.nan if r[13] is None else float(r[13]),
                model_calls=r[14],
                cache_hits=r[15],
                change=change,
            )  # fmt: skip
        )
    return out


def row_outcomes(store: PromptStore, run_id: str, prompt: str) -> list[RowOutcome]:
    """The per-row drill-down of one prompt in one stored run."""
    rows = store.query(
        "SELECT row_id, row_version, raw, response_json, evaluation_json, error, score, cached "
        "FROM pe_row_results WHERE run_id = ? AND prompt = ? ORDER BY rowid",
        (run_id, prompt),
    )
    if not rows and not store.query("SELECT 1 FROM pe_runs WHERE id = ?", (run_id,)):
        raise NotFoundError(f"no prompt-evaluation run {run_id!r} in {store.path}")
    return [
        RowOutcome(
            r[0],
            r[1],
            r[2],
            None if r[3] is None else json.loads(r[3]),
            None if r[4] is None else json.loads(r[4]),
            r[5],
            float(r[6]),
            bool(r[7]),
        )  # fmt: skip
        for r in rows
    ]
