"""Benchmark pages of the web UI: the runs list (with each run's best Acc@k) and
one run's page (status, the per-stage and span tables of :mod:`.stage_tables`, the
funnel of :mod:`.run_funnel`, the sortable per-query table
of :mod:`.query_table`). The drill-down is :mod:`.drilldown`, the comparison
:mod:`.compare`.

Data come from the results database (:class:`ResultsDB`) and the run's folder
``results/<run>/`` (:mod:`.rundata`). A damaged file raises an error that
:mod:`retrieval_bench.web.errors` renders as a page naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.config import ANSWER_STAGE
from retrieval_bench.harness.run.report import failed_note, stored_failures
from retrieval_bench.store.db import ResultsDB, RunRecord
from retrieval_bench.web.html import esc, link, metric_cell, page, table
from retrieval_bench.web.query_table import query_table
from retrieval_bench.web.run_funnel import funnel_section
from retrieval_bench.web.rundata import (
    PageNotFoundError,
    dataset_key,
    dataset_names,
    href,
    open_db,
    read_queries,
    run_href,
    table_k,
)
from retrieval_bench.web.stage_tables import headline, stage_tables
from retrieval_bench.workspace import Workspace

__all__ = ["previous_comparable", "run_page", "runs_page"]


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
    tables: dict[str, dict[str, dict[str, float]]] = {}
    if ws.db_path.exists():
        with open_db(ws) as db:
            runs = db.list_runs()
            tables = {r.id: db.stage_table(r.id) for r in runs}
    if not runs:
        body = "<p>No runs stored yet. Run a benchmark: <code>rbench run CONFIG.yaml</code></p>"
        return page("Runs", body)
    previous = previous_comparable(runs)
    rows = []
    for r in runs:
        older = previous.get(r.id)
        offer = (
            link(href("/compare", base=older.id, cand=r.id), f"compare with {older.id}")
            if older
            else ""
        )
        rows.append([
            link(run_href(r.id), r.id), esc(r.name), esc(", ".join(dataset_names(r))),
            _status(r), headline(tables.get(r.id, {}), table_k(r.config), [ANSWER_STAGE]),
            esc(r.created_at[:19].replace("T", " ")), offer,
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
    header = ["run", "name", "datasets", "status", "Acc@k (best stage)", "created (UTC)", ""]
    return page("Runs", table(header, rows, id="runs") + note + form)


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


def _failed_line(run: RunRecord) -> str:
    """``1 of 3 questions failed: <reason> …``: the questions of the run that could
    not be run (each a miss, 0 in every metric of the tables below); empty when all ran."""
    questions = stored_failures(run.provenance)
    note = failed_note(questions[1], questions[0]) if questions is not None else None
    return f"<p class='warn' id='failed-questions'>{esc(note)}</p>" if note else ""


def _not_run(run: RunRecord) -> set[str]:
    """The ids of the run's questions that could not be run."""
    questions = stored_failures(run.provenance)
    return set(questions[1]) if questions is not None else set()


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
    with open_db(ws) as db:
        run = db.get_run(run_id)
        tbl = db.stage_table(run_id)
        parents = _stage_parents(db, run_id, tbl)
        if stage is not None and stage not in parents:
            raise PageNotFoundError(
                f"run {run_id} has no stage {stage!r}; its stages: {', '.join(parents) or 'none'}"
            )
        chosen = stage or (list(parents)[-1] if parents else None)
        per_query = db.query_metrics(run_id, chosen) if chosen else {}
    k = table_k(run.config)
    head = (
        f"<p>name <b>{esc(run.name)}</b> · status {_status(run)} · created "
        f"{esc(run.created_at[:19])} · datasets {esc(', '.join(dataset_names(run)))} · "
        f"k = {k}</p>"
    )
    body = [head, _status_banner(run, bool(parents)), _failed_line(run)]
    crumbs = [(run_href(run_id), run_id)]
    if not parents or chosen is None:
        return page(f"Run {run_id}", "".join(body), crumbs)

    body.append(stage_tables(run.config, tbl, list(parents), k))
    queries = read_queries(ws, run_id)
    body += [
        "<h2 id='pipeline'>Stage</h2>",
        _stage_form(run_id, list(parents), chosen),
        f"<h2>Funnel of the pipeline ending at {esc(chosen)}</h2>",
        funnel_section(ws, run_id, parents, chosen, k, queries),
    ]
    if "answer" in tbl:
        ans = tbl["answer"]
        cells = [[metric_cell(m, v) for m, v in ans.items()]]
        body += ["<h2>Answers</h2>", table(list(ans), cells, "num")]
    body += [
        f"<h2 id='queries-title'>Queries: metrics of {esc(chosen)}</h2>",
        query_table(run_id, chosen, k, queries, per_query, sort, order, _not_run(run)),
    ]
    return page(f"Run {run_id}", "".join(body), crumbs)


def _stage_form(run_id: str, stages: Sequence[str], chosen: str) -> str:
    options = "".join(
        f'<option value="{esc(s)}"{" selected" if s == chosen else ""}>{esc(s)}</option>'
        for s in stages
    )
    return (
        f"<form class='stage' method='get' action='{esc(run_href(run_id))}'>"
        f'<label>Show the funnel and per-query metrics of <select name="stage" '
        f'data-autosubmit="1">{options}</select></label> <button>Show</button></form>'
    )
