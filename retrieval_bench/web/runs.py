"""Benchmark pages of the web UI: the runs list, one run's page (status, per-stage
table, funnel, sortable per-query table), run-vs-run comparison with
significance, per-query drill-down.

Data come from the results database (:class:`ResultsDB`), the run's folder
``results/<run>/`` (``queries.jsonl`` and the TREC run files) and
:func:`compare_runs`. A damaged file raises an error that
:mod:`retrieval_bench.web.app` renders as a page naming it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from retrieval_bench.config import ANSWER_STAGE
from retrieval_bench.errors import ConfigError, RBenchError
from retrieval_bench.store.db import ResultsDB, RunRecord, UnknownRunError
from retrieval_bench.web import funnel
from retrieval_bench.web.html import (
    FunnelBar,
    count,
    esc,
    funnel_chart,
    link,
    num,
    page,
    pval,
    rate,
    sort_header,
    table,
    table_with_head,
)
from retrieval_bench.workspace import Workspace

__all__ = [
    "PageNotFoundError",
    "ResultsFileError",
    "UnknownRunError",
    "cell",
    "compare_page",
    "dataset_key",
    "previous_comparable",
    "query_page",
    "run_page",
    "runs_page",
]


class PageNotFoundError(RBenchError):
    """The page asks for something the run does not have (a stage, a query)."""


class ResultsFileError(RBenchError):
    """A file of a run's results folder cannot be read; the message names file and line."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


@contextmanager
def _open_db(ws: Workspace) -> Iterator[ResultsDB]:
    db = ResultsDB(ws.db_path)
    try:
        yield db
    finally:
        db.close()


def _run_dir(ws: Workspace, run_id: str) -> Path:
    return Path(ws.results_dir) / run_id


def _href(path: str, **params: str) -> str:
    query = urlencode({k: v for k, v in params.items() if v})
    return f"{path}?{query}" if query else path


def _run_href(run_id: str) -> str:
    return f"/runs/{quote(run_id, safe='')}"


# ------------------------------------------------------------------ runs list


def dataset_key(run: RunRecord) -> str | None:
    """What a run was measured on: its dataset fingerprint, else its dataset names
    (None when neither is known). Only runs with equal keys are comparable."""
    if run.dataset_fingerprint:
        return f"fingerprint:{run.dataset_fingerprint}"
    names = _dataset_names(run)
    return f"names:{','.join(sorted(names))}" if names else None


def _dataset_names(run: RunRecord) -> list[str]:
    datasets = run.config.get("datasets")
    if not isinstance(datasets, list):
        return []
    return [str(d["name"]) for d in datasets if isinstance(d, dict) and d.get("name")]


def previous_comparable(runs: Sequence[RunRecord]) -> dict[str, RunRecord]:
    """Run id → the closest older ``done`` run on the same datasets (``runs`` newest
    first, as :meth:`ResultsDB.list_runs` gives them). Only ``done`` runs get one:
    a run that did not finish has no per-query metrics to compare."""
    out: dict[str, RunRecord] = {}
    for i, run in enumerate(runs):
        key = dataset_key(run)
        if key is None or run.status != "done":
            continue
        older = next((o for o in runs[i + 1 :] if o.status == "done" and dataset_key(o) == key),
                     None)  # fmt: skip
        if older is not None:
            out[run.id] = older
    return out


def _status(run: RunRecord) -> str:
    return f'<span class="status {esc(run.status)}">{esc(run.status)}</span>'


