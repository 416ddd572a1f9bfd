"""Printing a sweep's ranked table (``rbench sweep``, ``rbench sweeps ID``).

Rows are the stored ``sweep_cells`` rows (:mod:`retrieval_bench.store.sweeps`) or a
fresh :class:`~retrieval_bench.sweep.runner.SweepResult`'s, so a stored sweep
prints exactly as it did when it ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _num(v: Any, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _p(v: Any) -> str:
    if v is None:
        return "-"
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def best_mean(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The highest mean of the scored rows of a ranked table (None when none is).

    The Δ column says ``best`` for every cell with it: the chosen cell (rank 1, the
    cheaper among equal means) and the reference the others are tested against
    (the lower cell number among them, whose p is ``-``; :mod:`~retrieval_bench.sweep.ranking`)
    are then two cells, both best."""
    means = [r["mean"] for r in rows if r.get("status") == "done" and r.get("mean") is not None]
    return max(means, default=None)


def ranked_table(rows: Sequence[Mapping[str, Any]], objective: str) -> str:
    """One line per cell: rank, cell, objective mean [95% CI], Δ and Holm p against the
    reference (:func:`best_mean`), cost (seconds as if run alone, LLM calls, tokens),
    setting."""
    best = best_mean(rows)
    head = (
        f"{'rank':>4}  {'cell':>4}  {objective:>7} {'[95% CI]':<15}  {'Δ best':>7}  "
        f"{'p Holm':>7}  {'n':>4}  {'seconds':>8}  {'llm':>5}  {'tokens':>7}  setting"
    )
    lines = [head]
    for r in rows:
        if r.get("status") != "done":
            lines.append(f"{'-':>4}  {r['cell']:>4}  failed: {r.get('error') or 'unknown'}"
                         f"  ({r['label']})")  # fmt: skip
            continue
        ci = f"[{_num(r.get('ci_low'))}, {_num(r.get('ci_high'))}]"
        delta = "best" if r.get("mean") == best else _num(r.get("delta"))
        lines.append(
            f"{r.get('rank') or '-':>4}  {r['cell']:>4}  {_num(r.get('mean')):>7} {ci:<15}  "
            f"{delta:>7}  {_p(r.get('p_holm')):>7}  {r.get('n', 0):>4}  "
            f"{_num(r.get('seconds'), 1):>8}  {int(r.get('llm_calls', 0)):>5}  "
            f"{int(r.get('llm_tokens', 0)):>7}  {r['label']}"
        )
    return "\n".join(lines)


def report_lines(
    report: Sequence[Mapping[str, Any]], objective: str, split: str | None
) -> list[str]:
    """The chosen cell and the base config on the report split."""
    if not report:
        return ["report: nothing was chosen (every cell failed)"]
    out = [f"report on {split or 'all'} (chosen on the selection split, scored here only):"]
    for r in report:
        ci = f"[{_num(r.get('ci_low'))}, {_num(r.get('ci_high'))}]"
        vs = ""
        if r.get("p_value") is not None:
            vs = f"  Δ vs chosen {_num(r.get('delta'))}, p {_p(r.get('p_value'))}"
        out.append(f"  {r['label']}: {objective} {_num(r.get('mean'))} {ci}, "
                   f"n={r.get('n', 0)}{vs}")  # fmt: skip
    return out
