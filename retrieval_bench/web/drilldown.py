"""The drill-down page of one query of a run: its question, gold files (and the
ones not indexed, with why), why it was not run (its snapshot failed), and per
stage the top files with gold marked, the gold files lost at that stage — each
with the rank it had in the stage's input and in the stage's own list — and the
stage's failure.
"""

from __future__ import annotations

from typing import Any

from retrieval_bench.web.html import esc, page, table
from retrieval_bench.web.rundata import (
    PageNotFoundError,
    open_db,
    query_href,
    read_queries,
    run_href,
)
from retrieval_bench.workspace import Workspace

__all__ = ["query_page"]


def lost_rank(ranks: Any) -> str:
    """Where a lost gold file sat: ``rank 3 in bm25, 8 in exact; rank 12 here`` (a
    retriever's input is the snapshot: only ``here``); ``rank not recorded`` for a
    run written before ``lost_ranks`` existed."""
    if not isinstance(ranks, dict):
        return "rank not recorded"
    fed = ranks.get("input") or {}
    parts = [", ".join(f"{r} in {s}" for s, r in fed.items())] if fed else []
    if parts:
        parts[0] = f"rank {parts[0]}"
    here = ranks.get("here")
    parts.append(f"rank {here} here" if here else "not ranked here")
    return "; ".join(parts)


def query_page(ws: Workspace, run_id: str, query_id: str) -> str:
    """The drill-down of one query; :class:`PageNotFoundError` when the run lacks it."""
    with open_db(ws) as db:
        db.get_run(run_id)
    q = next((x for x in read_queries(ws, run_id) if x["query_id"] == query_id), None)
    if q is None:
        raise PageNotFoundError(f"run {run_id} has no query {query_id!r}")
    gold = set(q["gold_files"])
    body = [
        f"<p class='question'>{esc(q['query'])}</p>",
        "<h2>Gold files</h2><ul>" + "".join(f"<li>{esc(g)}</li>" for g in q["gold_files"]),
        "</ul>",
    ]
    if q.get("not_run"):
        body.append(
            f"<p class='warn' id='not-run'>not run: {esc(q['not_run'])}; this question counts "
            "as a miss (0 in every metric)</p>"
        )
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
        ranks = info.get("lost_ranks") or {}
        lost = "".join(
            f"<li class='lost'>{esc(f)} <span class='rank'>({esc(lost_rank(ranks.get(f)))})"
            "</span></li>"
            for f in info.get("lost") or []
        )
        failed = f"<p class='warn'>failed: {esc(info['failed'])}</p>" if info.get("failed") else ""
        rows.append([esc(stage), f"<ol>{files}</ol>{failed}", f"<ul>{lost}</ul>" if lost else "–"])
    header = ["stage", "top files (gold marked)", "gold lost here (its rank in the input; here)"]
    body += ["<h2>Stages</h2>", table(header, rows)]
    crumbs = [(run_href(run_id), run_id), (query_href(run_id, query_id), query_id)]
    return page(f"Query {query_id}", "".join(body), crumbs)
