"""Prompt-lab pages of the web UI (docs/architecture.md#prompt-evaluation,
docs/architecture.md#interfaces): the use case's editable
ground-truth rows and prompts, the latest run's sorted results table, the run
history with a score-over-runs chart, per-row detail, import/export.

The page's buttons post JSON to the API in :mod:`retrieval_bench.web.app`
(``static/app.js`` does that; nothing here needs a build step).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

from retrieval_bench.prompt_eval.history import history, row_outcomes
from retrieval_bench.prompt_eval.io import ensure_examples, use_case_summaries
from retrieval_bench.prompt_eval.store import PromptStore
from retrieval_bench.prompt_eval.usecase import UseCase
from retrieval_bench.web.html import count, esc, line_chart, link, num, page, pval, table


def cell_text(value: Any) -> str:
    """A ground-truth value as the text shown in an editable cell (CSV convention)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def decode_cell(text: Any) -> Any:
    """Inverse of :func:`cell_text`: JSON for cells starting with ``[``, ``{`` or ``"``."""
    if isinstance(text, str) and text.strip()[:1] in ("[", "{", '"'):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"cell {text[:30]!r} is not valid JSON: {exc.msg}") from exc
    return text


RUN_ALL = "Run all prompts"
"""The label of the button that runs every prompt (the page's text quotes it)."""
AREA_COLS = 48
"""Characters per line of the prompt and row textareas (their width: ``cols``)."""
AREA_MAX_ROWS = 40


def index_page(store: PromptStore) -> str:
    """Every use case with its rows and prompts; shipped examples that are not loaded
    yet are counted from the bundled files and marked so (opening the use case loads
    them)."""
    rows = [
        [link(f"/prompts/{s.name}", s.name), str(s.rows), str(s.prompts), esc(s.baseline or "–"),
         "shipped examples, loaded when you open it" if s.shipped else "stored"]
        for s in use_case_summaries(store)
    ]  # fmt: skip
    header = ["use case", "rows", "prompts", "baseline", "state"]
    return page("Prompt lab", table(header, rows, id="use-cases"))


def area_rows(value: str, minimum: int = 2, cols: int = AREA_COLS) -> int:
    """Rows a textarea needs to show ``value`` whole: its lines, long ones counted as
    the lines they wrap to at ``cols`` characters, plus one to type in (capped)."""
    lines = sum(max(1, math.ceil(len(line) / cols)) for line in value.split("\n"))
    return min(max(minimum, lines + 1), AREA_MAX_ROWS)


def _area(name: str, value: str, attr: str, rows: int = 2, cols: int = AREA_COLS) -> str:
    # the newline after the tag is dropped by HTML parsers, so a value that starts
    # with one keeps it; "autosize" lets static/app.js grow the box while typing
    return (
        f'<textarea class="autosize" {attr}="{esc(name)}" '
        f'rows="{area_rows(value, rows, cols)}" cols="{cols}">\n{esc(value)}</textarea>'
    )


def _rows_table(uc: UseCase, store: PromptStore) -> str:
    header = ["id", *uc.variables, *uc.fields, ""]
    body = []
    for r in [*store.rows(uc.name), None]:
        rid, version = (r.id, r.version) if r else ("", 0)
        cells = [f'<input data-col="id" value="{esc(rid)}" {"readonly" if r else ""}>']
        cells += [_area(v, r.variables.get(v, "") if r else "", "data-var") for v in uc.variables]
        expected = {f: cell_text(r.expected.get(f, "")) if r else "" for f in uc.fields}
        cells += [f'<input data-field="{esc(f)}" value="{esc(v)}">' for f, v in expected.items()]
        label = "Save" if r else "Add row"
        cells.append(f'<button class="save-row">{label}</button> <small>v{version}</small>')
        body.append(
            f'<tr data-version="{version}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
        )
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    return (
        f'<table id="rows" class="edit"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}'
        "</tbody></table>"
    )