def runs_page(ws: Workspace) -> str:
    runs: list[RunRecord] = []
    if ws.db_path.exists():
        with _open_db(ws) as db:
            runs = db.list_runs()
    if not runs:
        body = "<p>No runs stored yet. Run a benchmark: <code>rbench run CONFIG.yaml</code></p>"
        return page("Runs", body)
    previous = previous_comparable(runs)
    rows = []
    for r in runs:
        older = previous.get(r.id)
        offer = (
            link(_href("/compare", base=older.id, cand=r.id), f"compare with {older.id}")
            if older
            else ""
        )
        rows.append([
            link(_run_href(r.id), r.id), esc(r.name), esc(", ".join(_dataset_names(r))),
            _status(r), esc(r.created_at[:19].replace("T", " ")), offer,
        ])  # fmt: skip
    form = (
        "<form class='compare' action='/compare'>Compare base <input name='base' "
        "placeholder='RUN' required> with candidate <input name='cand' "
        "placeholder='RUN or RUN:STAGE' required> <button>Compare</button></form>"
    )
    note = (
        "<p class='hint'>“compare with” pairs a finished run with the previous finished "
        "run on the same datasets (same dataset fingerprint).</p>"
    )
    header = ["run", "name", "datasets", "status", "created (UTC)", ""]
    return page("Runs", table(header, rows, id="runs") + note + form)


# ------------------------------------------------------------------ run page


def _k(config: dict[str, Any]) -> int:
    return int(config.get("table_k") or 5)


def _queries(ws: Workspace, run_id: str) -> list[dict[str, Any]]:
    """The run's ``queries.jsonl`` (empty when absent); :class:`ResultsFileError` on a
    line that is not a JSON object with a ``query_id``."""
    path = _run_dir(ws, run_id) / "queries.jsonl"
    if not path.exists():
        return []
    out = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ResultsFileError(
                    f"{path}:{lineno}: not valid JSON ({exc.msg})", path
                ) from exc
            if not isinstance(rec, dict) or "query_id" not in rec:
                raise ResultsFileError(f"{path}:{lineno}: not a query record", path)
            out.append(rec)
    return out


def _status_banner(run: RunRecord, has_results: bool) -> str:
    """What state the run is in, why it stopped (when stored), and whether it has results."""
    status = run.status
    what = {
        "done": "finished",
        "running": "is still running: nothing is stored until every stage is scored",
        "failed": "failed",
        "interrupted": "was interrupted before it finished",
    }.get(status, status)
    parts = [f"This run {esc(what)}." if status != "done" else ""]
    if run.error:
        parts.append(f"Reason: <b class='reason'>{esc(run.error)}</b>.")
    if not has_results:
        hint = {
            "running": "Reload this page when it has finished, or follow it in the terminal "
            "that runs <code>rbench run</code>.",
            "failed": "Fix the cause and run the benchmark again.",
            "interrupted": "Run the benchmark again (cached work is reused).",
        }.get(status, "")
        parts.append(f"<b>No results yet</b>: this run has stored no stage metrics. {hint}")
    text = " ".join(p for p in parts if p)
    return f"<p class='banner status-{esc(status)}'>{text}</p>" if text else ""


def _stage_parents(db: ResultsDB, run_id: str, tbl: Mapping[str, Any]) -> dict[str, str | None]:
    """Stage → parent in pipeline order (stages with metrics only, without the answers)."""
    infos = {s.stage: s.parent for s in db.stages(run_id)}
    order = [s for s in infos if s in tbl] + [s for s in tbl if s not in infos]
    return {s: infos.get(s) for s in order if s != ANSWER_STAGE}


