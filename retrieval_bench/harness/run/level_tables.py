"""The module- and function-level tables (docs/metrics.md#function-and-module-level):
which of them a run has and their columns, for ``rbench run``, ``rbench show`` and
the web UI's run page alike.

A level's table is shown when the config's ``metrics.levels`` names it and some
stage stored its measures (``module_*``/``function_*``: only questions with gold
functions have them), so a run without gold functions shows nothing extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.dataset_spec import MetricsSpec
from retrieval_bench.harness.run.report import format_table, level_columns
from retrieval_bench.metrics.retrieval.conventions import LABELS, SCORED
from retrieval_bench.metrics.retrieval.scoring import UNMAPPED

__all__ = [
    "ENTITY_LEVELS",
    "format_level_tables",
    "level_scope",
    "level_views",
    "stored_levels",
    "unmapped_note",
]

ENTITY_LEVELS = ("module", "function")
"""The levels beside files, in the order their tables are shown."""

Table = Mapping[str, Mapping[str, float]]


def level_views(
    table: Table, ks: Sequence[int], k: int, levels: Sequence[str] = ENTITY_LEVELS
) -> dict[str, list[str]]:
    """Level → the columns of its table (:func:`level_columns`: Acc at every cutoff of
    ``ks``, R, MRR and nDCG at ``k``), for each of ``module`` and ``function`` that
    ``levels`` names and some stage of ``table`` (stage → metric → value) has; empty
    for a run without such measures."""
    out: dict[str, list[str]] = {}
    for level in ENTITY_LEVELS:
        cols = level_columns(level, ks, k)
        if level in levels and any(c in row for row in table.values() for c in cols):
            out[level] = cols
    return out


def stored_levels(config: Mapping[str, Any]) -> tuple[list[int], list[str]]:
    """``(metrics.ks, metrics.levels)`` of a stored run's config, the defaults where
    the config lacks them (a run stored before the key)."""
    spec = config.get("metrics")
    spec = spec if isinstance(spec, Mapping) else {}
    default = MetricsSpec()
    ks, levels = spec.get("ks"), spec.get("levels")
    return (
        [int(k) for k in (default.ks if ks is None else ks)],
        [str(lv) for lv in (default.levels if levels is None else levels)],
    )


def level_scope(table: Table, conventions: str, questions: int | None = None) -> str:
    """What a level table averages over, for its title: the conventions and how many
    queries have gold functions under them (``has_gold_functions``'s mean times
    ``questions``, when both are known), e.g. ``LocAgent conventions; 21 of 22
    queries with gold functions``."""
    label = LABELS.get(conventions, conventions)
    share = max((row.get(SCORED, float("nan")) for row in table.values()), default=float("nan"))
    if questions is None or share != share:  # unknown, or a run stored before the measure
        return f"{label}; queries with gold functions"
    return f"{label}; {round(share * questions)} of {questions} queries with gold functions"


def format_level_tables(
    table: Table,
    stage_order: Sequence[str],
    ks: Sequence[int],
    k: int,
    levels: Sequence[str],
    heading: str,
    fmt: str = "text",
    conventions: str = "rbench",
    questions: int | None = None,
) -> list[str]:
    """Each table of :func:`level_views` rendered by :func:`format_table` (``fmt``),
    titled ``<heading> <level> level (<conventions>; <n> of <questions> queries with
    gold functions, k=<k>)`` after a blank line: what ``rbench run`` prints below its
    stage table, and ``rbench show`` below the stored one."""
    out = []
    note = unmapped_note(table)
    scope = level_scope(table, conventions, questions)
    for level, cols in level_views(table, ks, k, levels).items():
        title = f"\n{heading} {level} level ({scope}, k={k})"
        out.append(format_table(table, cols, stage_order, title, fmt))
        if note:
            out.append(f"\n{note}" if fmt == "markdown" else note)
    return out


def unmapped_note(table: Table) -> str | None:
    """The line under a level table when some questions have a gold function that no
    chunk stands for (``function_unmapped``, the same for every stage of a corpus):
    no chunk stage can find it, so those questions cap every chunk stage's score."""
    share = max((row.get(UNMAPPED, 0.0) for row in table.values()), default=0.0)
    if not share or share != share:  # none, or NaN
        return None
    return (
        f"note: {share:.1%} of the queries with gold functions have one that no chunk "
        f"stands for ({UNMAPPED}; its file is missing or not Python): no chunk stage can "
        "find it, a stage naming entities can"
    )
