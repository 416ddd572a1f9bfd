"""Average ranks of absolute differences, shared by Wilcoxon and rank-biserial.

Differences are first *snapped*: rounded to 12 significant digits relative to
the largest ``|d|``, so that values equal in exact arithmetic tie even when
floating-point subtraction made them differ in the last bits (``0.6 - 0.3`` and
``0.4 - 0.1``; common with metric values such as nDCG). scipy ranks the raw
differences and its documentation advises callers to round first; for the
agreement tests scipy is given the snapped differences.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from retrieval_bench.metrics.stats.inputs import FloatArray

SNAP_DIGITS = 12


def snap_ties(d: FloatArray) -> FloatArray:
    """``d`` rounded to :data:`SNAP_DIGITS` digits relative to ``max(|d|)`` (zeros stay zero)."""
    scale = float(np.max(np.abs(d))) if d.size else 0.0
    if scale == 0.0:
        return d.copy()
    return np.round(d / scale, SNAP_DIGITS) * scale


def average_ranks(values: FloatArray) -> tuple[FloatArray, NDArray[np.int64]]:
    """Ranks 1..n of ``values`` (ties get the mean of their ranks) and the size of each tie group.

    Group sizes are listed in ascending order of value.
    """
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    sizes = np.diff(np.append(starts, ordered.size))
    # ranks starts+1 .. starts+size, averaged: start + (size + 1) / 2
    group_ranks = starts + (sizes + 1) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(group_ranks, sizes)
    return ranks, sizes.astype(np.int64)


def ranked_differences(d: FloatArray, zero_method: str) -> FloatArray:
    """The differences that take part in ranking: zeros dropped for ``"wilcox"``, kept otherwise."""
    return d[d != 0] if zero_method == "wilcox" else d
