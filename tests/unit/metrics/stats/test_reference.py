"""Reference comparisons with scipy 1.17.1, shared by the statistics tests and
``benchmarks/agreement/stats.py`` (which runs them on more cases and prints a table).

The samples and cases come from :mod:`.test_stats_samples`.
Each ``agree_*`` function runs one family of ours-vs-scipy comparisons on one
paired sample and returns :class:`Gap` records: the absolute difference of the
p-values and of the statistics, with the tolerance that family must meet.
Differences ``b - a`` are handed to scipy rounded to 12 decimals, as scipy's
documentation advises (ours snap float noise the same way), and scipy is called
with ``(b, a)`` where it computes ``x - y``.

This module holds no tests; it is named ``test_stats_*`` only because the
statistics tests own that file pattern.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from retrieval_bench.metrics import stats
from tests.unit.metrics.stats.test_samples import Case, integer_scaled

EXACT_TOLERANCE = 1e-12
"""p-values from closed forms and exact enumerations must agree to this."""
CI_TOLERANCE = {"percentile": 0.06, "basic": 0.06, "bca": 0.08}
"""Largest |endpoint ours - endpoint scipy| as a share of scipy's interval width (plus
the local atom spacing, :func:`atom_spacing`), with 10,000 resamples on each side.
The Monte Carlo s.d. of a 2.5% quantile endpoint is about 0.7% of the width per
side (Efron & Tibshirani 1993, ch. 19), so 6% is over 5 s.d. of the difference;
BCa adds the noise of its bias estimate."""


@dataclass(frozen=True)
class Gap:
    """One comparison: |p ours - p scipy| and |statistic ours - statistic scipy|."""

    family: str
    p_diff: float
    stat_diff: float
    p_tolerance: float
    stat_tolerance: float
    label: str

    @property
    def ok(self) -> bool:
        return self.p_diff <= self.p_tolerance and self.stat_diff <= self.stat_tolerance


def rounded_differences(case: Case) -> np.ndarray:
    return np.round(case.b - case.a, 12)


def _relative(x: float, y: float) -> float:
    if x == y:  # equal infinities included
        return 0.0
    return abs(x - y) / max(1.0, abs(y))


def agree_t(case: Case) -> list[Gap]:
    gaps = []
    for alternative in stats.ALTERNATIVES:
        ours = stats.paired_t_test(case.a, case.b, alternative=alternative)
        ref = scipy_stats.ttest_rel(case.b, case.a, alternative=alternative)
        gaps.append(
            Gap(
                "t",
                abs(ours.p_value - float(ref.pvalue)),
                _relative(ours.statistic, float(ref.statistic)),
                EXACT_TOLERANCE,
                1e-9,
                f"{case.label} {alternative}",
            )
        )
    return gaps


def _wilcoxon_gap(
    family: str, label: str, ours: stats.TestResult, p_ref: float, stat_ref: float
) -> Gap:
    return Gap(
        family,
        abs(ours.p_value - p_ref),
        abs(ours.statistic - stat_ref),
        EXACT_TOLERANCE,
        1e-9,
        label,
    )


def agree_wilcoxon_approx(case: Case) -> list[Gap]:
    d = rounded_differences(case)
    gaps = []
    for zero_method in stats.ZERO_METHODS:
        for correction in (False, True):
            for alternative in stats.ALTERNATIVES:
                options: dict[str, Any] = dict(
                    zero_method=zero_method, correction=correction, alternative=alternative
                )
                ours = stats.wilcoxon_signed_rank(case.a, case.b, method="approx", **options)
                ref = scipy_stats.wilcoxon(d, method="asymptotic", **options)
                gaps.append(
                    _wilcoxon_gap(
                        "wilcoxon approx",
                        f"{case.label} {options}",
                        ours,
                        float(ref.pvalue),
                        float(ref.statistic),
                    )
                )
    return gaps


def _signed_rank_permutation_p(d: np.ndarray, zero_method: str, alternative: str) -> float:
    """Exact p of R+ by scipy's enumeration of all sign flips, ranks from ``scipy.stats.rankdata``.

    The ranks of ``|d|`` do not change when signs flip, so R+ is a vectorised
    function of the flipped differences; this is what ``scipy.stats.wilcoxon``
    does with a ``PermutationMethod``, minus its per-permutation re-ranking (slow).
    """
    nonzero = d != 0
    ranks = np.zeros(d.size)
    if zero_method == "wilcox":  # zeros take no rank; flipping them changes nothing
        ranks[nonzero] = scipy_stats.rankdata(np.abs(d[nonzero]))
    else:
        ranks = scipy_stats.rankdata(np.abs(d))
    constant = ranks[~nonzero].sum() / 2 if zero_method == "zsplit" else 0.0
    weights = np.where(nonzero, ranks, 0.0)

    def r_plus(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(weights * (x > 0), axis=axis) + constant

    result = scipy_stats.permutation_test(
        (d,),
        r_plus,
        permutation_type="samples",
        vectorized=True,
        n_resamples=math.inf,
        alternative=alternative,
    )
    return float(result.pvalue)


def agree_wilcoxon_exact(case: Case, *, max_wilcoxon_enumerated: int = 10) -> list[Gap]:
    """Exact p-values against scipy.

    Without ties or zeros: ``scipy.stats.wilcoxon(method="exact")`` (any n).
    With ties or zeros (n <= 16, 2^n sign vectors): scipy's exact permutation
    test of R+ (:func:`_signed_rank_permutation_p`) and, for n <=
    ``max_wilcoxon_enumerated``, ``scipy.stats.wilcoxon`` with an exhaustive
    ``PermutationMethod`` itself (about 1.5 s per call at n = 13).
    """
    d = rounded_differences(case)
    tie_free = np.count_nonzero(d == 0) == 0 and np.unique(np.abs(d)).size == d.size
    if not tie_free and d.size > 16:
        return []
    gaps = []
    for zero_method in ("wilcox",) if tie_free else stats.ZERO_METHODS:
        for alternative in stats.ALTERNATIVES:
            ours = stats.wilcoxon_signed_rank(
                case.a, case.b, zero_method=zero_method, method="exact", alternative=alternative
            )
            label = f"{case.label} {zero_method} {alternative}"
            if tie_free:
                ref = scipy_stats.wilcoxon(d, method="exact", alternative=alternative)
                references = [("table", float(ref.pvalue), float(ref.statistic))]
            else:
                statistic = scipy_stats.wilcoxon(
                    d, zero_method=zero_method, alternative=alternative, method="asymptotic"
                ).statistic
                p = _signed_rank_permutation_p(d, zero_method, alternative)
                references = [("enumerated R+", p, float(statistic))]
                if d.size <= max_wilcoxon_enumerated:
                    method = scipy_stats.PermutationMethod(n_resamples=math.inf)
                    ref = scipy_stats.wilcoxon(
                        d, zero_method=zero_method, alternative=alternative, method=method
                    )
                    references.append(("scipy wilcoxon", float(ref.pvalue), float(ref.statistic)))
            for name, p_ref, stat_ref in references:
                gaps.append(
                    _wilcoxon_gap("wilcoxon exact", f"{label} {name}", ours, p_ref, stat_ref)
                )
    return gaps


def agree_wilcoxon_auto(case: Case, *, max_wilcoxon_enumerated: int = 13) -> list[Gap]:
    """``method="auto"`` on both sides; scipy enumerates sign flips (slowly) for tied n <= 13,
    so tied cases with n > ``max_wilcoxon_enumerated`` are skipped."""
    d = rounded_differences(case)
    tied = np.count_nonzero(d == 0) > 0 or np.unique(np.abs(d)).size < d.size
    if tied and max_wilcoxon_enumerated < d.size <= 13:
        return []
    gaps = []
    for zero_method in stats.ZERO_METHODS:
        for alternative in stats.ALTERNATIVES:
            options: dict[str, Any] = dict(zero_method=zero_method, alternative=alternative)
            ours = stats.wilcoxon_signed_rank(case.a, case.b, method="auto", **options)
            ref = scipy_stats.wilcoxon(d, method="auto", **options)
            label = f"{case.label} {options}"
            gaps.append(
                _wilcoxon_gap("wilcoxon auto", label, ours, float(ref.pvalue), float(ref.statistic))
            )
    return gaps


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y - x, axis=axis)


def _permutation_reference(case: Case, n_resamples: float, alternative: str, seed: int) -> float:
    """scipy's paired permutation test of mean(b - a), on exact integers when the data allow."""
    a, b = integer_scaled(case.a), integer_scaled(case.b)
    if a is None or b is None:
        a, b = case.a, case.b
    result = scipy_stats.permutation_test(
        (a, b),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative=alternative,
        rng=seed,
    )
    return float(result.pvalue)


