"""Sweep pages of the web UI (docs/sweeps.md#storage): ``/sweeps`` lists the stored
sweeps; ``/sweeps/{id}`` shows one: the ranked table of the selection split (with
the Pareto front marked), the chosen cell against the base config on the report
split, the work shared between cells, and a quality-versus-cost chart (inline SVG).

Data come from :mod:`retrieval_bench.store.sweeps`; every cell links to the run that
holds its per-stage and per-query results (the ordinary run pages). The Pareto front
is :func:`pareto_front`, a pure function over (cost, quality) points.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from retrieval_bench.store.db import UnknownRunError
from retrieval_bench.store.sweeps import SweepCellRecord, SweepRecord, get_sweep, list_sweeps
from retrieval_bench.sweep.ranking import cost_seconds
from retrieval_bench.sweep.report import best_mean
from retrieval_bench.web.html import esc, link, num, page, pval, rate, table
from retrieval_bench.web.rundata import PageNotFoundError, open_db, run_href
from retrieval_bench.workspace import Workspace

__all__ = ["ChartPoint", "load_sweep", "pareto_cells", "pareto_front", "quality_cost_chart",
           "selection_cells", "sweep_href", "sweep_page", "sweeps_page"]  # fmt: skip

BASE_CELL = -1
"""The cell number of the base config on the report split."""


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """The indices of the (finite) ``(cost, quality)`` points on the Pareto front,
    cheapest first.

    A point is off the front when another point is both cheaper-or-equal and
    better-or-equal, and strictly one of the two. Equal points do not dominate each
    other, so all of them stay on the front (or all leave it, together)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1], i))
    front: list[int] = []
    best = -math.inf  # the best quality among strictly cheaper points
    for _, same_cost in itertools.groupby(order, key=lambda i: points[i][0]):
        group = list(same_cost)
        top = points[group[0]][1]  # the group is sorted best first
        if top > best:
            front += [i for i in group if points[i][1] == top]
            best = top
    return front


def sweep_href(sweep_id: str) -> str:
    """The address of a sweep's page."""
    return f"/sweeps/{quote(sweep_id, safe='')}"


def load_sweep(ws: Workspace, sweep_id: str) -> SweepRecord:
    """The stored sweep ``sweep_id``; :class:`PageNotFoundError` when there is none."""
    missing = f"no sweep {sweep_id!r}; list them on /sweeps or with `rbench sweeps`"
    if not ws.db_path.exists():
        raise PageNotFoundError(missing)
    with open_db(ws) as db:
        try:
            return get_sweep(db, sweep_id)
        except UnknownRunError as exc:
            raise PageNotFoundError(missing) from exc


def selection_cells(sweep: SweepRecord) -> list[SweepCellRecord]:
    """The cells of the selection split in ranked order, failed cells last."""
    cells = [c for c in sweep.cells if c.split.startswith("select")]
    return sorted(cells, key=lambda c: (c.row.get("rank") is None, c.row.get("rank") or 0, c.cell))


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scored(cell: SweepCellRecord) -> bool:
    return cell.status == "done" and _is_num(cell.row.get("seconds")) and _is_num(
        cell.row.get("mean"))  # fmt: skip


def pareto_cells(cells: Sequence[SweepCellRecord]) -> list[int]:
    """The numbers of the scored cells on the front of cost (seconds) against the
    objective's mean, cheapest first; seconds rounded as the ranking rounds them."""
    scored = [c for c in cells if _scored(c)]
    front = pareto_front([(cost_seconds(c.row["seconds"]), float(c.row["mean"])) for c in scored])
    return [scored[i].cell for i in front]


def _split_name(sweep: SweepRecord, phase: str, key: str) -> str:
    for c in sweep.cells:
        if c.split.startswith(f"{phase}:"):
            return c.split.split(":", 1)[1]
    return str(sweep.sweep.get(key) or "all")


def _status(status: str) -> str:
    return f'<span class="status {esc(status)}">{esc(status)}</span>'


def _when(iso: str) -> str:
    return esc(iso[:19].replace("T", " "))


def _seconds(value: Any) -> str:
    return f"{float(value):.2f}" if _is_num(value) else "–"


def _int(value: Any) -> str:
    return str(int(value)) if _is_num(value) else "–"


def _ci(row: dict[str, Any]) -> str:
    return f"[{rate(row.get('ci_low'))}, {rate(row.get('ci_high'))}]"


def _delta(value: Any) -> str:
    return ("+" if value > 0 else "") + num(value) if _is_num(value) else "–"


def _run_link(cell: SweepCellRecord) -> str:
    return link(run_href(cell.run_id), cell.run_id) if cell.run_id else "–"


