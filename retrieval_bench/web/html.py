"""Small HTML helpers for the web UI (docs/architecture.md#interfaces): a page shell,
escaped tables and inline SVG charts. Everything user-supplied goes through :func:`esc`; no
template engine and nothing fetched from outside (the machine may be offline).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Cell = str
"""Already-escaped HTML for one table cell."""


def esc(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def num(value: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals, whole numbers too (``1.000`` beside
    ``0.200``, never ``1``), so a column reads and lines up alike."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def metric_cell(metric: str, value: float | None) -> str:
    """A stage's metric as every table of the UI shows it: one format, three
    decimals (scores, rates, the mean ``lost``/``failed`` per query, ``seconds``),
    except LLM call and cache-hit counts, which are whole numbers."""
    return count(value) if metric.startswith("llm_") else num(value)


def rate(value: float | None) -> str:
    """A share in [0, 1] with three decimals (``1.000``, not ``1``), so a column lines up."""
    if value is None or math.isnan(value):
        return "–"
    return f"{value:.3f}"


def count(value: float | None) -> str:
    """A per-query count (``lost``, ``failed``) as an integer where it is one."""
    if value is None or math.isnan(value):
        return "–"
    return str(int(value)) if float(value).is_integer() else num(value)


def pval(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def link(href: str, text: object) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    cls: str = "",
    row_cls: str = "",
    id: str = "",
) -> str:
    """A table; ``header`` is plain text (escaped here), ``rows`` are escaped cells."""
    return table_with_head([f"<th>{esc(h)}</th>" for h in header], rows, cls, row_cls, id)


def table_with_head(
    head: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    cls: str = "",
    row_cls: str = "",
    id: str = "",
) -> str:
    """A table whose header cells are given as ready ``<th>`` HTML (links, attributes)."""
    body = "".join(
        f"<tr{f' class={chr(34)}{row_cls}{chr(34)}' if row_cls else ''}>"
        + "".join(f"<td>{c}</td>" for c in r)
        + "</tr>"
        for r in rows
    )
    ident = f' id="{esc(id)}"' if id else ""
    return (
        f'<table{ident} class="{esc(cls)}"><thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def sort_header(name: str, href: str, direction: str | None) -> str:
    """A ``<th>`` whose link sorts by this column; ``direction`` (``asc``/``desc``) marks
    the column the table is sorted by (``aria-sort``; the stylesheet draws the arrow)."""
    aria = {"asc": "ascending", "desc": "descending"}.get(direction or "")
    attr = f' aria-sort="{aria}"' if aria else ""
    return f'<th{attr}><a class="sort" href="{esc(href)}">{esc(name)}</a></th>'


def page(title: str, body: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    """The page shell: title, navigation, one CSS and one JS file served by the app."""
    nav = " › ".join([link("/", "Runs"), *(link(h, t) for h, t in crumbs)])
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{esc(title)} · rbench</title>"
        "<link rel='stylesheet' href='/static/app.css'></head><body>"
        f"<header><nav>{nav} · {link('/sweeps', 'Sweeps')} · "
        f"{link('/prompts', 'Prompt lab')}</nav></header>"
        f"<main><h1>{esc(title)}</h1>{body}</main>"
        "<script src='/static/app.js'></script></body></html>"
    )


@dataclass(frozen=True)
class FunnelBar:
    """One step of :func:`funnel_chart`: ``share`` (0..1) sets its width."""

    key: str
    label: str
    share: float
    detail: str
    """The numbers shown beside the step (plain text)."""


def funnel_chart(bars: Sequence[FunnelBar], width: int = 760) -> str:
    """A funnel as inline SVG: one trapezoid per step, narrowing from the previous
    step's width (the first from the full width: every gold file) to its own, all on
    one scale, labelled with the step's name and numbers."""
    colors = ["#3b6fb6", "#4a9c5d", "#d9822b", "#a2479b", "#23395d"]
    shape_w, step_h, gap, left = 300, 46, 6, 4
    centre = left + shape_w / 2
    height = len(bars) * (step_h + gap) + 4
    parts = []
    top = 1.0
    for i, bar in enumerate(bars):
        share = 0.0 if math.isnan(bar.share) else min(max(bar.share, 0.0), 1.0)
        y0, y1 = 2 + i * (step_h + gap), 2 + i * (step_h + gap) + step_h
        # a sliver stays visible at 0 so the step can still be seen (and hovered)
        wt, wb = max(top, 0.01) * shape_w / 2, max(share, 0.01) * shape_w / 2
        pts = (
            f"{centre - wt:.1f},{y0} {centre + wt:.1f},{y0} "
            f"{centre + wb:.1f},{y1} {centre - wb:.1f},{y1}"
        )
        parts.append(
            f'<polygon class="step" data-step="{esc(bar.key)}" points="{pts}" '
            f'fill="{colors[i % len(colors)]}"><title>{esc(bar.label)}: {esc(bar.detail)}'
            "</title></polygon>"
            f'<text x="{left + shape_w + 14}" y="{y0 + 18}" class="lbl">{esc(bar.label)}</text>'
            f'<text x="{left + shape_w + 14}" y="{y0 + 35}" class="val">{esc(bar.detail)}</text>'
        )
        top = share
    return (
        f'<svg class="chart funnel" width="{width}" height="{height}" role="img" '
        f'aria-label="funnel">{"".join(parts)}</svg>'
    )