def monte_carlo_tolerance(p: float, n_ours: int, n_ref: float, alternative: str) -> float:
    """5 s.d. of the difference of two independent Monte Carlo p-values, plus one resample.

    Each estimate has variance p(1 - p) / B (binomial share); a two-sided
    p-value doubles the smaller tail, doubling its s.d.
    """
    tail = p / 2 if alternative == "two-sided" else p
    tail = min(max(tail, 1.0 / n_ours), 1.0 - 1.0 / n_ours)
    variance = tail * (1 - tail) * (1.0 / n_ours + (1.0 / n_ref if n_ref < math.inf else 0.0))
    scale = 2.0 if alternative == "two-sided" else 1.0
    return scale * (5.0 * math.sqrt(variance) + 1.0 / n_ours)


def agree_randomisation_exact(case: Case) -> list[Gap]:
    """n <= 13 (2^n <= 10,000): both enumerate every sign vector."""
    if case.n > 13:
        return []
    gaps = []
    for alternative in stats.ALTERNATIVES:
        ours = stats.randomisation_test(case.a, case.b, alternative=alternative)
        p_ref = _permutation_reference(case, 10000, alternative, seed=0)
        observed = float(np.mean(case.b - case.a))
        gaps.append(
            Gap(
                "randomisation exact",
                abs(ours.p_value - p_ref),
                abs(ours.statistic - observed),
                EXACT_TOLERANCE,
                1e-12,
                f"{case.label} {alternative}",
            )
        )
    return gaps


