"""Paired (one-sample on the differences) Student t-test.

``t = mean(d) / (sd(d) / sqrt(n))`` with ``sd`` the sample standard deviation
(ddof = 1) and ``n - 1`` degrees of freedom (Student 1908; any statistics
text). Matches ``scipy.stats.ttest_rel(b, a)`` (note the order: scipy uses
``x - y``).

Degenerate inputs, where scipy returns NaN or warns:

- all differences zero: statistic 0.0, p-value 1.0 (no evidence of a change);
- constant nonzero differences (sd = 0): statistic ``±inf``; p-value 0.0 for
  the two-sided test and for the alternative in the direction of the change,
  1.0 for the opposite one (scipy 1.17 returns ``±inf`` and 0.0 two-sided too,
  with a precision-loss warning).
"""

from __future__ import annotations

import math

import numpy as np

from retrieval_bench.metrics.stats.inputs import Values, check_alternative, paired_differences
from retrieval_bench.metrics.stats.results import TestResult


def paired_t_test(a: Values, b: Values, *, alternative: str = "two-sided") -> TestResult:
    """Paired t-test of ``mean(b - a) = 0``."""
    d = paired_differences(a, b)
    check_alternative(alternative)
    n = int(d.size)
    if not d.any():
        return TestResult("t", 0.0, 1.0, n, alternative)
    mean = float(d.mean())
    if np.ptp(d) == 0.0:
        statistic = math.copysign(math.inf, mean)
    else:
        statistic = mean / (float(d.std(ddof=1)) / math.sqrt(n))
    return TestResult("t", statistic, t_p_value(statistic, n - 1, alternative), n, alternative)


def t_p_value(statistic: float, df: int, alternative: str) -> float:
    """Tail probability of Student's t with ``df`` degrees of freedom."""
    from scipy import stats as scipy_stats  # on first use: 0.5 s to import

    distribution = scipy_stats.t(df)
    if alternative == "less":
        return float(distribution.cdf(statistic))
    if alternative == "greater":
        return float(distribution.sf(statistic))
    return float(min(1.0, 2.0 * distribution.sf(abs(statistic))))
