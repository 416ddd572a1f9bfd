"""Aligned per-stage tables for the terminal (docs/architecture.md#interfaces)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.harness.compare.paired import PairedView, decode
from retrieval_bench.measures import budget_label
from retrieval_bench.text_table import aligned


def stage_columns(k: int, budgets: Sequence[int]) -> list[str]:
    """The metrics shown per stage: file-level P/R/F1 at k and at each budget."""
    cols = [f"P@{k}", f"R@{k}", f"F1@{k}", f"Acc@{k}", "MRR", f"nDCG@{k}"]
    cols += [f"F1@{budget_label(b)}" for b in budgets]
    return cols + ["lost", "seconds"]


def span_columns(k: int) -> list[str]:
    """Span-level view (datasets with gold line spans): lines and chunks at k."""
    return [f"line_P@{k}", f"line_R@{k}", f"line_F1@{k}", f"chunk_Hit@{k}", "chunk_MRR"]


def level_columns(level: str, ks: Sequence[int], k: int) -> list[str]:
    """Module- or function-level view (questions with gold functions): Acc at every
    cutoff, R, MRR and nDCG at the table's k."""
    p = f"{level}_"
    return [*(f"{p}Acc@{c}" for c in ks), f"{p}R@{k}", f"{p}MRR", f"{p}nDCG@{k}"]


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


