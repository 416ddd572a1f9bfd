"""Paired randomisation (sign-flip permutation) test of ``mean(b - a)``.

Under the null hypothesis the labels baseline/candidate of each pair are
exchangeable, so every difference's sign is equally likely to be flipped
(Fisher 1935; for IR evaluation, Smucker, Allan & Carterette 2007, "A
comparison of statistical significance tests for information retrieval
evaluation", CIKM). The null distribution of the mean difference is that of
``mean(s * d)`` over sign vectors ``s``:

- exact enumeration of all ``2^n`` sign vectors when ``2^n <= n_resamples``,
  p-value ``count / 2^n`` (agrees with ``scipy.stats.permutation_test(...,
  permutation_type="samples")``, which swaps the members of each pair);
- otherwise ``n_resamples`` random sign vectors from a seeded
  ``numpy.random.default_rng(seed)``, p-value ``(count + 1) / (n_resamples + 1)``
  (Phipson & Smyth 2010).

Two-sided: ``min(1, 2 * min(p_less, p_greater))``, as scipy. Sign vectors are
drawn as random bytes unpacked to bits (8 signs per random byte) and the
resampled sums computed block by block as ``sum(d) - 2 * flips @ d``
(:func:`.resampling.chunk_sizes` bounds memory). All differences zero: p 1.0
(scipy returns 1.0 as well).
"""

from __future__ import annotations

import numpy as np

from retrieval_bench.metrics.stats.inputs import FloatArray, Values
from retrieval_bench.metrics.stats.resampling import (
    chunk_sizes,
    count_tails,
    generator,
    paired_resampling_test,
    tail_p_value,
)
from retrieval_bench.metrics.stats.results import TestResult


def randomisation_test(
    a: Values,
    b: Values,
    *,
    n_resamples: int = 10000,
    seed: int | np.random.Generator | None = 0,
    alternative: str = "two-sided",
) -> TestResult:
    """Sign-flip permutation test of ``mean(b - a) = 0``; exact when ``2**n <= n_resamples``."""

    def p_value(d: FloatArray, observed: float, tolerance: float, n_resamples: int) -> float:
        exact = 2**d.size <= n_resamples
        null = _all_sign_flip_means(d) if exact else _random_sign_flip_means(d, n_resamples, seed)
        at_most, at_least = count_tails(null, observed, tolerance)
        return tail_p_value(at_most, at_least, null.size, alternative, exact=exact)

    return paired_resampling_test("randomisation", a, b, n_resamples, alternative, p_value)


def _all_sign_flip_means(d: FloatArray) -> FloatArray:
    """``mean(s * d)`` for every one of the ``2^n`` sign vectors ``s``."""
    n = d.size
    codes = np.arange(2**n, dtype=np.int64)[:, None]
    flips = ((codes >> np.arange(n, dtype=np.int64)) & 1).astype(np.float64)
    return (d.sum() - 2.0 * (flips @ d)) / n


def _random_sign_flip_means(
    d: FloatArray, n_resamples: int, seed: int | np.random.Generator | None
) -> FloatArray:
    """``mean(s * d)`` for ``n_resamples`` random sign vectors, computed in blocks."""
    rng = generator(seed)
    n = d.size
    total = d.sum()
    out = np.empty(n_resamples, dtype=np.float64)
    done = 0
    for rows in chunk_sizes(n_resamples, n):
        random_bytes = rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
        flips = np.unpackbits(random_bytes, axis=1, count=n).astype(np.float64)
        out[done : done + rows] = (total - 2.0 * (flips @ d)) / n
        done += rows
        del flips  # free this block before the next one is allocated
    return out