def run_page(
    ws: Workspace,
    run_id: str,
    stage: str | None = None,
    sort: str | None = None,
    order: str | None = None,
) -> str:
    """One run: status, per-stage table, the funnel and the per-query table of ``stage``
    (default: the last stage), sorted by ``sort`` (a column) in ``order`` (asc/desc)."""
    with _open_db(ws) as db:
        run = db.get_run(run_id)
        tbl = db.stage_table(run_id)
        parents = _stage_parents(db, run_id, tbl)
        if stage is not None and stage not in parents:
            raise PageNotFoundError(
                f"run {run_id} has no stage {stage!r}; its stages: {', '.join(parents) or 'none'}"
            )
        chosen = stage or (list(parents)[-1] if parents else None)
        per_query = db.query_metrics(run_id, chosen) if chosen else {}
    k = _k(run.config)
    head = (
        f"<p>name <b>{esc(run.name)}</b> · status {_status(run)} · created "
        f"{esc(run.created_at[:19])} · datasets {esc(', '.join(_dataset_names(run)))} · "
        f"k = {k}</p>"
    )
    body = [head, _status_banner(run, bool(parents))]
    crumbs = [(_run_href(run_id), run_id)]
    if not parents or chosen is None:
        return page(f"Run {run_id}", "".join(body), crumbs)

    metrics = [f"P@{k}", f"R@{k}", f"F1@{k}", "MRR", f"nDCG@{k}", "lost", "failed"]
    rows = [[esc(s)] + [num(tbl[s].get(m)) for m in metrics] for s in parents]
    body += ["<h2>Per-stage metrics</h2>", table(["stage", *metrics], rows, cls="num",
                                                 id="stages")]  # fmt: skip
    queries = _queries(ws, run_id)
    body += [
        "<h2 id='pipeline'>Stage</h2>",
        _stage_form(run_id, list(parents), chosen),
        f"<h2>Funnel of the pipeline ending at {esc(chosen)}</h2>",
        _funnel_section(ws, run_id, parents, chosen, k, queries),
    ]
    if "answer" in tbl:
        ans = tbl["answer"]
        body += ["<h2>Answers</h2>", table(list(ans), [[num(v) for v in ans.values()]], "num")]
    body += [
        f"<h2 id='queries-title'>Queries: metrics of {esc(chosen)}</h2>",
        _query_table(run_id, chosen, k, queries, per_query, sort, order),
    ]
    return page(f"Run {run_id}", "".join(body), crumbs)


def _stage_form(run_id: str, stages: Sequence[str], chosen: str) -> str:
    options = "".join(
        f'<option value="{esc(s)}"{" selected" if s == chosen else ""}>{esc(s)}</option>'
        for s in stages
    )
    return (
        f"<form class='stage' method='get' action='{esc(_run_href(run_id))}'>"
        f'<label>Show the funnel and per-query metrics of <select name="stage" '
        f'data-autosubmit="1">{options}</select></label> <button>Show</button></form>'
    )


# ------------------------------------------------------------------ funnel


def _trec_files(path: Path) -> dict[str, set[str]]:
    """Query id → files of a stage's TREC run file (chunk ids carry their path)."""
    from retrieval_bench.store.trec import TrecFormatError, read_run

    try:
        run = read_run(path)
    except TrecFormatError as exc:
        raise ResultsFileError(str(exc), path) from exc
    out: dict[str, set[str]] = {}
    for qid in run.query_ids():
        out[qid] = {p for cid in run.ids(qid) if (p := funnel.chunk_path(cid)) is not None}
    return out


