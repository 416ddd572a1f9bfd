"""The ranked table of a sweep (docs/sweeps.md#the-ranked-table).

A cell is judged on the objective (``Acc@5`` by default) of its **last stage**
(the last reranker, else the last fusion, else the last retriever: what the
pipeline hands on), per question of the split. Each cell gets the mean with a
95% percentile-bootstrap CI (2,000 resamples, seed 0). The cells are ranked by
mean; among equal means the cheaper (seconds, to the millisecond:
:func:`cost_seconds`) first, then the lower cell number, and the first is the
chosen cell. The *reference* — the highest mean; among equal means the lower cell
number — is compared with every other cell on the questions both answered, by the
paired sign-flip randomisation test (exact up to 2^13 questions, else 10,000
resamples), and the p-values are Holm-adjusted over the family of those
comparisons. A cell whose last stage failed on every question, or that ran on no
snapshot, is ``failed`` with the first reason, listed after the ranked cells and
left out of the tests.

The reference is chosen without the seconds: among equal means the cheaper cell
*as measured* is a matter of timing noise (a loaded machine, a worker pool instead
of this process), and were it the reference, every other cell's Δ, p and Holm p —
stored in the sweep's rows — would change with it from one run of the same sweep
to the next. So every stored row but the rank and the seconds is a function of the
per-question values and the cell numbers (:func:`reference_of`); when no other cell
ties the best mean, the reference is the chosen cell.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.run.results import DatasetOutcome
from retrieval_bench.metrics.stats.bootstrap_ci import bootstrap_ci
from retrieval_bench.metrics.stats.holm import holm
from retrieval_bench.metrics.stats.randomisation import randomisation_test
from retrieval_bench.sweep.grid import Cell
from retrieval_bench.sweep.spec import SweepSpec

CI_RESAMPLES = 2000
SECONDS_DIGITS = 3
"""Seconds are compared (and stored) to the millisecond: below that, timings are noise."""


def cost_seconds(seconds: float) -> float:
    """A cell's seconds as the ranking's tie-break, the stored row and the Pareto front
    (:func:`retrieval_bench.web.sweeps.pareto_cells`) all compare them: one rounding
    for all, so that the chosen cell is never off its own sweep's front."""
    return round(float(seconds), SECONDS_DIGITS)


@dataclass
class PhaseCell:
    """One cell's merged outcomes over one split."""

    index: int
    config: BenchmarkConfig
    outcomes: list[DatasetOutcome] = field(default_factory=list)
    cost: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    groups: int = 0


@dataclass
class CellScore:
    cell: Cell
    phase: str
    phase_cell: PhaseCell | None
    objective: str
    stage: str
    values: dict[str, float] = field(default_factory=dict)
    status: str = "done"
    error: str | None = None
    mean: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    rank: int | None = None
    delta: float | None = None
    """Mean difference to the reference (:func:`reference_of`) on the questions both
    answered (≤ 0 on a selection split); None for the reference itself."""
    p_value: float | None = None
    p_holm: float | None = None

    @property
    def cost(self) -> dict[str, float]:
        cost = dict(self.phase_cell.cost) if self.phase_cell is not None else {}
        cost["seconds"] = cost.get("seconds", 0.0) + cost.pop("chunk_seconds", 0.0)
        return cost

    def row(self) -> dict[str, Any]:
        """The stored ranked-table row (JSON-safe: NaN as None)."""

        def num(v: float | None) -> float | None:
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

        return {
            "rank": self.rank, "status": self.status, "objective": self.objective,
            "stage": self.stage, "n": len(self.values), "mean": num(self.mean),
            "ci_low": num(self.ci_low), "ci_high": num(self.ci_high),
            "delta": num(self.delta), "p_value": num(self.p_value), "p_holm": num(self.p_holm),
            **{k: cost_seconds(v) if k == "seconds" else round(v, 4)
               for k, v in self.cost.items()},
        }  # fmt: skip


def score_cell(phase_cell: PhaseCell, spec: SweepSpec, phase: str, cell: Cell) -> CellScore:
    """The objective of ``cell``'s last stage per question, its mean and 95% CI."""
    stage = phase_cell.config.stage_specs()[-1].label
    score = CellScore(cell, phase, phase_cell, spec.objective, stage)
    failed = 0
    reasons: list[str] = list(phase_cell.errors)
    for outcome in phase_cell.outcomes:
        for qid, row in outcome.per_query.get(stage, {}).items():
            if spec.objective in row:
                score.values[qid] = float(row[spec.objective])
            failed += int(row.get("failed", 0.0) == 1.0)
        for s in outcome.stages:
            reasons.extend(f"{s.name}: {why}" for why in list(s.failures.values())[:1])
    if not score.values or failed == len(score.values):
        score.status = "failed"
        score.error = reasons[0] if reasons else "no question was scored"
        return score
    values = list(score.values.values())
    score.mean = statistics.fmean(values)
    if len(values) >= 2:
        ci = bootstrap_ci(values, n_resamples=CI_RESAMPLES, seed=0)
        score.ci_low, score.ci_high = ci.low, ci.high
    else:
        score.ci_low = score.ci_high = score.mean
    return score


def reference_of(done: Sequence[CellScore]) -> CellScore:
    """The cell the others of ``done`` (scored cells) are tested against: the highest
    mean, then the lower cell number — never the measured seconds, so that the stored
    Δ and p-values do not depend on timing (the module docstring)."""
    return min(done, key=lambda s: (-s.mean, s.cell.index))


def rank_cells(scores: Sequence[CellScore], keep_order: bool = False) -> list[CellScore]:
    """The chosen cell first, then by mean (or as given with ``keep_order``, the first
    being the reference); every other scored cell tested against the reference
    (:func:`reference_of`), Holm-adjusted; failed cells last."""
    done = [s for s in scores if s.status == "done"]
    if not keep_order:
        # equal means: the cheaper cell first (quality first, then cost), then the lower number
        done.sort(key=lambda s: (-s.mean, cost_seconds(s.cost.get("seconds", 0.0)), s.cell.index))
    failed = [s for s in scores if s.status != "done"]
    if not done:
        return failed
    reference = done[0] if keep_order else reference_of(done)
    tested: list[CellScore] = []
    for i, s in enumerate(done, 1):
        s.rank = i
        if s is reference:
            continue
        common = sorted(set(reference.values) & set(s.values))
        if len(common) < 2:
            continue
        a = [reference.values[q] for q in common]
        b = [s.values[q] for q in common]
        s.delta = statistics.fmean(b) - statistics.fmean(a)
        s.p_value = randomisation_test(a, b).p_value
        tested.append(s)
    for s, adjusted in zip(tested, holm([s.p_value or 1.0 for s in tested]), strict=True):
        s.p_holm = adjusted
    return done + failed
