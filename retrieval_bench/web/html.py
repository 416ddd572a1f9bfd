"""Small HTML helpers for the web UI (SPEC §6): a page shell, escaped tables and
inline SVG charts. Everything user-supplied goes through :func:`esc`; no
template engine and nothing fetched from outside (the machine may be offline).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence

Cell = str
"""Already-escaped HTML for one table cell."""


def esc(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1:
        return str(int(value))
    return f"{value:.{digits}f}"


def pval(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def link(href: str, text: object) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def table(
    header: Sequence[str], rows: Iterable[Sequence[Cell]], cls: str = "", row_cls: str = ""
) -> str:
    """A table; ``header`` is plain text (escaped here), ``rows`` are escaped cells."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(
        f"<tr{f' class={chr(34)}{row_cls}{chr(34)}' if row_cls else ''}>"
        + "".join(f"<td>{c}</td>" for c in r)
        + "</tr>"
        for r in rows
    )
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def page(title: str, body: str, crumbs: Sequence[tuple[str, str]] = ()) -> str:
    """The page shell: title, navigation, one CSS and one JS file served by the app."""
    nav = " › ".join([link("/", "Runs"), *(link(h, t) for h, t in crumbs)])
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{esc(title)} · rbench</title>"
        "<link rel='stylesheet' href='/static/app.css'></head><body>"
        f"<header><nav>{nav} · {link('/prompts', 'Prompt lab')}</nav></header>"
        f"<main><h1>{esc(title)}</h1>{body}</main>"
        "<script src='/static/app.js'></script></body></html>"
    )


def bar_chart(
    groups: Sequence[tuple[str, Mapping[str, float]]], series: Sequence[str], width: int = 640
) -> str:
    """Horizontal grouped bars as inline SVG: one group per stage, one bar per
    series, all on one axis from 0 to max(1, largest value) — rates fill it as fractions
    and a count such as "lost" is read on the same scale, never stretched to look as
    large as a recall."""
    colors = ["#3b6fb6", "#d9822b", "#4a9c5d", "#a2479b"]
    values_ = [v for _, g in groups for s in series if (v := g.get(s)) is not None]
    common = max([1.0] + [v for v in values_ if not math.isnan(v)])
    top = dict.fromkeys(series, common)
    bar_h, label_w = 14, 120
    group_h = bar_h * len(series) + 10
    height = group_h * len(groups) + 24
    parts = []
    for gi, (name, values) in enumerate(groups):
        y0 = 20 + gi * group_h
        parts.append(f'<text x="0" y="{y0 + bar_h}" class="lbl">{esc(name)}</text>')
        for si, s in enumerate(series):
            v = values.get(s, math.nan)
            v = 0.0 if v is None or math.isnan(v) else v
            w = 0.0 if top[s] <= 0 else (width - label_w - 80) * v / top[s]
            y = y0 + si * bar_h
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                f'fill="{colors[si % len(colors)]}"><title>{esc(s)} = {num(v)}</title></rect>'
                f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 3}" class="val">'
                f"{esc(s)} {num(v)}</text>"
            )
    legend = "".join(
        f'<text x="{label_w + i * 110}" y="12" fill="{colors[i % len(colors)]}" class="lbl">'
        f"■ {esc(s)}</text>"
        for i, s in enumerate(series)
    )
    return (
        f'<svg class="chart" width="{width}" height="{height}" role="img" '
        f'aria-label="funnel">{legend}{"".join(parts)}</svg>'
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
