"""Statistics for comparing runs query by query (docs/metrics.md#statistics).

Paired significance tests, bootstrap confidence intervals, Holm's
multiple-comparison correction and paired effect sizes. ``a`` is the baseline
and ``b`` the candidate, paired by position; differences are ``d = b - a`` and
one-sided alternatives are about ``d`` (``"greater"``: the candidate scores
higher). One module per procedure; everything is re-exported here::

    from retrieval_bench.metrics.stats import paired_t_test, holm

The tests are implemented with numpy and take only tail probabilities from
``scipy.special`` / ``scipy.stats`` distributions; scipy's own test functions
are the reference they are checked against (``tests/unit/metrics/stats/``,
``benchmarks/agreement/stats.py``). Bad input (lengths differ, fewer than two
pairs, NaN/inf, non-numeric) raises ``ValueError`` with a one-line message.
When every difference is zero, every test returns p-value 1.0 (scipy returns
NaN for the t-test there).
"""

from __future__ import annotations

from collections.abc import Callable

from retrieval_bench.metrics.stats.bootstrap_ci import CI_METHODS, bootstrap_ci
from retrieval_bench.metrics.stats.bootstrap_test import paired_bootstrap_ci, paired_bootstrap_test
from retrieval_bench.metrics.stats.effect_size import cohens_dz, hedges_gz, rank_biserial
from retrieval_bench.metrics.stats.holm import holm
from retrieval_bench.metrics.stats.inputs import ALTERNATIVES
from retrieval_bench.metrics.stats.randomisation import randomisation_test
from retrieval_bench.metrics.stats.results import Interval, TestResult
from retrieval_bench.metrics.stats.t_test import paired_t_test
from retrieval_bench.metrics.stats.wilcoxon import ZERO_METHODS, wilcoxon_signed_rank

PAIRED_TESTS: dict[str, Callable[..., TestResult]] = {
    "t": paired_t_test,
    "wilcoxon": wilcoxon_signed_rank,
    "randomisation": randomisation_test,
    "bootstrap": paired_bootstrap_test,
}
"""The paired tests by name; each takes ``(a, b, *, alternative=..., ...)``."""

__all__ = [
    "ALTERNATIVES",
    "CI_METHODS",
    "PAIRED_TESTS",
    "ZERO_METHODS",
    "Interval",
    "TestResult",
    "bootstrap_ci",
    "cohens_dz",
    "hedges_gz",
    "holm",
    "paired_bootstrap_ci",
    "paired_bootstrap_test",
    "paired_t_test",
    "randomisation_test",
    "rank_biserial",
    "wilcoxon_signed_rank",
]
