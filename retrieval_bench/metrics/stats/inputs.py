"""Validation of the numbers handed to the tests, with one-line errors
(docs/metrics.md#statistics).

Every public function of :mod:`retrieval_bench.metrics.stats` goes through
here, so that bad input fails the same way everywhere: a ``ValueError`` naming
the argument and the problem (lengths differ, fewer than two pairs, NaN or
infinity, non-numeric or non-1-D data, unknown option).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Values = Sequence[float] | NDArray[Any]
"""What the functions accept: a sequence of numbers or a 1-D numpy array."""
ALTERNATIVES = ("two-sided", "greater", "less")


def as_values(values: Any, name: str, *, min_size: int = 2) -> FloatArray:
    """``values`` as a 1-D float64 array of finite numbers with at least ``min_size`` items."""
    if isinstance(values, str | bytes):
        raise ValueError(f"{name} must be a sequence of numbers, not a string")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:  # ragged nesting and the like
        raise ValueError(f"{name} must be a flat sequence of numbers ({error})") from None
    if array.dtype.kind == "O":  # e.g. Decimal or Fraction objects, or a None among numbers
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must contain only numbers (found non-numeric values)"
            ) from None
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must contain only numbers (got {array.dtype} values)")
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (got shape {array.shape})")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(
            f"{name} contains NaN, None or infinity (first at index {bad}); "
            "drop or impute missing values first"
        )
    if array.size < min_size:
        raise ValueError(f"{name} needs at least {min_size} values (got {array.size})")
    return array


def paired_differences(a: Any, b: Any) -> FloatArray:
    """``b - a`` for two paired sequences of finite numbers of equal length (>= 2 pairs)."""
    baseline = as_values(a, "a (baseline)", min_size=0)
    candidate = as_values(b, "b (candidate)", min_size=0)
    if baseline.size != candidate.size:
        raise ValueError(
            f"a and b must be paired, i.e. have the same length (got {baseline.size} "
            f"and {candidate.size})"
        )
    if baseline.size < 2:
        raise ValueError(f"a and b need at least 2 pairs to compare (got {baseline.size})")
    return candidate - baseline


def check_choice(value: str, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))} (got {value!r})")
    return value


def check_alternative(alternative: str) -> str:
    return check_choice(alternative, "alternative", ALTERNATIVES)


def check_n_resamples(n_resamples: int) -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise ValueError(f"n_resamples must be an integer (got {n_resamples!r})")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1 (got {n_resamples})")
    return int(n_resamples)


def check_confidence(confidence: float) -> float:
    if not (isinstance(confidence, int | float) and 0.0 < confidence < 1.0):
        raise ValueError(
            f"confidence must be a number strictly between 0 and 1 (got {confidence!r})"
        )
    return float(confidence)
