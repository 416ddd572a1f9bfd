"""The per-stage tables of a run's page and the headline metric of the runs list
(docs/metrics.md#retrieval-metrics).

The run page shows the columns ``rbench run`` prints — P/R/F1/Acc at ``table_k``,
MRR, nDCG, F1 at each token budget, ``lost``, ``seconds`` (and the config's own
``table_columns``) — plus ``failed``, with the paired columns of
:mod:`retrieval_bench.harness.compare.paired`, the span-level table when the run
scored gold line spans, and the module- and function-level tables when it scored
gold functions (the ones ``rbench run`` and ``rbench show`` print:
:mod:`retrieval_bench.harness.run.level_tables`). Every metric is formatted by
:func:`retrieval_bench.web.html.metric_cell`. The runs list shows each run's
Acc@k (the CLI's headline and the sweep's objective) of its best stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.harness.compare.paired import decode
from retrieval_bench.harness.run.level_tables import level_scope, level_views, unmapped_note
from retrieval_bench.harness.run.report import (
    paired_cells,
    paired_header,
    paired_notes,
    span_columns,
    stage_columns,
    stage_label,
)
from retrieval_bench.store.stored_config import StoredConfig
from retrieval_bench.web.html import esc, metric_cell, table

__all__ = ["headline", "stage_metric_columns", "stage_tables"]

Table = Mapping[str, Mapping[str, float]]


def stage_metric_columns(config: StoredConfig | Mapping[str, Any], k: int) -> list[str]:
    """The CLI's columns at ``k`` and the run's budgets, the config's ``table_columns``
    before ``lost``, and ``failed`` after it."""
    stored = StoredConfig.of(config)
    cols = stage_columns(k, stored.budgets)
    extra = [c for c in stored.table_columns if c not in cols]
    at = cols.index("lost")
    return [*cols[:at], *extra, "lost", "failed", *cols[at + 1 :]]


def stage_tables(
    config: StoredConfig | Mapping[str, Any], tbl: Table, stages: Sequence[str], k: int
) -> str:
    """The per-stage table (id ``stages``) with its notes, then the span-level table
    (id ``spans``) when some stage has span metrics, and the module- and function-level
    tables (ids ``module-level``, ``function-level``) when some stage has those."""
    stored = StoredConfig.of(config)
    metrics = stage_metric_columns(stored, k)
    view = decode({s: tbl[s] for s in stages})  # the paired columns, when stored
    rows = [
        [esc(stage_label(view, s))] + [metric_cell(m, tbl[s].get(m)) for m in metrics]
        + [esc(c) for c in paired_cells(view, s)]
        for s in stages
    ]  # fmt: skip
    header = ["stage", *metrics, *paired_header(view)]
    notes = "".join(f"<p class='hint'>{esc(n)}</p>" for n in paired_notes(view, list(stages)))
    out = ["<h2>Per-stage metrics</h2>", table(header, rows, cls="num", id="stages"), notes]
    spans = span_columns(k)
    with_spans = [s for s in stages if any(c in tbl[s] for c in spans)]
    if with_spans:
        span_rows = [[esc(s)] + [metric_cell(c, tbl[s].get(c)) for c in spans] for s in with_spans]
        out += [
            "<h2>Span-level metrics</h2>",
            "<p class='hint'>Queries with gold line spans only: lines and chunks in the "
            f"top {k} (as <code>rbench run</code> prints them).</p>",
            table(["stage", *spans], span_rows, cls="num", id="spans"),
        ]
    return "".join(out) + _level_tables(stored, tbl, stages, k)


def _level_tables(config: StoredConfig, tbl: Table, stages: Sequence[str], k: int) -> str:
    """The module- and function-level tables of the stages that have those measures
    (:func:`level_views`); empty for a run without gold functions."""
    ks, levels = config.ks, config.levels  # the defaults for a run stored before the keys
    shown = {s: tbl[s] for s in stages}
    note = unmapped_note(shown)
    out = []
    for level, cols in level_views(shown, ks, k, levels).items():
        rows = [[esc(s)] + [metric_cell(c, tbl[s].get(c)) for c in cols]
                for s in stages if any(c in tbl[s] for c in cols)]  # fmt: skip
        out += [
            f"<h2>{level.capitalize()}-level metrics</h2>",
            f"<p class='hint'>{esc(level_scope(shown, config.conventions))} only: each "
            f"stage's {level}s "
            f"ranked by their best chunk; Acc at every cut-off, R and nDCG at {k}, MRR (as "
            "<code>rbench run</code> prints them).</p>",
            table(["stage", *cols], rows, cls="num", id=f"{level}-level"),
        ]
        if note:
            out.append(f"<p class='warn'>{esc(note)}</p>")
    return "".join(out)


def headline(tbl: Table, k: int, skip: Sequence[str] = ()) -> str:
    """``0.800 (rrf, k=5)``: the best Acc@k over the stages (the first on a tie); ``–``
    when no stage has it (an eval run, a run with no results yet)."""
    metric = f"Acc@{k}"
    scored = [(s, row[metric]) for s, row in tbl.items() if s not in skip and metric in row]
    if not scored:
        return "–"
    stage, value = max(scored, key=lambda sv: sv[1])  # max keeps the first of equals
    return f"{metric_cell(metric, value)} ({esc(stage)}, k={k})"