def sweeps_page(ws: Workspace) -> str:
    sweeps: list[SweepRecord] = []
    if ws.db_path.exists():
        with open_db(ws) as db:
            sweeps = list_sweeps(db)
    if not sweeps:
        body = (
            "<p>No sweeps stored yet. Run one: <code>rbench sweep CONFIG.yaml</code> "
            "(a benchmark config with a <code>sweep:</code> section).</p>"
        )
        return page("Sweeps", body)
    rows = []
    for s in sweeps:
        summ = s.summary
        rows.append([
            link(sweep_href(s.id), s.id), esc(s.name), _status(s.status),
            _when(s.created_at), _int(summ.get("cells")),
            esc(summ.get("objective") or s.sweep.get("objective") or "–"),
            esc(summ.get("chosen_label") or "–"), _seconds(summ.get("seconds")),
        ])  # fmt: skip
    header = ["sweep", "name", "status", "created (UTC)", "cells", "objective", "chosen",
              "seconds"]  # fmt: skip
    note = "<p class='hint'>Each cell of a sweep is also a run (see the Runs page).</p>"
    return page("Sweeps", table(header, rows, id="sweeps") + note)


def _banner(sweep: SweepRecord) -> str:
    what = {
        "running": "is still running: its cells are stored when every cell has been "
        "scored; reload this page when it has finished",
        "failed": "failed; fix the cause and run <code>rbench sweep CONFIG --resume</code> "
        "to continue it",
        "interrupted": "was interrupted; continue it with "
        "<code>rbench sweep CONFIG --resume</code>",
    }.get(sweep.status)
    parts = [f"This sweep {what}." if what else ""]
    if sweep.error:
        parts.append(f"Reason: <b class='reason'>{esc(sweep.error)}</b>.")
    text = " ".join(p for p in parts if p)
    return f"<p class='banner status-{esc(sweep.status)}'>{text}</p>" if text else ""