def _prompts_table(uc: UseCase, store: PromptStore) -> str:
    baseline = store.baseline(uc.name)
    body = []
    for p in [*store.prompts(uc.name), None]:
        name, version = (p.name, p.version) if p else ("", 0)
        mark = " <b title='baseline'>★</b>" if p and p.name == baseline else ""
        cells = [
            f'<input data-col="name" value="{esc(name)}" {"readonly" if p else ""}>{mark}',
            _area("system", p.system if p else "", "data-col", 3),
            _area("user", p.user if p else "", "data-col", 3),
            f'<input data-col="model" value="{esc(p.model if p else "")}" placeholder="default">',
            _area("parameters", json.dumps(dict(p.parameters)) if p else "{}", "data-col", 1, 24),
            f'<button class="save-prompt">{"Save" if p else "Add prompt"}</button> '
            + (f'<button class="run-one" data-prompt="{esc(name)}">Run this prompt</button>'
               if p else "")
            + f" <small>v{version}</small>",
        ]  # fmt: skip
        body.append(
            f'<tr data-version="{version}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>" for h in ("name", "system", "user", "model", "parameters (JSON)", "")
    )
    return (
        f'<table id="prompts" class="edit"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _results(uc: UseCase, store: PromptStore) -> str:
    entries = history(store, uc.name)
    if not entries:
        return f"<p id='results'>No runs yet: press <b>{RUN_ALL}</b>.</p>"
    last = entries[-1].run_id
    latest = sorted((e for e in entries if e.run_id == last), key=lambda e: e.rank)
    cols = list(dict.fromkeys(c for e in latest for c in e.counts))
    rows = [
        [str(e.rank), link(f"/prompts/{uc.name}/runs/{last}/{e.prompt}", e.prompt),
         f"v{e.prompt_version}", num(e.score)] + [count(e.counts.get(c)) for c in cols]
        + [f"{e.n_failed}/{e.n_rows}", esc(e.verdict), pval(e.p_value)]
        for e in latest
    ]  # fmt: skip
    header = ["#", "prompt", "version", "score", *cols, "failed", "vs baseline", "p"]
    return (
        f"<div id='results'><p>run {esc(last)} at {esc(latest[0].created_at[:19])} "
        f"(best first)</p>{table(header, rows, cls='num')}</div>"
    )


def _history(uc: UseCase, store: PromptStore) -> str:
    entries = history(store, uc.name)
    if not entries:
        return "<p>No history yet.</p>"
    lines: dict[str, list[float]] = defaultdict(list)
    for e in entries:
        lines[e.prompt].append(e.score)
    rows = [
        [esc(e.created_at[:19]), esc(e.run_id), esc(e.prompt), f"v{e.prompt_version}",
         str(e.rank), num(e.score), num(e.change), esc(e.verdict)]
        for e in reversed(entries)
    ]  # fmt: skip
    header = ["when (UTC)", "run", "prompt", "version", "rank", "score", "change", "verdict"]
    return line_chart(lines) + table(header, rows, cls="num")


def lab_page(uc: UseCase, store: PromptStore) -> str:
    ensure_examples(store, uc)
    base = f"/api/prompts/{uc.name}"
    io_links = " · ".join(
        link(f"{base}/export?kind={k}&format={f}", f"{k} as {f.upper()}")
        for k in ("rows", "prompts")
        for f in ("json", "csv")
    )
    body = [
        f'<div id="lab" data-use-case="{esc(uc.name)}"></div>',
        f"<p>{esc(uc.description)} · variables: {esc(', '.join(uc.variables))} · "
        f"ground-truth fields: {esc(', '.join(uc.fields))}</p>",
        '<div id="msg" role="status"></div>',
        f"<h2>Results</h2><p><button id='run-all'>{RUN_ALL}</button> <span id='job'></span></p>",
        _results(uc, store),
        "<h2>Prompts</h2>",
        _prompts_table(uc, store),
        "<h2>Ground truth</h2>",
        _rows_table(uc, store),
        "<h2>History</h2>",
        _history(uc, store),
        "<h2>Import / export</h2>",
        f"<p>Download: {io_links}</p>",
        "<p><select id='import-kind'><option>rows</option><option>prompts</option></select> "
        "<input type='file' id='import-file' accept='.csv,.json,.jsonl'> "
        "<label><input type='checkbox' id='import-replace'> replace (delete items not in the "
        "file)</label> <button id='import'>Import</button></p>",
    ]
    return page(f"Prompt lab: {uc.name}", "".join(body), [(f"/prompts/{uc.name}", uc.name)])


def detail_page(uc: UseCase, store: PromptStore, run_id: str, prompt: str) -> str:
    rows = {r.id: r for r in store.rows(uc.name)}
    out = []
    for o in row_outcomes(store, run_id, prompt):
        row = rows.get(o.row_id)
        question = "; ".join(f"{k}: {v}" for k, v in row.variables.items()) if row else ""
        expected = json.dumps(dict(row.expected), ensure_ascii=False) if row else ""
        got = json.dumps(o.response, ensure_ascii=False) if o.response is not None else ""
        evaluation = json.dumps(o.evaluation) if o.evaluation is not None else ""
        out.append(
            [esc(o.row_id), esc(question), esc(expected), esc(got), esc(evaluation),
             num(o.score), esc(o.error or ""), f"<pre>{esc(o.raw or '')}</pre>"]
        )  # fmt: skip
    header = ["row", "variables", "expected", "response", "evaluation", "score", "error", "raw"]
    crumbs = [(f"/prompts/{uc.name}", uc.name), (f"/prompts/{uc.name}/runs/{run_id}/{prompt}",
                                                  f"{prompt} in {run_id}")]  # fmt: skip
    return page(f"{prompt} in run {run_id}", table(header, out), crumbs)
