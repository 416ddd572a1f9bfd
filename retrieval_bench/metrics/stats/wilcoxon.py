"""Wilcoxon signed-rank test of the paired differences ``d = b - a``.

Wilcoxon (1945), "Individual comparisons by ranking methods", Biometrics
Bulletin 1(6). ``R+`` (``R-``) is the sum of the ranks of ``|d|`` over positive
(negative) differences, ties getting average ranks (:mod:`.ranks`, which also
snaps float noise so equal differences tie).

Zero differences (``zero_method``), as defined by ``scipy.stats.wilcoxon``:

- ``"wilcox"``: dropped before ranking (Wilcoxon 1945); ``n`` counts the rest;
- ``"pratt"``: ranked with the others, then their ranks are dropped from
  ``R+``/``R-`` (Pratt 1959); the normal approximation subtracts the zeros'
  share of mean and variance (Cureton 1967) and leaves them out of the tie
  correction;
- ``"zsplit"``: ranked, and half of their rank sum added to each of ``R+``
  and ``R-``.

p-values (``method``):

- ``"exact"``: the permutation distribution of ``R+`` under random signs,
  by dynamic programming over rank sums (doubled, so average ranks of ties
  are integers): ``P_k(s) = (P_{k-1}(s) + P_{k-1}(s - 2 r_k)) / 2``. Without
  ties or zeros this is Wilcoxon's exact table and agrees with
  ``scipy.stats.wilcoxon(method="exact")``; with ties or zeros it is the exact
  *conditional* distribution, which scipy computes only by enumerating sign
  flips (its ``method="auto"`` for n <= 13). Difference: scipy's explicit
  ``method="exact"`` with ties or zeros instead rounds ``R+`` and reads the
  tie-free table, a conservative approximation; ours stays exact.
- ``"approx"``: normal approximation ``z = (R+ - mean) / se`` with
  ``mean = n(n+1)/4`` and ``se^2 = (n(n+1)(2n+1) - sum(t^3 - t)/2) / 24``
  over tie groups of size t (Lehmann 1975, *Nonparametrics*, §3.3), optional
  continuity correction of 0.5 towards the mean (``correction=True``).
  scipy's ``"asymptotic"``.
- ``"auto"`` (scipy 1.17.1's rule): approx when more than 50 pairs; else exact
  when there are no ties and no zeros, or when there are at most 13 pairs;
  else approx.

Reported statistic (as scipy): ``min(R+, R-)`` for the two-sided test, ``R+``
for one-sided ones. All differences zero: statistic 0, p-value 1.0 (scipy
1.17.1 returns the same with a warning).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from retrieval_bench.metrics.stats.inputs import (
    FloatArray,
    Values,
    check_alternative,
    check_choice,
    paired_differences,
)
from retrieval_bench.metrics.stats.ranks import average_ranks, ranked_differences, snap_ties
from retrieval_bench.metrics.stats.results import TestResult

ZERO_METHODS = ("wilcox", "pratt", "zsplit")
METHODS = ("auto", "exact", "approx")
AUTO_EXACT_MAX_PAIRS = 50
"""scipy 1.17.1: ``method="auto"`` is exact up to this many pairs when there are no ties/zeros."""
AUTO_TIED_EXACT_MAX_PAIRS = 13
"""scipy 1.17.1: with ties or zeros, ``"auto"`` enumerates sign flips up to this many pairs."""
EXACT_MAX_PAIRS = 1000
"""Largest sample for ``method="exact"``: the dynamic programme costs O(n^3) (seconds at 1000
pairs, and the normal approximation is accurate long before)."""


def wilcoxon_signed_rank(
    a: Values,
    b: Values,
    *,
    zero_method: str = "wilcox",
    correction: bool = False,
    method: str = "auto",
    alternative: str = "two-sided",
) -> TestResult:
    """Wilcoxon signed-rank test of the hypothesis that ``b - a`` is symmetric about zero."""
    d = snap_ties(paired_differences(a, b))
    check_choice(zero_method, "zero_method", ZERO_METHODS)
    check_choice(method, "method", METHODS)
    check_alternative(alternative)
    if not isinstance(correction, bool):
        raise ValueError(f"correction must be True or False (got {correction!r})")

    ranked = ranked_differences(d, zero_method)
    n_zero = int(np.count_nonzero(d == 0))
    if n_zero == d.size:
        return TestResult("wilcoxon", 0.0, 1.0, int(ranked.size), alternative)

    ranks, tie_sizes = average_ranks(np.abs(ranked))
    r_plus = float(ranks[ranked > 0].sum())
    r_minus = float(ranks[ranked < 0].sum())
    if zero_method == "zsplit":
        zero_half = float(ranks[ranked == 0].sum()) / 2.0
        r_plus += zero_half
        r_minus += zero_half

    if method == "auto":
        has_ties = bool(np.any(tie_sizes > 1)) or n_zero > 0
        if d.size > AUTO_EXACT_MAX_PAIRS:
            method = "approx"
        elif not has_ties or d.size <= AUTO_TIED_EXACT_MAX_PAIRS:
            method = "exact"
        else:
            method = "approx"

    if method == "exact":
        if ranked.size > EXACT_MAX_PAIRS:
            raise ValueError(
                f"method='exact' handles at most {EXACT_MAX_PAIRS} pairs (got {ranked.size}); "
                "use method='approx' or 'auto'"
            )
        p_value = _exact_p_value(ranks, ranked, alternative)
    else:
        p_value = _normal_p_value(
            r_plus, ranked, np.abs(ranked), zero_method, correction, alternative
        )
    statistic = min(r_plus, r_minus) if alternative == "two-sided" else r_plus
    return TestResult("wilcoxon", statistic, p_value, int(ranked.size), alternative)


def signed_rank_null(doubled_ranks: NDArray[np.int64]) -> FloatArray:
    """Null distribution of ``2 R+``: ``pmf[s] = P(2 R+ = s)`` under independent fair signs.

    Dynamic programming over rank sums, one rank at a time; ``doubled_ranks``
    are twice the (average) ranks, hence integers.
    """
    pmf = np.zeros(int(doubled_ranks.sum()) + 1, dtype=np.float64)
    pmf[0] = 1.0
    reach = 0
    for weight in np.sort(doubled_ranks):
        w = int(weight)
        shifted = pmf[: reach + 1].copy()
        pmf[: reach + 1] *= 0.5
        pmf[w : w + reach + 1] += 0.5 * shifted
        reach += w
    return pmf


def _exact_p_value(ranks: FloatArray, ranked: FloatArray, alternative: str) -> float:
    """p-value from the exact permutation distribution of ``R+`` given the ranks of ``|d|``."""
    nonzero = ranked != 0
    doubled = np.rint(2.0 * ranks[nonzero]).astype(np.int64)
    observed = int(np.rint(2.0 * ranks[ranked > 0].sum()))
    pmf = signed_rank_null(doubled)
    p_less = float(pmf[: observed + 1].sum())
    p_greater = float(pmf[observed:].sum())
    if alternative == "less":
        return min(1.0, p_less)
    if alternative == "greater":
        return min(1.0, p_greater)
    return min(1.0, 2.0 * min(p_less, p_greater))


def _normal_p_value(
    r_plus: float,
    ranked: FloatArray,
    magnitudes: FloatArray,
    zero_method: str,
    correction: bool,
    alternative: str,
) -> float:
    count = ranked.size
    mean = count * (count + 1) / 4.0
    variance24 = count * (count + 1) * (2.0 * count + 1)
    if zero_method == "pratt":
        n_zero = int(np.count_nonzero(ranked == 0))
        mean -= n_zero * (n_zero + 1) / 4.0
        variance24 -= n_zero * (n_zero + 1) * (2.0 * n_zero + 1)
        magnitudes = magnitudes[ranked != 0]  # zeros stay out of the tie correction
    _, tie_sizes = average_ranks(magnitudes)
    tie_term = float(np.sum(tie_sizes.astype(np.float64) ** 3 - tie_sizes))
    se = math.sqrt((variance24 - tie_term / 2.0) / 24.0)
    z = (r_plus - mean) / se
    if correction:
        direction = {"greater": 1.0, "less": -1.0}.get(alternative, float(np.sign(z)))
        z -= direction * 0.5 / se
    from scipy import stats as scipy_stats  # on first use: 0.5 s to import

    if alternative == "less":
        return float(scipy_stats.norm.cdf(z))
    if alternative == "greater":
        return float(scipy_stats.norm.sf(z))
    return float(min(1.0, 2.0 * scipy_stats.norm.sf(abs(z))))
