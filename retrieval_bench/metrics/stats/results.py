"""Result records shared by every paired test and confidence interval
(docs/metrics.md#statistics).

Conventions used throughout :mod:`retrieval_bench.metrics.stats`: ``a`` is the
baseline and ``b`` the candidate, paired position by position; differences are
``d = b - a``, so ``alternative="greater"`` asks whether the candidate is
better (the mean or median of ``d`` is above zero) and ``"less"`` whether it is
worse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class TestResult:
    """Outcome of one paired significance test.

    ``n`` counts the pairs the test used: all pairs, except for Wilcoxon with
    ``zero_method="wilcox"``, which drops zero differences.
    """

    __test__: ClassVar[bool] = False  # a library class, not a pytest test class

    test: str
    """``"t"``, ``"wilcoxon"``, ``"randomisation"`` or ``"bootstrap"``."""
    statistic: float
    p_value: float
    n: int
    alternative: str
    """``"two-sided"``, ``"greater"`` or ``"less"``, about ``b - a``."""


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided confidence interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    """How the interval was made (``"percentile"``, ``"basic"`` or ``"bca"``)."""
