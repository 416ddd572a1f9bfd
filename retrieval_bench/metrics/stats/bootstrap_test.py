"""Paired bootstrap test and paired bootstrap CI of ``mean(b - a)``.

Test (Koehn 2004, "Statistical significance tests for machine translation
evaluation", EMNLP; Sakai 2006, "Evaluating evaluation metrics based on the
bootstrap", SIGIR; Efron & Tibshirani 1993, §16.4): resample the *pairs* with
replacement, which keeps each query's two scores together, and compare the
observed mean difference with the bootstrap distribution of the mean of the
*shifted* differences ``d - mean(d)``, which obeys the null hypothesis (mean
zero) while keeping the spread and shape of ``d``:

- ``"greater"``: share of resampled means ``>= mean(d)``;
- ``"less"``: share ``<= mean(d)``;
- ``"two-sided"``: share with ``|mean*| >= |mean(d)|`` (the shifted
  distribution need not be symmetric, so no doubling).

Shares are ``(count + 1) / (n_resamples + 1)`` (Phipson & Smyth 2010), never 0;
values within :data:`.resampling.RELATIVE_TIE_TOLERANCE` of the observed mean
count as equal. All differences zero: p-value 1.0. scipy has no such test; it
is checked against the randomisation test, which asks the same question.

The CI (:func:`paired_bootstrap_ci`) is :func:`.bootstrap_ci.bootstrap_ci` of
the mean of the differences.
"""

from __future__ import annotations

import numpy as np

from retrieval_bench.metrics.stats.bootstrap_ci import (
    bootstrap_ci,
    bootstrap_distribution,
    rowwise,
)
from retrieval_bench.metrics.stats.inputs import FloatArray, Values, paired_differences
from retrieval_bench.metrics.stats.resampling import generator, paired_resampling_test
from retrieval_bench.metrics.stats.results import Interval, TestResult


def paired_bootstrap_test(
    a: Values,
    b: Values,
    *,
    n_resamples: int = 10000,
    seed: int | np.random.Generator | None = 0,
    alternative: str = "two-sided",
) -> TestResult:
    """Bootstrap test of ``mean(b - a) = 0`` on the null-centred resampled pairs."""

    def p_value(d: FloatArray, observed: float, tolerance: float, n_resamples: int) -> float:
        null = bootstrap_distribution(d - observed, rowwise("mean"), n_resamples, generator(seed))
        if alternative == "greater":
            count = np.count_nonzero(null >= observed - tolerance)
        elif alternative == "less":
            count = np.count_nonzero(null <= observed + tolerance)
        else:
            count = np.count_nonzero(np.abs(null) >= abs(observed) - tolerance)
        return min(1.0, (int(count) + 1) / (n_resamples + 1))

    return paired_resampling_test("bootstrap", a, b, n_resamples, alternative, p_value)


def paired_bootstrap_ci(
    a: Values,
    b: Values,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10000,
    method: str = "percentile",
    seed: int | np.random.Generator | None = 0,
) -> Interval:
    """Bootstrap confidence interval of ``mean(b - a)``, resampling pairs."""
    d = paired_differences(a, b)
    return bootstrap_ci(
        d,
        statistic="mean",
        confidence=confidence,
        n_resamples=n_resamples,
        method=method,
        seed=seed,
    )
