"""Benchmark pages of the web UI (SPEC §6): runs list, one run's per-stage table
and funnel, run-vs-run comparison with significance, per-query drill-down.

Data come from the results database (:class:`ResultsDB`), the run's
``results/<run>/queries.jsonl`` and :func:`compare_runs`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval_bench.store.db import ResultsDB, UnknownRunError
from retrieval_bench.web.html import bar_chart, esc, link, num, page, pval, table
from retrieval_bench.workspace import Workspace

COMPARE_RESAMPLES = 2000
"""Resamples for the web comparison (fewer than the CLI's, for a quick page)."""


def _db(ws: Workspace) -> ResultsDB:
    return ResultsDB(ws.db_path)


def runs_page(ws: Workspace) -> str:
    runs = _db(ws).list_runs() if ws.db_path.exists() else []
    if not runs:
        body = "<p>No runs stored yet. Run a benchmark: <code>rbench run CONFIG.yaml</code></p>"
        return page("Runs", body)
    rows = [
        [
            link(f"/runs/{r.id}", r.id),
            esc(r.name),
            f'<span class="status {esc(r.status)}">{esc(r.status)}</span>',
            esc(r.created_at[:19].replace("T", " ")),
            link(f"/compare?base={older.id}&cand={r.id}", f"compare with {older.id}")
            if older
            else "",
        ]
        for r, older in zip(runs, [*runs[1:], None], strict=True)
    ]
    form = (
        "<form class='compare' action='/compare'>Compare base <input name='base' "
        "placeholder='RUN' required> with candidate <input name='cand' "
        "placeholder='RUN or RUN:STAGE' required> <button>Compare</button></form>"
    )
    return page("Runs", table(["run", "name", "status", "created (UTC)", ""], rows) + form)


def _k(config: dict[str, Any]) -> int:
    return int(config.get("table_k") or 5)


def _queries(ws: Workspace, run_id: str) -> list[dict[str, Any]]:
    path = Path(ws.results_dir) / run_id / "queries.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def run_page(ws: Workspace, run_id: str) -> str:
    db = _db(ws)
    run = db.get_run(run_id)
    k = _k(run.config)
    tbl = db.stage_table(run_id)
    metrics = [f"P@{k}", f"R@{k}", f"F1@{k}", "MRR", f"nDCG@{k}", "lost", "failed"]
    retrieval = {s: v for s, v in tbl.items() if s != "answer"}
    rows = [[esc(s)] + [num(v.get(m)) for m in metrics] for s, v in retrieval.items()]
    body = [
        f"<p>name <b>{esc(run.name)}</b> · status {esc(run.status)} · created "
        f"{esc(run.created_at[:19])} · k = {k}</p>",
        "<h2>Per-stage metrics</h2>",
        table(["stage", *metrics], rows, cls="num"),
        "<h2>Funnel</h2>",
        bar_chart([(s, v) for s, v in retrieval.items()], [f"R@{k}", "lost"]),
    ]
    if "answer" in tbl:
        ans = tbl["answer"]
        body += ["<h2>Answers</h2>", table(list(ans), [[num(v) for v in ans.values()]], "num")]
    queries = _queries(ws, run_id)
    if queries:
        qrows = []
        for q in queries:
            lost = sum(len(s.get("lost") or []) for s in q["stages"].values())
            qrows.append(
                [
                    link(f"/runs/{run_id}/queries/{q['query_id']}", q["query_id"]),
                    esc(q["query"]),
                    str(lost),
                ]
            )
        body += ["<h2>Queries</h2>", table(["query", "question", "gold files lost"], qrows)]
    crumbs = [(f"/runs/{run_id}", run_id)]
    return page(f"Run {run_id}", "".join(body), crumbs)


def query_page(ws: Workspace, run_id: str, query_id: str) -> str | None:
    """The drill-down; None when the run has no such query."""
    _db(ws).get_run(run_id)
    q = next((x for x in _queries(ws, run_id) if x["query_id"] == query_id), None)
    if q is None:
        return None
    gold = set(q["gold_files"])
    body = [
        f"<p class='question'>{esc(q['query'])}</p>",
        "<h2>Gold files</h2><ul>" + "".join(f"<li>{esc(g)}</li>" for g in q["gold_files"]),
        "</ul>",
    ]
    if q.get("missing_gold"):
        body.append(f"<p class='warn'>gold files not in the snapshot: {esc(q['missing_gold'])}</p>")
    rows = []
    for stage, info in q["stages"].items():
        files = "".join(
            f"<li class='{'gold' if f in gold else ''}'>{esc(f)}</li>" for f in info["files"]
        )
        lost = "".join(f"<li class='lost'>{esc(f)}</li>" for f in info.get("lost") or [])
        failed = f"<p class='warn'>failed: {esc(info['failed'])}</p>" if info.get("failed") else ""
        rows.append([esc(stage), f"<ol>{files}</ol>{failed}", f"<ul>{lost}</ul>" if lost else "–"])
    body += ["<h2>Stages</h2>", table(["stage", "top files (gold marked)", "gold lost here"], rows)]
    crumbs = [(f"/runs/{run_id}", run_id), (f"/runs/{run_id}/queries/{query_id}", query_id)]
    return page(f"Query {query_id}", "".join(body), crumbs)


def _mark(significant: bool, direction: str) -> str:
    if not significant:
        return "<span class='same'>n.s.</span>"
    return (
        "<span class='better'>▲ better</span>"
        if direction == "better"
        else ("<span class='worse'>▼ worse</span>")
    )


def compare_page(ws: Workspace, base: str, cand: str) -> str:
    from retrieval_bench.harness.compare import compare_runs

    db = _db(ws)
    db.get_run(base.split(":", 1)[0])  # both sides may be RUN or RUN:STAGE
    db.get_run(cand.split(":", 1)[0])
    comp = compare_runs(
        db, [base, cand], n_resamples=COMPARE_RESAMPLES,
        results_dir=Path(ws.results_dir),
    )  # fmt: skip
    rows = [
        [
            esc(r.stage),
            esc(r.metric),
            num(r.baseline_mean),
            num(r.candidate_mean),
            ("+" if r.delta > 0 else "") + num(r.delta),
            f"[{num(r.ci_low)}, {num(r.ci_high)}]",
            pval(r.p_value),
            pval(r.p_holm),
            _mark(r.significant, r.direction),
            str(r.n_pairs),
        ]  # fmt: skip
        for r in comp.rows
    ]
    header = ["stage", "metric", "base", "cand", "Δ", f"{comp.confidence:.0%} CI", "p", "Holm p"]
    base_run = base.split(":", 1)[0]
    body = [
        f"<p>base {link(f'/runs/{base_run}', base)} vs candidate {esc(cand)}"
        f" · test {esc(comp.test)} · α = {comp.alpha} · {comp.n_resamples} resamples"
        f" · Holm family: {esc(comp.holm_family)}</p>",
        table([*header, "significance", "pairs"], rows, cls="num"),
    ]
    body += [f"<p class='warn'>{esc(w)}</p>" for w in comp.warnings]
    return page(f"Compare {base} vs {cand}", "".join(body))


def not_found_page(message: str) -> str:
    return page("Not found", f"<p class='warn'>{esc(message)}</p>")


__all__ = ["UnknownRunError", "compare_page", "not_found_page", "query_page", "run_page"]
