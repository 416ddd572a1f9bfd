"""Bootstrap confidence intervals: percentile, basic and BCa.

Efron & Tibshirani (1993), *An Introduction to the Bootstrap*: resample the
values with replacement ``n_resamples`` times (seeded
``numpy.random.default_rng``), compute the statistic on each resample, and read
the interval from the bootstrap distribution ``theta*`` with ``alpha = (1 -
confidence) / 2`` and linear-interpolation quantiles ``q``:

- ``"percentile"`` (§13.3): ``[q(alpha), q(1 - alpha)]``;
- ``"basic"`` (reverse percentile; Davison & Hinkley 1997, §5.2):
  ``[2 theta - q(1 - alpha), 2 theta - q(alpha)]``;
- ``"bca"`` (bias-corrected and accelerated, §14.3, eq. 14.10-14.15):
  ``[q(a1), q(a2)]`` with ``a_i = Phi(z0 + (z0 + z_i) / (1 - acc (z0 + z_i)))``,
  bias ``z0 = Phi^-1(share of theta* below theta)`` (ties counted half, as
  scipy) and acceleration ``acc = sum(U^3) / (6 sum(U^2)^1.5)`` from the
  jackknife influence values ``U``.

Same definitions as ``scipy.stats.bootstrap``; the resamples differ, so the
two agree only up to Monte Carlo error. Degenerate cases, where scipy returns
NaN with a warning: all values equal gives ``[v, v]`` for every method; BCa
whose bias term is infinite (the estimate outside the bootstrap distribution)
falls back to the percentile interval, reported as ``method="percentile"``;
zero jackknife spread gives acceleration 0.

Resampling is done in blocks (:func:`.resampling.chunk_sizes`), so 10,000
resamples of 10,000 values never hold 10^8 numbers at once.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from retrieval_bench.metrics.stats.inputs import (
    FloatArray,
    Values,
    as_values,
    check_choice,
    check_confidence,
    check_n_resamples,
)
from retrieval_bench.metrics.stats.resampling import chunk_sizes, generator
from retrieval_bench.metrics.stats.results import Interval

CI_METHODS = ("percentile", "basic", "bca")
RowStatistic = Callable[[FloatArray], FloatArray]
"""A statistic applied to each row of a 2-D array."""


def bootstrap_ci(
    values: Values,
    *,
    statistic: str | Callable[..., Any] = "mean",
    confidence: float = 0.95,
    n_resamples: int = 10000,
    method: str = "percentile",
    seed: int | np.random.Generator | None = 0,
) -> Interval:
    """Two-sided bootstrap confidence interval of ``statistic`` over ``values``.

    ``statistic`` is ``"mean"``, ``"median"`` or a callable on a 1-D array
    returning a number; a callable with an ``axis`` parameter (``np.mean``,
    ``np.median``) is called once per block of resamples with ``axis=-1``.
    """
    x = as_values(values, "values")
    confidence = check_confidence(confidence)
    n_resamples = check_n_resamples(n_resamples)
    check_choice(method, "method", CI_METHODS)
    row_statistic = rowwise(statistic)
    estimate = float(row_statistic(x[None, :])[0])
    if not math.isfinite(estimate):
        raise ValueError(f"statistic returned {estimate} on the values; it must be finite")
    if np.ptp(x) == 0.0:
        return Interval(estimate, estimate, estimate, confidence, method)

    thetas = bootstrap_distribution(x, row_statistic, n_resamples, generator(seed))
    alpha = (1.0 - confidence) / 2.0
    if method == "bca":
        levels = _bca_levels(x, statistic, row_statistic, estimate, thetas, alpha)
        if levels is None:
            method = "percentile"
        else:
            low, high = np.quantile(thetas, levels)
            return Interval(estimate, float(low), float(high), confidence, method)
    low, high = np.quantile(thetas, [alpha, 1.0 - alpha])
    if method == "basic":
        low, high = 2.0 * estimate - high, 2.0 * estimate - low
    return Interval(estimate, float(low), float(high), confidence, method)


def rowwise(statistic: str | Callable[..., Any]) -> RowStatistic:
    """``statistic`` as a function of a 2-D array returning one value per row."""
    if statistic == "mean":
        return lambda rows: rows.mean(axis=-1)
    if statistic == "median":
        return lambda rows: np.median(rows, axis=-1)
    if isinstance(statistic, str) or not callable(statistic):
        raise ValueError(f"statistic must be 'mean', 'median' or a callable (got {statistic!r})")
    function = statistic
    try:
        vectorised = "axis" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # some builtins have no signature
        vectorised = False
    if vectorised:
        return lambda rows: np.asarray(function(rows, axis=-1), dtype=np.float64)
    return lambda rows: np.array([float(function(row)) for row in rows], dtype=np.float64)


def bootstrap_distribution(
    x: FloatArray, row_statistic: RowStatistic, n_resamples: int, rng: np.random.Generator
) -> FloatArray:
    """The statistic on ``n_resamples`` resamples (with replacement) of ``x``, in blocks."""
    n = x.size
    out = np.empty(n_resamples, dtype=np.float64)
    done = 0
    for rows in chunk_sizes(n_resamples, n, item_bytes=12):  # int32 index + float64 value
        indices = rng.integers(0, n, size=(rows, n), dtype=np.int32)
        out[done : done + rows] = row_statistic(x[indices])
        done += rows
    return out


def jackknife_values(
    x: FloatArray, statistic: str | Callable[..., Any], row_statistic: RowStatistic
) -> FloatArray:
    """The statistic on each leave-one-out sample of ``x`` (closed form for the mean)."""
    n = x.size
    if statistic == "mean":
        return (x.sum() - x) / (n - 1)
    out = np.empty(n, dtype=np.float64)
    kept = np.arange(n - 1)
    start = 0
    for rows in chunk_sizes(n, n - 1, item_bytes=16):
        left_out = np.arange(start, start + rows)[:, None]
        indices = kept + (kept >= left_out)  # row i: every position except i
        out[start : start + rows] = row_statistic(x[indices])
        start += rows
    return out


def _bca_levels(
    x: FloatArray,
    statistic: str | Callable[..., Any],
    row_statistic: RowStatistic,
    estimate: float,
    thetas: FloatArray,
    alpha: float,
) -> list[float] | None:
    """BCa quantile levels ``[a1, a2]``; None when the bias correction is infinite."""
    below = np.count_nonzero(thetas < estimate) + np.count_nonzero(thetas <= estimate)
    share = below / (2.0 * thetas.size)
    if share <= 0.0 or share >= 1.0:
        return None
    from scipy import special  # on first use: 0.2 s to import

    z0 = float(special.ndtri(share))
    jack = jackknife_values(x, statistic, row_statistic)
    influence = jack.mean() - jack
    spread = float(np.sum(influence**2))
    acceleration = float(np.sum(influence**3)) / (6.0 * spread**1.5) if spread > 0 else 0.0
    levels = []
    for z in (float(special.ndtri(alpha)), float(special.ndtri(1.0 - alpha))):
        shifted = z0 + z
        levels.append(float(special.ndtr(z0 + shifted / (1.0 - acceleration * shifted))))
    return levels
