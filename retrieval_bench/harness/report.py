"""Aligned per-stage tables for the terminal (SPEC §6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.text_table import aligned


def stage_columns(k: int, budgets: Sequence[int]) -> list[str]:
    """The metrics shown per stage: file-level P/R/F1 at k and at each budget."""
    cols = [f"P@{k}", f"R@{k}", f"F1@{k}", f"Acc@{k}", "MRR", f"nDCG@{k}"]
    cols += [f"F1@{b // 1000}k" for b in budgets]
    return cols + ["lost", "seconds"]


def span_columns(k: int) -> list[str]:
    """Span-level view (datasets with gold line spans): lines and chunks at k."""
    return [f"line_P@{k}", f"line_R@{k}", f"line_F1@{k}", f"chunk_Hit@{k}", "chunk_MRR"]


def _fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    if metric == "seconds":
        return f"{value:.1f}"
    if metric == "lost":
        return f"{value:.2f}"
    if metric.startswith("llm_"):
        return f"{value:g}"
    if metric == "kept":
        return f"{value:.2f}"
    return f"{value:.3f}"


def format_table(
    table: Mapping[str, Mapping[str, float]],
    columns: Sequence[str],
    stage_order: Sequence[str] | None = None,
    title: str | None = None,
) -> str:
    """Render ``stage → metric → value`` as an aligned text table."""
    stages = [s for s in (stage_order or list(table)) if s in table]
    header = ["stage", *columns]
    rows = [[s, *(_fmt(table[s].get(c), c) for c in columns)] for s in stages]
    return aligned(header, rows, title)


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def format_answer_table(
    aggregates: Mapping[str, Mapping[str, float | int | None]],
    title: str | None = None,
    confidence: float = 0.95,
) -> str:
    """Render answer metrics (metric → mean, ci_low, ci_high, count, missing) as an
    aligned table: metric, mean, CI of the mean, count, missing."""
    header = ["metric", "mean", f"{confidence:.0%} CI", "count", "missing"]
    rows = []
    for metric, a in aggregates.items():
        mean = a.get("mean")
        rows.append(
            [
                metric,
                "-" if mean is None else f"{mean:.3f}",
                _ci(a.get("ci_low"), a.get("ci_high")),
                str(a["count"]) if a.get("count") is not None else "-",
                str(a["missing"]) if a.get("missing") is not None else "-",
            ]
        )
    return aligned(header, rows, title)


def format_answer_section(name: str, summary: Mapping[str, Any]) -> str:
    """The ``answers`` section of ``rbench run``: what was answered from which stage,
    the metric table, the answer stage's LLM use and how the cited files check out
    (``summary``: :meth:`retrieval_bench.harness.answers.AnswerSection.summary`)."""
    n, failed = summary["questions"], summary["failed"]
    title = (
        f"\n{name} answers (rung {summary['rung']}, top {summary['k']} chunks of "
        f"{summary['input']}; {n} questions, {failed} without an answer)"
    )
    out = [format_answer_table(summary["metrics"], title)]
    for metric, value in (summary.get("corpus") or {}).items():
        out.append(f"{metric} (corpus level): {value:.3f}")
    llm = summary["llm"]
    out.append(
        f"answer stage LLM: {llm['calls']} calls (answers {llm['answer_calls']}, "
        f"metrics {llm['metric_calls']}), {llm['tokens']} tokens, "
        f"{llm['cache_hits']} cache hits, {llm['failures']} failed; {summary['seconds']:.1f}s"
    )
    refs = summary["references"]
    out.append(
        f"file references: {refs['files_cited']} cited, {refs['exist']} exist in the repository "
        f"({refs['ambiguous']} ambiguous), {refs['in_context']} shown to the model; "
        f"line ranges {refs['lines_exist']}/{refs['lines_cited']} valid; "
        f"{refs['symbols']} symbol-only"
    )
    return "\n".join(out)


ANSWER_ROW_EXTRAS = ("failed", "seconds", "llm_calls", "llm_tokens", "llm_cache_hits")


def answer_aggregates(row: Mapping[str, float]) -> dict[str, dict[str, float | int | None]]:
    """Metric → {mean, ci_low, ci_high} from a stored ``answer`` stage row, whose keys
    are ``<metric>``, ``<metric>_ci_low``, ``<metric>_ci_high`` (and ``_corpus``)."""
    out: dict[str, dict[str, float | int | None]] = {}
    for key, value in row.items():
        if key in ANSWER_ROW_EXTRAS or key.endswith(("_ci_low", "_ci_high", "_corpus")):
            continue
        out[key] = {
            "mean": value,
            "ci_low": row.get(f"{key}_ci_low"),
            "ci_high": row.get(f"{key}_ci_high"),
        }
    return out