def _rows_table(head: Sequence[str], rows: Sequence[str], id: str) -> str:
    """A table of ready ``<tr>`` rows (a failed cell's reason spans columns)."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    return (
        f'<table id="{esc(id)}" class="num"><thead><tr>{th}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _tr(cells: Sequence[str], cls: Sequence[str], cell: int) -> str:
    attr = f' class="{" ".join(cls)}"' if cls else ""
    return f'<tr{attr} data-cell="{cell}">' + "".join(cells) + "</tr>"


def _selection_table(cells: Sequence[SweepCellRecord], objective: str, front: set[int],
                     chosen: Any) -> str:  # fmt: skip
    head = ["rank", "cell", objective, "95% CI", "Δ best", "p (Holm)", "n", "seconds",
            "LLM calls", "tokens", "Pareto", "setting", "run"]  # fmt: skip
    best = best_mean([{**c.row, "status": c.status} for c in cells])  # "best": every tie
    rows = []
    for c in cells:
        r = c.row
        if c.status != "done":
            reason = f"failed: {c.error or 'unknown reason'}"
            tds = ["<td>–</td>", f"<td>{c.cell}</td>",
                   f"<td colspan='9' class='reason'>{esc(reason)}</td>",
                   f"<td>{esc(c.label)}</td>", f"<td>{_run_link(c)}</td>"]  # fmt: skip
            rows.append(_tr(tds, ["failed"], c.cell))
            continue
        on_front = c.cell in front
        values = [
            esc(r.get("rank") or "–"), str(c.cell), rate(r.get("mean")), _ci(r),
            "best" if r.get("mean") == best else _delta(r.get("delta")), pval(r.get("p_holm")),
            _int(r.get("n")), _seconds(r.get("seconds")), _int(r.get("llm_calls", 0)),
            _int(r.get("llm_tokens", 0)), "◆ front" if on_front else "", esc(c.label),
            _run_link(c),
        ]  # fmt: skip
        cls = (["chosen"] if c.cell == chosen else []) + (["pareto"] if on_front else [])
        rows.append(_tr([f"<td>{v}</td>" for v in values], cls, c.cell))
    return _rows_table(head, rows, "cells")


def _report_table(cells: Sequence[SweepCellRecord], objective: str) -> str:
    ordered = sorted(cells, key=lambda c: c.cell == BASE_CELL)
    head = ["", "cell", objective, "95% CI", "Δ vs chosen", "p", "n", "seconds",
            "LLM calls", "tokens", "setting", "run"]  # fmt: skip
    rows = []
    for c in ordered:
        r = c.row
        role = "base config" if c.cell == BASE_CELL else "chosen"
        if c.status != "done":
            values = [role, str(c.cell), "failed", esc(c.error or ""), *["–"] * 6]
        else:
            values = [role, str(c.cell), rate(r.get("mean")), _ci(r), _delta(r.get("delta")),
                      pval(r.get("p_value")), _int(r.get("n")), _seconds(r.get("seconds")),
                      _int(r.get("llm_calls", 0)), _int(r.get("llm_tokens", 0))]  # fmt: skip
        values += [esc(c.label), _run_link(c)]
        rows.append(_tr([f"<td>{v}</td>" for v in values], [role.split()[0]], c.cell))
    return _rows_table(head, rows, "report")


def _work_table(summary: dict[str, Any]) -> str:
    work = summary.get("work") or {}
    rows = [[esc(what), _int(work.get(f"{key}_run")), _int(work.get(f"{key}_reused"))]
            for what, key in (("chunkings", "chunkings"), ("stages", "stages"))]  # fmt: skip
    executor = summary.get("executor") or {}
    how = ""
    if executor:
        how = (f" on the {esc(executor.get('name', '?'))} executor "
               f"({_int(executor.get('workers'))} worker(s))")  # fmt: skip
    note = (
        f"<p class='hint'>Cells that share a chunking or a stage with the same inputs run "
        f"it once; the others reuse it. The sweep took {_seconds(summary.get('seconds'))} s"
        f"{how}; a cell's seconds are what it would cost alone.</p>"
    )
    return table(["work", "run", "reused"], rows, cls="num", id="work") + note


def sweep_page(ws: Workspace, sweep_id: str) -> str:
    """One sweep: summary, ranked table, chart, report split, work reused."""
    sweep = load_sweep(ws, sweep_id)
    summ, spec = sweep.summary, sweep.sweep
    objective = str(summ.get("objective") or spec.get("objective") or "objective")
    select_on = _split_name(sweep, "select", "select_on")
    report_on = _split_name(sweep, "report", "report_on")
    cells = selection_cells(sweep)
    front = pareto_cells(cells)
    stage = next((c.row.get("stage") for c in cells if c.row.get("stage")), None)
    crumbs = [(sweep_href(sweep.id), sweep.id)]
    finished = f" · finished {_when(sweep.finished_at)}" if sweep.finished_at else ""
    head = (
        f"<p>name <b>{esc(sweep.name)}</b> · status {_status(sweep.status)} · created "
        f"{_when(sweep.created_at)}{finished} · {_int(summ.get('cells', len(cells)))} "
        f"cells · objective <b>{esc(objective)}</b> of each cell's last stage"
        f"{f' ({esc(stage)})' if stage else ''}</p>"
    )
    body = [head, _banner(sweep)]
    if not cells:
        body.append("<p><b>No cells stored yet</b>: a sweep stores its cells when it finishes.</p>")
        return page(f"Sweep {sweep.id}", "".join(body), crumbs)
    body += [
        f"<p class='split-note'><b>Chosen on {esc(select_on)}, scored on {esc(report_on)}</b>: "
        f"every cell was ranked on the {esc(select_on)} split; only the chosen cell and the "
        f"base config were then scored on {esc(report_on)}, so the chosen setting is never "
        "scored on the questions that chose it.</p>",
        f"<h2>Cells ranked on {esc(select_on)}</h2>",
        "<p class='hint'>Δ best, p: paired randomisation test against the best (the best mean's "
        "lowest cell number) on the questions both answered, Holm-adjusted. Pareto: no other "
        "cell is both as cheap (seconds) and as good, and strictly one of the two.</p>",
        _selection_table(cells, objective, set(front), summ.get("chosen")),
        "<h2>Quality versus cost</h2>",
        quality_cost_chart(_chart_points(cells, summ.get("chosen")), front, objective),
        f"<h2>Report on {esc(report_on)}</h2>",
    ]
    report = [c for c in sweep.cells if c.split.startswith("report")]
    if report:
        body.append(_report_table(report, objective))
    else:
        body.append("<p>Nothing was scored on the report split (no cell was chosen).</p>")
    body += ["<h2>Work shared between cells</h2>", _work_table(summ)]
    return page(f"Sweep {sweep.id}", "".join(body), crumbs)


@dataclass(frozen=True)
class ChartPoint:
    """One scored cell in :func:`quality_cost_chart`."""

    cell: int
    label: str
    cost: float
    mean: float
    low: float
    high: float
    chosen: bool = False


def _chart_points(cells: Sequence[SweepCellRecord], chosen: Any) -> list[ChartPoint]:
    out = []
    for c in cells:
        if not _scored(c):
            continue
        r = c.row
        mean = float(r["mean"])
        low, high = (float(r[k]) if _is_num(r.get(k)) else mean for k in ("ci_low", "ci_high"))
        out.append(ChartPoint(c.cell, c.label, float(r["seconds"]), mean, low, high,
                              c.cell == chosen))  # fmt: skip
    return out


def _span(lo: float, hi: float) -> tuple[float, float]:
    if hi - lo < 1e-12:
        pad = max(abs(hi) * 0.05, 0.05)
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def quality_cost_chart(
    points: Sequence[ChartPoint], front: Sequence[int], objective: str,
    width: int = 640, height: int = 320,
) -> str:  # fmt: skip
    """Objective (mean, 95% CI whiskers) against seconds, one point per scored cell
    (its ``<title>`` names the cell), and the Pareto ``front`` (cell numbers, cheapest
    first) as a connected line."""
    if not points:
        return "<p>No cell was scored, so there is nothing to chart.</p>"
    left, right, top, bottom = 56, 16, 12, 40
    x0, x1 = _span(0.0, max(p.cost for p in points))
    x0 = 0.0 if min(p.cost for p in points) >= 0 else x0
    lo, hi = min(p.low for p in points), max(p.high for p in points)
    y0, y1 = _span(lo, hi)
    y0, y1 = (max(y0, 0.0) if lo >= 0 else y0), (min(y1, 1.0) if hi <= 1 else y1)  # a share

    def x(v: float) -> float:
        return left + (width - left - right) * (v - x0) / (x1 - x0)

    def y(v: float) -> float:
        return height - bottom - (height - top - bottom) * (v - y0) / (y1 - y0)

    base = height - bottom
    parts = [
        f'<line class="axis" x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" '
        'stroke="#999"/>',
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#999"/>',
        f'<text class="lbl" x="{(left + width - right) / 2:.0f}" y="{height - 6}" '
        'text-anchor="middle">seconds (cost of the cell)</text>',
        f'<text class="lbl" x="12" y="{(top + base) / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {(top + base) / 2:.0f})">{esc(objective)}</text>',
    ]
    for i in range(3):
        xv, yv = x0 + (x1 - x0) * i / 2, y0 + (y1 - y0) * i / 2
        parts.append(f'<text class="val" x="{x(xv):.1f}" y="{base + 14}" '
                     f'text-anchor="middle">{xv:.2f}</text>')  # fmt: skip
        parts.append(f'<text class="val" x="{left - 4}" y="{y(yv) + 4:.1f}" '
                     f'text-anchor="end">{yv:.3f}</text>')  # fmt: skip
    by_cell = {p.cell: p for p in points}
    line = " ".join(f"{x(by_cell[c].cost):.1f},{y(by_cell[c].mean):.1f}"
                    for c in front if c in by_cell)  # fmt: skip
    names = ", ".join(f"cell {c}" for c in front)
    parts.append(
        f'<polyline class="front" fill="none" stroke="#d9822b" stroke-width="2" '
        f'points="{line}"><title>Pareto front: {esc(names)}</title></polyline>'
    )
    on_front = set(front)
    for p in points:
        px, py = x(p.cost), y(p.mean)
        fill = "#d9822b" if p.cell in on_front else "#3b6fb6"
        ring = ' stroke="#222" stroke-width="2"' if p.chosen else ""
        tip = (
            f"cell {p.cell}{' (chosen)' if p.chosen else ''}"
            f"{' · Pareto front' if p.cell in on_front else ''}: {p.label} — "
            f"{objective} {p.mean:.3f} [{p.low:.3f}, {p.high:.3f}], {p.cost:.2f} s"
        )
        parts.append(
            f'<g class="cell" data-cell="{p.cell}">'
            f'<path class="ci" d="M{px:.1f} {y(p.low):.1f}V{y(p.high):.1f}M{px - 4:.1f} '
            f'{y(p.low):.1f}h8M{px - 4:.1f} {y(p.high):.1f}h8" stroke="{fill}" fill="none"/>'
            f'<circle class="point{" front" if p.cell in on_front else ""}" data-cell="{p.cell}" '
            f'cx="{px:.1f}" cy="{py:.1f}" r="5" fill="{fill}"{ring}><title>{esc(tip)}</title>'
            "</circle></g>"
        )
    legend = (
        "<p class='hint'>One point per scored cell with its 95% CI; hover for the cell. "
        "Orange points joined by the line: the Pareto front; blue: a cell another cell "
        "beats on both cost and quality; ringed: the chosen cell.</p>"
    )
    return (
        f'<svg class="chart sweep-chart" width="{width}" height="{height}" role="img" '
        f'aria-label="quality versus cost">{"".join(parts)}</svg>{legend}'
    )