def line_chart(lines: Mapping[str, Sequence[float]], width: int = 480, height: int = 160) -> str:
    """One polyline per name over run index (score in [0, 1])."""
    colors = ["#3b6fb6", "#d9822b", "#4a9c5d", "#a2479b", "#b33", "#777"]
    n = max([len(v) for v in lines.values()] + [1])
    pad = 30

    def xy(i: int, v: float) -> str:
        x = pad + (width - 2 * pad) * (i / max(n - 1, 1))
        y = height - pad - (height - 2 * pad) * (0.0 if math.isnan(v) else v)
        return f"{x:.1f},{y:.1f}"

    parts = [
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        'class="axis"/>',
        f'<text x="2" y="{pad}" class="val">1.0</text>',
        f'<text x="2" y="{height - pad}" class="val">0.0</text>',
    ]
    for i, (name, values) in enumerate(lines.items()):
        c = colors[i % len(colors)]
        pts = " ".join(xy(j, v) for j, v in enumerate(values))
        parts.append(
            f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{pts}">'
            f"<title>{esc(name)}</title></polyline>"
        )
        parts.append(f'<text x="{width - pad + 4}" y="{14 + 14 * i}" fill="{c}" class="lbl">')
        parts.append(f"{esc(name)}</text>")
    return (
        f'<svg class="chart" width="{width + 120}" height="{height}" role="img" '
        f'aria-label="score over runs">{"".join(parts)}</svg>'
    )


def error_page(
    title: str, what: str, todo: Sequence[str], file: str | None = None, detail: str = ""
) -> str:
    """A readable error page: what failed, the file involved, what to do (plain text,
    escaped here; ``todo`` items may quote commands in backticks)."""
    body = [f"<p class='error-what'>{esc(what)}</p>"]
    if file:
        body.append(f"<p>File: <code class='error-file'>{esc(file)}</code></p>")
    if detail:
        body.append(f"<p class='error-detail'>{esc(detail)}</p>")
    items = "".join(f"<li>{_ticks(t)}</li>" for t in todo)
    body.append(f"<h2>What to do</h2><ul class='error-todo'>{items}</ul>")
    return page(title, f"<div class='error'>{''.join(body)}</div>")


def _ticks(text: str) -> str:
    """Escaped text with `backticked` parts as ``<code>``."""
    pieces = text.split("`")
    return "".join(f"<code>{esc(p)}</code>" if i % 2 else esc(p) for i, p in enumerate(pieces))
