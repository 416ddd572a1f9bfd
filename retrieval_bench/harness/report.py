"""Aligned per-stage tables for the terminal (docs/architecture.md#interfaces)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.metrics.retrieval.scoring import budget_label
from retrieval_bench.text_table import aligned


def stage_columns(k: int, budgets: Sequence[int]) -> list[str]:
    """The metrics shown per stage: file-level P/R/F1 at k and at each budget."""
    cols = [f"P@{k}", f"R@{k}", f"F1@{k}", f"Acc@{k}", "MRR", f"nDCG@{k}"]
    cols += [f"F1@{budget_label(b)}" for b in budgets]
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


TABLE_FORMATS = ("text", "csv", "markdown")
"""What ``rbench show``/``run`` can print a stage table as."""


def format_table(
    table: Mapping[str, Mapping[str, float]],
    columns: Sequence[str],
    stage_order: Sequence[str] | None = None,
    title: str | None = None,
    fmt: str = "text",
) -> str:
    """Render ``stage → metric → value`` as an aligned text table, a Markdown table
    (title as a bold line above it) or CSV (no title; unrounded values, so a
    spreadsheet gets the numbers, not their display)."""
    stages = [s for s in (stage_order or list(table)) if s in table]
    header = ["stage", *columns]
    if fmt == "csv":
        return csv_table(header, [[s, *(_csv(table[s].get(c)) for c in columns)] for s in stages])
    rows = [[s, *(_fmt(table[s].get(c), c) for c in columns)] for s in stages]
    if fmt == "markdown":
        return markdown_table(header, rows, title)
    if fmt != "text":
        raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return aligned(header, rows, title)


def _csv(value: float | None) -> str:
    return "" if value is None else repr(round(float(value), 6))


def csv_tables(
    tables: Mapping[str, Mapping[str, Mapping[str, float]]],
    columns: Sequence[str],
    stage_order: Sequence[str],
) -> str:
    """Several subsets' stage tables (``subset → stage → metric``) as one CSV with a
    leading ``subset`` column: one file a spreadsheet or pandas reads in one go."""
    rows = [
        [subset, s, *(_csv(table[s].get(c)) for c in columns)]
        for subset, table in tables.items()
        for s in stage_order
        if s in table
    ]
    return csv_table(["subset", "stage", *columns], rows)


def csv_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """``header`` and ``rows`` as CSV text (RFC 4180 quoting, ``\\n`` line ends)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().rstrip("\n")


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None
) -> str:
    """A GitHub-flavoured Markdown table: first column left-aligned, numbers right."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rule = "|" + "|".join([":---", *("---:" for _ in header[1:])]) + "|"
    out = [line(header), rule, *map(line, rows)]
    if title and title.strip():  # a title's leading newline (a blank line above) is kept
        lead = "\n" if title.startswith("\n") else ""
        out = [f"{lead}**{title.strip()}**", "", *out]
    return "\n".join(out)


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
