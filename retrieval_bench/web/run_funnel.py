"""The funnel section of a run's page: per step of the pipeline that ends at the
chosen stage (candidates → fused → reranked → context), the mean recall per query
(as ``R@k``), the gold files found pooled over queries (found/all, and that share)
and gold files lost since the step before, from the run's TREC files and
``queries.jsonl``; the counting is :mod:`retrieval_bench.web.funnel`. A question
that was not run (``not_run``) counts with recall 0 and its gold is never lost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrieval_bench.identifiers import inside
from retrieval_bench.web import funnel
from retrieval_bench.web.html import FunnelBar, esc, funnel_chart, rate, table
from retrieval_bench.web.rundata import ResultsFileError, run_dir
from retrieval_bench.workspace import Workspace

__all__ = ["funnel_section"]


def _trec_files(path: Path) -> dict[str, set[str]]:
    """Query id → files of a stage's TREC run file (chunk ids carry their path; a
    file-level stage's ``file:``/``entity:`` ids are their path: :func:`funnel.doc_file`)."""
    from retrieval_bench.store.trec import TrecFormatError, read_run

    try:
        run = read_run(path)
    except TrecFormatError as exc:
        raise ResultsFileError(str(exc), path) from exc
    out: dict[str, set[str]] = {}
    for qid in run.query_ids():
        out[qid] = {p for cid in run.ids(qid) if (p := funnel.doc_file(cid)) is not None}
    return out


def _pooled(step: funnel.FunnelStep) -> float:
    """Gold files found over all gold files of all queries (NaN without gold)."""
    return step.found / step.gold if step.gold else math.nan


def funnel_section(
    ws: Workspace,
    run_id: str,
    parents: Mapping[str, str | None],
    final: str,
    k: int,
    queries: Sequence[dict[str, Any]],
) -> str:
    """The funnel of the pipeline ending at ``final`` (``parents``: stage → parent,
    in pipeline order) over the run's ``queries``: chart, table and notes on steps
    left out because a TREC file is missing."""
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
                try:  # a name of a run stored before the names rule may lead out
                    path = inside(run_dir(ws, run_id) / "runs", ds, s, suffix=".trec")
                except ValueError as exc:
                    missing.append(str(exc))
                    continue
                if not path.exists():
                    missing.append(f"{path} is missing")
                elif (ds, s) not in files:
                    files[(ds, s)] = _trec_files(path)
        if missing:
            notes.append(f"step “{step.label}” left out: {missing[0]}")
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
        gold = frozenset(q.get("gold_files") or [])
        # a question that was not run had no snapshot: its gold is never found, never lost
        unfindable = gold if q.get("not_run") else frozenset(q.get("missing_gold") or [])
        fq.append(funnel.FunnelQuery(qid, gold, unfindable, held))
    counted = funnel.compute(kept, fq)
    if not counted or not counted[0].n_queries:
        return "<p class='warn'>No funnel: no query has gold files.</p>"
    first = counted[0]
    ran = [f for f, q in zip(fq, queries, strict=True) if not q.get("not_run")]
    missing_gold = sum(len(q.missing & q.gold) for q in ran)
    not_run = len(fq) - len(ran)
    intro = (
        f"<p>{first.gold} gold files over {first.n_queries} queries"
        + (f", {missing_gold} of them not indexed (never found, never lost)"
           if missing_gold else "")
        + (f"; {not_run} of the queries not run (their snapshot failed: recall 0, "
           "never lost)" if not_run else "")
        + ". Width = recall, the mean per query (the R@k of the tables); “pooled” = gold "
        "files found over all gold files of all queries (a query with many gold files "
        "weighs more); “lost here” = gold files the step before held and this step does "
        "not (before the first step: the snapshot).</p>"
    )  # fmt: skip
    bars = [
        FunnelBar(s.key, s.label, s.recall,
                  f"mean per query {rate(s.recall)} · pooled {s.found}/{s.gold} = "
                  f"{rate(_pooled(s))} · lost here {s.lost}")
        for s in counted
    ]  # fmt: skip
    rows = [
        [esc(s.label), rate(s.recall), f"{s.found}/{s.gold}", rate(_pooled(s)), str(s.lost)]
        for s in counted
    ]
    header = ["step", "mean recall per query", "gold found (pooled)", "pooled recall",
              "lost here"]  # fmt: skip
    return (
        intro + funnel_chart(bars) + table(header, rows, cls="num", id="funnel")
        + "".join(f"<p class='warn'>{esc(n)}</p>" for n in notes)
    )  # fmt: skip
