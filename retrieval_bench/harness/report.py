"""Aligned per-stage tables for the terminal (SPEC §6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


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
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest])

    out = [title] if title else []
    out += [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)
