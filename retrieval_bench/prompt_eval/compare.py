"""A prompt against the baseline prompt: better, worse or same, and is it real?

See docs/architecture.md#prompt-evaluation. Direction comes from the use case's own
``sort`` rule (if the result is first and the baseline is second, then the new result
is better): the pair is sorted in both input orders; the same winner both
times decides, a winner that depends on the input order means a tie
(``same``), since the sort is stable.

Significance is a paired sign-flip randomisation test over the per-row scores
of the rows both prompts ran on (:func:`retrieval_bench.metrics.stats.randomisation_test`;
Fisher 1935, Smucker, Allan & Carterette 2007). It is exact while
``2**n_rows <= n_resamples`` (every row set of this workflow's size). With
0/1 row scores this is an exact McNemar-style test on the discordant rows:
only rows where one prompt is right and the other wrong move the statistic.
"""

from __future__ import annotations

import math

from retrieval_bench.metrics.stats import randomisation_test
from retrieval_bench.prompt_eval.records import BaselineComparison, PromptResult
from retrieval_bench.prompt_eval.usecase import UseCase


def sort_verdict(use_case: UseCase, candidate: PromptResult, baseline: PromptResult) -> str:
    """``better``/``worse``/``same`` by the use case's sort rule."""
    first = use_case.sort([candidate, baseline])[0].name
    first_swapped = use_case.sort([baseline, candidate])[0].name
    if first != first_swapped:
        return "same"
    return "better" if first == candidate.name else "worse"


def compare_to_baseline(
    use_case: UseCase,
    candidate: PromptResult,
    baseline: PromptResult,
    *,
    alpha: float = 0.05,
    n_resamples: int = 10000,
    seed: int = 0,
) -> BaselineComparison:
    """Compare ``candidate`` with ``baseline`` over their common rows."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    base_scores = {o.row_id: o.score for o in baseline.outcomes}
    pairs = [
        (base_scores[o.row_id], o.score) for o in candidate.outcomes if o.row_id in base_scores
    ]
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    p_value = math.nan
    if len(pairs) >= 2:
        p_value = randomisation_test(a, b, n_resamples=n_resamples, seed=seed).p_value
    verdict = sort_verdict(use_case, candidate, baseline)
    return BaselineComparison(
        candidate=candidate.name,
        baseline=baseline.name,
        verdict=verdict,
        candidate_score=sum(b) / len(b) if b else math.nan,
        baseline_score=sum(a) / len(a) if a else math.nan,
        p_value=p_value,
        n_rows=len(pairs),
        wins=sum(y > x for x, y in pairs),
        losses=sum(y < x for x, y in pairs),
        significant=verdict != "same" and math.isfinite(p_value) and p_value < alpha,
    )
