"""Shared machinery of the resampling procedures: the paired tests' common frame
(:func:`paired_resampling_test`), chunking, tie tolerance, p-values.

Resampling 10,000 times from 10,000 pairs would materialise 10^8 numbers
(800 MB as float64) if done at once; :func:`chunk_sizes` splits the resamples
into row blocks of at most :data:`CHUNK_BYTES` so memory stays flat while each
block is still processed with vectorised numpy.

Monte Carlo p-values use ``(count + 1) / (n_resamples + 1)``, which counts the
observed data as one of the resamples and is never zero (Phipson & Smyth 2010,
"Permutation p-values should never be zero", Stat. Appl. Genet. Mol. Biol. 9(1));
exact enumerations use ``count / total``. Two-sided permutation p-values are
``min(1, 2 * min(p_less, p_greater))``, as in ``scipy.stats.permutation_test``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from retrieval_bench.metrics.stats.inputs import (
    FloatArray,
    Values,
    check_alternative,
    check_n_resamples,
    paired_differences,
)
from retrieval_bench.metrics.stats.results import TestResult

CHUNK_BYTES = 32 * 2**20
"""Upper bound on the bytes of one block of resamples (per array of 8-byte items)."""

RELATIVE_TIE_TOLERANCE = 1e-12
"""Resampled statistics within this fraction of the data's scale of the observed
one count as equal to it: sums of the same numbers in another order differ in
the last bits, and ties in exact arithmetic (common with 0/1 or graded metric
values) must not be broken by rounding. scipy uses ``100 * eps * |observed|``,
which is zero when the observed statistic is zero; the scale here is
``mean(|d|)``, the largest value the statistic can take."""


def chunk_sizes(n_resamples: int, n_columns: int, item_bytes: int = 8) -> Iterator[int]:
    """Row counts of consecutive blocks covering ``n_resamples`` rows of ``n_columns`` items."""
    rows = max(1, CHUNK_BYTES // max(1, n_columns * item_bytes))
    for start in range(0, n_resamples, rows):
        yield min(rows, n_resamples - start)


def tie_tolerance(scale: float) -> float:
    return RELATIVE_TIE_TOLERANCE * scale


PValue = Callable[[FloatArray, float, float, int], float]
"""``(d, observed mean, tie tolerance, n_resamples) -> p-value`` of one resampling test."""


def paired_resampling_test(
    name: str, a: Values, b: Values, n_resamples: int, alternative: str, p_value: PValue
) -> TestResult:
    """The frame every paired resampling test of ``mean(b - a) = 0`` shares.

    Validates the pairs (``d = b - a``), ``n_resamples`` and ``alternative``; when
    every difference is zero the p-value is 1.0 without resampling; otherwise the
    test's own ``p_value`` gets the differences, their mean, the tie tolerance
    (:data:`RELATIVE_TIE_TOLERANCE` of ``mean(|d|)``) and ``n_resamples``.
    """
    d = paired_differences(a, b)
    n_resamples = check_n_resamples(n_resamples)
    check_alternative(alternative)
    n = int(d.size)
    if not d.any():
        return TestResult(name, 0.0, 1.0, n, alternative)
    observed = float(d.mean())
    tolerance = tie_tolerance(float(np.abs(d).mean()))
    return TestResult(name, observed, p_value(d, observed, tolerance, n_resamples), n, alternative)


def count_tails(null: FloatArray, observed: float, tolerance: float) -> tuple[int, int]:
    """How many null values are ``<= observed`` and ``>= observed`` (within ``tolerance``)."""
    at_most = int(np.count_nonzero(null <= observed + tolerance))
    at_least = int(np.count_nonzero(null >= observed - tolerance))
    return at_most, at_least


def tail_p_value(
    at_most: int, at_least: int, total: int, alternative: str, *, exact: bool
) -> float:
    """p-value from tail counts of a null distribution of ``total`` values.

    ``exact``: the null distribution was enumerated (``count / total``); else it
    was sampled (``(count + 1) / (total + 1)``, Phipson & Smyth 2010).
    """
    plus = 0 if exact else 1
    p_less = (at_most + plus) / (total + plus)
    p_greater = (at_least + plus) / (total + plus)
    if alternative == "less":
        return min(1.0, p_less)
    if alternative == "greater":
        return min(1.0, p_greater)
    return min(1.0, 2.0 * min(p_less, p_greater))


def generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A seeded ``numpy`` generator (a Generator passed in is used as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