def _funnel_section(
    ws: Workspace,
    run_id: str,
    parents: Mapping[str, str | None],
    final: str,
    k: int,
    queries: Sequence[dict[str, Any]],
) -> str:
    if not queries:
        return "<p class='warn'>No funnel: the run has no <code>queries.jsonl</code>.</p>"
    steps = funnel.plan(parents, final, k)
    notes: list[str] = []
    datasets = list(dict.fromkeys(str(q.get("dataset", "")) for q in queries))
    files: dict[tuple[str, str], dict[str, set[str]]] = {}  # (dataset, stage) → query → files
    kept = []
    for step in steps:
        if step.key == funnel.CONTEXT:
            kept.append(step)
            continue
        missing = []
        for ds in datasets:
            for s in step.stages:
                path = _run_dir(ws, run_id) / "runs" / ds / f"{s}.trec"
                if not path.exists():
                    missing.append(path)
                elif (ds, s) not in files:
                    files[(ds, s)] = _trec_files(path)
        if missing:
            notes.append(f"step “{step.label}” left out: {missing[0]} is missing")
        else:
            kept.append(step)
    fq = []
    for q in queries:
        ds, qid = str(q.get("dataset", "")), str(q["query_id"])
        held: dict[str, set[str]] = {}
        for step in kept:
            if step.key == funnel.CONTEXT:
                held[step.key] = set((q.get("stages") or {}).get(final, {}).get("files") or [])
            else:
                held[step.key] = set().union(*(files[(ds, s)].get(qid, set())
                                               for s in step.stages))  # fmt: skip
        fq.append(funnel.FunnelQuery(qid, frozenset(q.get("gold_files") or []),
                                     frozenset(q.get("missing_gold") or []), held))  # fmt: skip
    counted = funnel.compute(kept, fq)
    if not counted or not counted[0].n_queries:
        return "<p class='warn'>No funnel: no query has gold files.</p>"
    first = counted[0]
    missing_gold = sum(len(q.missing & q.gold) for q in fq)
    intro = (
        f"<p>{first.gold} gold files over {first.n_queries} queries"
        + (f", {missing_gold} of them not indexed (never found, never lost)"
           if missing_gold else "")
        + ". Width = recall; “lost here” = gold files the step before held and this "
        "step does not (before the first step: the snapshot).</p>"
    )  # fmt: skip
    bars = [
        FunnelBar(s.key, s.label, s.recall,
                  f"recall {rate(s.recall)} · {s.found}/{s.gold} gold files · lost here {s.lost}")
        for s in counted
    ]  # fmt: skip
    rows = [[esc(s.label), rate(s.recall), f"{s.found}/{s.gold}", str(s.lost)] for s in counted]
    header = ["step", "recall", "gold found", "lost here"]
    return (
        intro + funnel_chart(bars) + table(header, rows, cls="num", id="funnel")
        + "".join(f"<p class='warn'>{esc(n)}</p>" for n in notes)
    )  # fmt: skip


# ------------------------------------------------------------------ per-query table


def _query_columns(k: int, per_query: Mapping[str, Mapping[str, float]]) -> list[str]:
    stored = {m for row in per_query.values() for m in row}
    wanted = [f"R@{k}", f"P@{k}", f"F1@{k}", "MRR", f"nDCG@{k}", "lost", "failed"]
    return [m for m in wanted if m in stored]


def cell(metric: str, value: float | None) -> str:
    """A per-query value as the query table shows it: counts as integers."""
    return count(value) if metric in ("lost", "failed") else num(value)


def _lower_first(column: str) -> bool:
    """Whether the first click sorts ascending: worst queries first for a score,
    highest first for ``lost`` and ``failed`` (the sense :mod:`compare` uses)."""
    from retrieval_bench.harness.compare import higher_is_better

    return higher_is_better(column)


def _query_table(
    run_id: str,
    stage: str,
    k: int,
    queries: Sequence[dict[str, Any]],
    per_query: Mapping[str, Mapping[str, float]],
    sort: str | None,
    order: str | None,
) -> str:
    texts = {str(q["query_id"]): str(q.get("query", "")) for q in queries}
    ids = list(dict.fromkeys([*texts, *per_query]))
    if not ids:
        return "<p>No per-query results stored for this stage.</p>"
    metrics = _query_columns(k, per_query)
    columns = ["query", "question", *metrics]
    if sort is not None and sort not in columns:
        raise ConfigError(f"cannot sort by {sort!r}; columns: {', '.join(columns)}")
    desc = order == "desc"

    def value(qid: str) -> float:
        return per_query.get(qid, {}).get(sort or "", math.nan)

    if sort in ("query", "question"):
        ids.sort(key=lambda q: q if sort == "query" else texts.get(q, ""), reverse=desc)
    elif sort is not None:
        known = [q for q in ids if not math.isnan(value(q))]
        unknown = [q for q in ids if math.isnan(value(q))]  # no value: always last
        ids = sorted(known, key=value, reverse=desc) + unknown

    def header(col: str) -> str:
        if col == sort:
            nxt = "asc" if desc else "desc"
        else:
            nxt = "asc" if col in ("query", "question") or _lower_first(col) else "desc"
        href = _href(_run_href(run_id), stage=stage, sort=col, order=nxt) + "#queries"
        return sort_header(col, href, (order or "asc") if col == sort else None)

    rows = [
        [link(f"{_run_href(run_id)}/queries/{quote(q, safe='')}", q), esc(texts.get(q, ""))]
        + [cell(m, per_query.get(q, {}).get(m)) for m in metrics]
        for q in ids
    ]
    hint = (
        "<p class='hint'>Click a column header to sort (again to reverse); "
        "a query opens its drill-down.</p>"
    )
    return hint + table_with_head([header(c) for c in columns], rows, cls="num", id="queries")


