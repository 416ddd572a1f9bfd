"""The per-query table of a run's page: one row per question with the chosen
stage's metrics, sortable by any column (a link per header), each query linking
to its drill-down.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.compare.comparison import higher_is_better
from retrieval_bench.web.html import count, esc, link, num, sort_header, table_with_head
from retrieval_bench.web.rundata import href, query_href, run_href

__all__ = ["cell", "query_table"]

_NOT_RUN = " <span class='warn not-run'>(not run: its snapshot failed; a miss)</span>"


def _query_columns(k: int, per_query: Mapping[str, Mapping[str, float]]) -> list[str]:
    stored = {m for row in per_query.values() for m in row}
    wanted = [f"R@{k}", f"P@{k}", f"F1@{k}", "MRR", f"nDCG@{k}", "lost", "failed"]
    return [m for m in wanted if m in stored]


def cell(metric: str, value: float | None) -> str:
    """A per-query value as the query table shows it: counts as integers."""
    return count(value) if metric in ("lost", "failed") else num(value)


def _lower_first(column: str) -> bool:
    """Whether the first click sorts ascending: worst queries first for a score,
    highest first for ``lost`` and ``failed`` (the sense a comparison uses)."""
    return higher_is_better(column)


def query_table(
    run_id: str,
    stage: str,
    k: int,
    queries: Sequence[dict[str, Any]],
    per_query: Mapping[str, Mapping[str, float]],
    sort: str | None,
    order: str | None,
    not_run: Collection[str] = (),
) -> str:
    """The per-query table of ``stage`` sorted by ``sort`` in ``order`` (asc/desc);
    a ConfigError for a column the table does not have. A question in ``not_run``
    (its snapshot failed: a miss, 0 in every column) says so beside its text, as
    its ``failed`` column (a stage that raised on it) stays 0."""
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
        target = href(run_href(run_id), stage=stage, sort=col, order=nxt) + "#queries"
        return sort_header(col, target, (order or "asc") if col == sort else None)

    rows = [
        [link(query_href(run_id, q), q), esc(texts.get(q, "")) + (_NOT_RUN if q in not_run else "")]
        + [cell(m, per_query.get(q, {}).get(m)) for m in metrics]
        for q in ids
    ]
    hint = (
        "<p class='hint'>Click a column header to sort (again to reverse); "
        "a query opens its drill-down.</p>"
    )
    return hint + table_with_head([header(c) for c in columns], rows, cls="num", id="queries")
