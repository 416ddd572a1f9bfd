"""Aligned terminal tables and JSON for prompt-evaluation runs and history
(docs/architecture.md#prompt-evaluation, docs/architecture.md#interfaces).

The run table has one line per prompt, best first (the use case's sort), with
the count of rows matching per column (``7/10`` for a ground-truth field or a
boolean extra, plain sums for numeric extras such as TP), failed rows, the mean row score, and the
verdict against the baseline with the paired test's p-value; ``*`` marks a
difference significant at the run's alpha.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from retrieval_bench import text_table
from retrieval_bench.prompt_eval.history import HistoryEntry
from retrieval_bench.prompt_eval.records import EvaluationRun, PromptResult
from retrieval_bench.prompt_eval.usecase import UseCase


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 2) -> str:
    """Text table: the first ``left`` columns left-aligned, the rest right-aligned."""
    return text_table.aligned(header, rows, left=range(left))


def _count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _p(value: float) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


def _score(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "-"


def columns_of(use_case: UseCase, results: Sequence[PromptResult]) -> list[str]:
    cols = list(use_case.columns())
    for r in results:
        cols += [c for c in r.counts if c not in cols]
    return cols


def flag_columns(use_case: UseCase, results: Sequence[PromptResult]) -> set[str]:
    """Columns that count matching rows (ground-truth fields, and extras whose
    evaluations are booleans), shown as ``matched/rows``."""
    flags = set(use_case.fields)
    seen: dict[str, bool] = {}
    for r in results:
        for o in r.outcomes:
            for key, value in (o.evaluation or {}).items():
                seen[key] = seen.get(key, True) and isinstance(value, bool)
    return flags | {k for k, is_flag in seen.items() if is_flag}


def format_run(use_case: UseCase, run: EvaluationRun) -> str:
    """The sorted results table of one run, with a header line and a cost footer."""
    cols = columns_of(use_case, run.results)
    flags = flag_columns(use_case, run.results)
    header = ["rank", "prompt", "v", "model", *cols, "failed", "score", "vs baseline", "p"]
    rows = []
    for rank, r in enumerate(run.results, 1):
        cmp = run.comparisons.get(r.name)
        verdict = "baseline" if cmp is None else cmp.verdict + (" *" if cmp.significant else "")
        cells = [str(rank), r.name, str(r.prompt.version or "-"), r.prompt.model or "(default)"]
        for c in cols:
            n = r.counts.get(c, 0.0)
            cells.append(f"{_count(n)}/{r.n_rows}" if c in flags else _count(n))
        cells += [str(r.n_failed), _score(r.score), verdict, _p(cmp.p_value) if cmp else "-"]
        rows.append(cells)
    title = (
        f"{run.use_case}: {run.n_rows} rows x {len(run.results)} prompts, "
        f"baseline {run.baseline}" + (f" (run {run.run_id})" if run.run_id else "")
    )
    lines = [title, aligned(header, rows, left=2)]
    lines.append(
        f"model calls {run.model_calls}, cache hits {run.cache_hits}, "
        f"failed calls {run.failures}, {run.seconds:.1f}s"
        "  (score: mean per-row score; p: paired randomisation test vs baseline; * p < alpha)"
    )
    for row_id, why in run.skipped_rows.items():
        lines.append(f"skipped row {row_id}: {why}")
    return "\n".join(lines)


def run_to_json(run: EvaluationRun) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {
        "run_id": run.run_id,
        "use_case": run.use_case,
        "baseline": run.baseline,
        "n_rows": run.n_rows,
        "model_calls": run.model_calls,
        "cache_hits": run.cache_hits,
        "failures": run.failures,
        "seconds": run.seconds,
        "skipped_rows": dict(run.skipped_rows),
        "results": [
            {
                "rank": rank,
                "prompt": r.name,
                "version": r.prompt.version,
                "model": r.prompt.model,
                "counts": dict(r.counts),
                "n_rows": r.n_rows,
                "n_failed": r.n_failed,
                "score": num(r.score),
                "vs_baseline": (
                    None
                    if (c := run.comparisons.get(r.name)) is None
                    else {
                        "verdict": c.verdict,
                        "p_value": num(c.p_value),
                        "delta": num(c.delta),
                        "wins": c.wins,
                        "losses": c.losses,
                        "significant": c.significant,
                    }
                ),
                "rows": [
                    {"id": o.row_id, "error": o.error, "score": o.score, "evaluation": o.evaluation}
                    for o in r.outcomes
                ],
            }
            for rank, r in enumerate(run.results, 1)
        ],
    }


def format_history(entries: Sequence[HistoryEntry]) -> str:
    """One line per prompt per run, oldest first; ``change`` = score minus the
    prompt's score in its previous run (``▲``/``▼`` mark a change)."""
    header = ["run", "use case", "prompt", "v", "rank", "score", "change", "failed", "vs baseline"]
    header += ["p", "calls"]
    rows = []
    for e in entries:
        if math.isfinite(e.change):
            change = f"{e.change:+.3f}" + (" ▲" if e.change > 0 else " ▼" if e.change < 0 else "")
        else:
            change = "-"
        rows.append(
            [
                e.run_id, e.use_case, e.prompt, str(e.prompt_version), f"{e.rank}/{e.n_prompts}",
                _score(e.score), change, f"{e.n_failed}/{e.n_rows}", e.verdict, _p(e.p_value),
                str(e.model_calls),
            ]
        )  # fmt: skip
    return aligned(header, rows, left=3)