# ------------------------------------------------------------------ drill-down


def query_page(ws: Workspace, run_id: str, query_id: str) -> str:
    """The drill-down of one query; :class:`PageNotFoundError` when the run lacks it."""
    with _open_db(ws) as db:
        db.get_run(run_id)
    q = next((x for x in _queries(ws, run_id) if x["query_id"] == query_id), None)
    if q is None:
        raise PageNotFoundError(f"run {run_id} has no query {query_id!r}")
    gold = set(q["gold_files"])
    body = [
        f"<p class='question'>{esc(q['query'])}</p>",
        "<h2>Gold files</h2><ul>" + "".join(f"<li>{esc(g)}</li>" for g in q["gold_files"]),
        "</ul>",
    ]
    if q.get("missing_gold"):
        reasons = q.get("missing_gold_reasons") or {}
        named = ", ".join(
            f"{p} ({reasons.get(p, 'not in the snapshot')})" for p in q["missing_gold"]
        )
        body.append(f"<p class='warn'>gold files not indexed: {esc(named)}</p>")
    rows = []
    for stage, info in q["stages"].items():
        files = "".join(
            f"<li class='{'gold' if f in gold else ''}'>{esc(f)}</li>" for f in info["files"]
        )
        lost = "".join(f"<li class='lost'>{esc(f)}</li>" for f in info.get("lost") or [])
        failed = f"<p class='warn'>failed: {esc(info['failed'])}</p>" if info.get("failed") else ""
        rows.append([esc(stage), f"<ol>{files}</ol>{failed}", f"<ul>{lost}</ul>" if lost else "–"])
    body += ["<h2>Stages</h2>", table(["stage", "top files (gold marked)", "gold lost here"], rows)]
    crumbs = [(_run_href(run_id), run_id), (f"/runs/{run_id}/queries/{query_id}", query_id)]
    return page(f"Query {query_id}", "".join(body), crumbs)


# ------------------------------------------------------------------ compare


def _mark(significant: bool, direction: str) -> str:
    if not significant:
        return "<span class='same'>n.s.</span>"
    return (
        "<span class='better'>▲ better</span>"
        if direction == "better"
        else ("<span class='worse'>▼ worse</span>")
    )


def compare_page(ws: Workspace, base: str, cand: str) -> str:
    """Base vs candidate with the CLI's defaults (test, α, resamples, seed), so the page
    shows the p-values ``rbench compare BASE CAND`` prints."""
    from retrieval_bench.harness.compare import DEFAULT_RESAMPLES, compare_runs

    with _open_db(ws) as db:
        db.get_run(base.split(":", 1)[0])  # both sides may be RUN or RUN:STAGE
        db.get_run(cand.split(":", 1)[0])
        comp = compare_runs(
            db, [base, cand], n_resamples=DEFAULT_RESAMPLES, results_dir=Path(ws.results_dir)
        )
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
        f"<p>base {link(_run_href(base_run), base)} vs candidate {esc(cand)}"
        f" · test {esc(comp.test)} · α = {comp.alpha} · {comp.n_resamples} resamples"
        f" (as <code>rbench compare {esc(base)} {esc(cand)}</code>)"
        f" · Holm family: {esc(comp.holm_family)}</p>",
        table([*header, "significance", "pairs"], rows, cls="num", id="comparison"),
    ]
    body += [f"<p class='warn'>{esc(w)}</p>" for w in comp.warnings]
    return page(f"Compare {base} vs {cand}", "".join(body))