def count_noun(n: int, singular: str, plural: str | None = None) -> str:
    """``1 query``, ``3 queries``: ``n`` with the noun in the number it takes."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def failed_note(failed: Mapping[str, str], total: int, shown: int = 3) -> str | None:
    """The line below a table whose questions include some that could not be run:
    ``1 of 3 questions failed: <reason> (<id>); scored 0 (a miss) in every metric``
    (ids grouped by reason, the first ``shown`` reasons and ids named); None when
    every question ran (docs/metrics.md#questions-that-could-not-be-run)."""
    if not failed:
        return None
    by_reason: dict[str, list[str]] = {}
    for qid, why in failed.items():
        by_reason.setdefault(why, []).append(qid)
    parts = []
    for why, ids in list(by_reason.items())[:shown]:
        named = ", ".join(ids[:shown]) + (
            f" and {len(ids) - shown} more" if len(ids) > shown else ""
        )
        parts.append(f"{why} ({named})")
    if len(by_reason) > shown:
        parts.append(f"{len(by_reason) - shown} other reason(s)")
    head = f"{len(failed)} of {count_noun(total, 'question')} failed"
    return f"{head}: {'; '.join(parts)}; scored 0 (a miss) in every metric"


def stored_failures(
    provenance: Mapping[str, Any], subset: str = "all"
) -> tuple[int, dict[str, str]] | None:
    """(questions, question id → why it could not be run) of ``subset`` of a stored
    run, from its provenance (``question_counts``; for the ``all`` subset of a run
    without it, the datasets' ``failed_questions``); None when unknown."""
    counts = provenance.get("question_counts")
    entry = counts.get(subset) if isinstance(counts, Mapping) else None
    if isinstance(entry, Mapping):
        return int(entry.get("total") or 0), dict(entry.get("failed") or {})
    datasets = provenance.get("datasets")
    if subset != "all" or not isinstance(datasets, Mapping):
        return None
    entries = [d for d in datasets.values() if isinstance(d, Mapping)]
    failed = {q: str(r) for d in entries for q, r in (d.get("failed_questions") or {}).items()}
    return sum(int(d.get("n_examples") or 0) for d in entries), failed


TABLE_FORMATS = ("text", "csv", "markdown")
"""What ``rbench show``/``run`` can print a stage table as."""


def format_table(
    table: Mapping[str, Mapping[str, float]],
    columns: Sequence[str],
    stage_order: Sequence[str] | None = None,
    title: str | None = None,
    fmt: str = "text",
    paired: bool = False,
) -> str:
    """Render ``stage → metric → value`` as an aligned text table, a Markdown table
    (title as a bold line above it) or CSV (no title; unrounded values, so a
    spreadsheet gets the numbers, not their display).

    ``paired``: when the table carries paired results (:mod:`.paired`), the columns
    ``Δ<metric> vs <baseline>`` and ``p`` follow, a fusion significantly worse than
    its best input gets a ``!`` and notes follow the table (CSV: the columns
    ``Δ…``, ``p``, ``pairs`` and ``worse_than_input`` instead of marks and notes)."""
    stages = [s for s in (stage_order or list(table)) if s in table]
    view = decode({s: table[s] for s in stages}) if paired else None
    header = ["stage", *columns]
    if fmt == "csv":
        rows = [[s, *(_csv(table[s].get(c)) for c in columns), *csv_cells(view, s)] for s in stages]
        return csv_table([*header, *csv_header(view)], rows)
    rows = [
        [stage_label(view, s), *(_fmt(table[s].get(c), c) for c in columns), *paired_cells(view, s)]
        for s in stages
    ]
    header += paired_header(view)
    notes = paired_notes(view, stages)
    if fmt == "markdown":
        return "\n\n".join([markdown_table(header, rows, title), *notes])
    if fmt != "text":
        raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return "\n".join([aligned(header, rows, title), *notes])


def _csv(value: float | None) -> str:
    return "" if value is None else repr(round(float(value), 6))


def csv_tables(
    tables: Mapping[str, Mapping[str, Mapping[str, float]]],
    columns: Sequence[str],
    stage_order: Sequence[str],
    paired: bool = False,
) -> str:
    """Several subsets' stage tables (``subset → stage → metric``) as one CSV with a
    leading ``subset`` column: one file a spreadsheet or pandas reads in one go
    (``paired``: with the paired columns of :func:`format_table`)."""
    views = {subset: decode(table) if paired else None for subset, table in tables.items()}
    first = next((v for v in views.values() if v is not None), None)
    rows = [
        [subset, s, *(_csv(table[s].get(c)) for c in columns),
         *(csv_cells(views[subset], s) if first else [])]
        for subset, table in tables.items()
        for s in stage_order
        if s in table
    ]  # fmt: skip
    return csv_table(["subset", "stage", *columns, *csv_header(first)], rows)


BASELINE_CELL = "—"
"""What the baseline's own row shows in the paired columns."""


def paired_header(view: PairedView | None) -> list[str]:
    """The paired columns' headers: ``Δ<metric> vs <baseline>`` and ``p`` (none without)."""
    return [] if view is None else [view.header, "p"]


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def p_text(value: float | None) -> str:
    """A p-value with three decimals; ``<0.001`` below that; ``-`` when there is none."""
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def paired_cells(view: PairedView | None, stage: str) -> list[str]:
    """``stage``'s Δ and Holm-adjusted p (the baseline: ``—``; no pairs: ``-``)."""
    if view is None:
        return []
    if stage == view.baseline:
        return [BASELINE_CELL, BASELINE_CELL]
    test = view.tests.get(stage)
    return ["-", "-"] if test is None else [_signed(test.delta), p_text(test.p_holm)]


def stage_label(view: PairedView | None, stage: str) -> str:
    """The stage's name, with ``!`` when it is a fusion flagged by the guard."""
    guard = view.guards.get(stage) if view is not None else None
    return f"{stage}!" if guard is not None and guard.worse else stage


def csv_header(view: PairedView | None) -> list[str]:
    return [] if view is None else [view.header, "p", "pairs", "worse_than_input"]


def csv_cells(view: PairedView | None, stage: str) -> list[str]:
    """Unrounded Δ, Holm-adjusted p, pairs and the input a flagged fusion is worse than."""
    if view is None:
        return []
    test = view.tests.get(stage)
    guard = view.guards.get(stage)
    worse = guard.best_input if guard is not None and guard.worse else ""
    if test is None:
        return ["", "", "", worse]
    return [_csv(test.delta), _csv(test.p_holm), str(test.n), worse]


def _short(value: float | None) -> str:
    """``.500`` for 0.5 (the guard's footnote); ``-`` for None."""
    if value is None:
        return "-"
    text = f"{value:.3f}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text


def _short_p(value: float | None) -> str:
    return "<.001" if value is not None and value < 0.001 else _short(value)


def paired_notes(view: PairedView | None, stages: Sequence[str]) -> list[str]:
    """Lines below the table: what ``p`` is, stages paired on fewer queries than the
    table has, and each fusion significantly worse than its best input."""
    if view is None:
        return []
    notes = [
        f"Δ, p: {view.metric} per query paired with {view.baseline} (two-sided randomisation "
        "test; p Holm-adjusted across the table's stages)"
    ]
    fewer = [
        f"{s} {t.n} of {t.queries}"
        for s in stages
        if s != view.baseline and (t := view.tests.get(s)) is not None and t.n < t.queries
    ]
    if fewer:
        notes.append(f"pairs: {', '.join(fewer)} queries (a failed query is left out)")
    for s in stages:
        g = view.guards.get(s)
        if g is None or not g.worse:
            continue
        note = (
            f"! {s} is significantly worse than its best input {g.best_input} ({view.metric} "
            f"{_short(g.fusion_mean)} vs {_short(g.input_mean)}, p={_short_p(g.p_value)}"
        )
        notes.append(note + (f", {g.n} of {g.queries} queries)" if g.n < g.queries else ")"))
    return notes


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
    (``summary``: :meth:`retrieval_bench.harness.answers.dataset.AnswerSection.summary`)."""
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