def agree_randomisation_monte_carlo(case: Case, n_resamples: int = 10000) -> list[Gap]:
    """n > 13: our Monte Carlo p against scipy's (exact when 2^n fits in 2^16)."""
    if case.n <= 13:
        return []
    exact_ref = case.n <= 16
    n_ref = math.inf if exact_ref else n_resamples
    gaps = []
    for alternative in stats.ALTERNATIVES:
        ours = stats.randomisation_test(
            case.a, case.b, n_resamples=n_resamples, seed=case.seed, alternative=alternative
        )
        p_ref = _permutation_reference(case, n_ref, alternative, seed=case.seed + 1)
        gaps.append(
            Gap(
                "randomisation Monte Carlo",
                abs(ours.p_value - p_ref),
                abs(ours.statistic - float(np.mean(case.b - case.a))),
                monte_carlo_tolerance(p_ref, n_resamples, n_ref, alternative),
                1e-12,
                f"{case.label} {alternative} vs {'exact' if exact_ref else 'Monte Carlo'}",
            )
        )
    return gaps


MIN_CI_PAIRS = 8


def atom_spacing(distribution: np.ndarray, quantile: float) -> float:
    """Distance between the distinct bootstrap values either side of ``quantile``.

    The bootstrap distribution of a mean is discrete: of 0/1 or graded values it
    lives on a lattice, and of n continuous values it has at most C(2n-1, n)
    atoms (126 for n = 5), sparse in the tails. A Monte Carlo quantile can land
    on the neighbouring atom with the other side's resamples; that jump is
    allowed on top of the share of the width.
    """
    atoms = np.unique(np.round(distribution, 12))
    i = int(np.clip(np.searchsorted(atoms, quantile), 0, atoms.size - 1))
    return float(atoms[min(i + 1, atoms.size - 1)] - atoms[max(i - 1, 0)])


def agree_bootstrap_ci(case: Case, n_resamples: int = 10000) -> list[Gap]:
    """CI of the candidate's mean and paired CI of mean(b - a), each method.

    ``p_diff`` holds the larger endpoint gap and ``p_tolerance`` its allowance
    (``CI_TOLERANCE`` x width + :func:`atom_spacing` at the endpoints' quantiles);
    ``stat_diff`` the estimate gap.

    Samples under :data:`MIN_CI_PAIRS` values are skipped: their bootstrap
    distributions are so coarse that Monte Carlo endpoints jump several atoms
    (scipy against itself with another seed: BCa low -0.15 vs -0.12 at n = 5).
    """
    if case.n < MIN_CI_PAIRS:
        return []
    gaps = []
    for values, what in ((case.b, "mean(b)"), (case.b - case.a, "mean(b - a)")):
        if np.ptp(values) == 0:
            continue
        for method in stats.CI_METHODS:
            if what == "mean(b)":
                ours = stats.bootstrap_ci(
                    values, method=method, n_resamples=n_resamples, seed=case.seed
                )
            else:
                ours = stats.paired_bootstrap_ci(
                    case.a, case.b, method=method, n_resamples=n_resamples, seed=case.seed
                )
            result = scipy_stats.bootstrap(
                (values,), np.mean, method=method, n_resamples=n_resamples, rng=case.seed + 1
            )
            ref = result.confidence_interval
            width = float(ref.high - ref.low)
            quantiles = [float(ref.low), float(ref.high)]
            if method == "basic":  # endpoints are 2 * estimate - quantile
                quantiles = [2 * float(np.mean(values)) - q for q in quantiles]
            spacing = max(atom_spacing(result.bootstrap_distribution, q) for q in quantiles)
            gap = max(abs(ours.low - float(ref.low)), abs(ours.high - float(ref.high)))
            gaps.append(
                Gap(
                    f"bootstrap CI {method}",
                    gap,
                    abs(ours.estimate - float(np.mean(values))),
                    CI_TOLERANCE[method] * width + spacing,
                    1e-12,
                    f"{case.label} {what}",
                )
            )
    return gaps


FAMILIES = {
    "t": agree_t,
    "wilcoxon approx": agree_wilcoxon_approx,
    "wilcoxon exact": agree_wilcoxon_exact,
    "wilcoxon auto": agree_wilcoxon_auto,
    "randomisation exact": agree_randomisation_exact,
    "randomisation Monte Carlo": agree_randomisation_monte_carlo,
    "bootstrap CI": agree_bootstrap_ci,
}
