"""Seeded paired samples for the statistics tests and ``benchmarks/agreement/stats.py``.

Three kinds of per-query metric values, as a run comparison sees them:

- ``"continuous"``: normal scores (no ties, no zero differences);
- ``"binary"``: 0/1 values such as Hit@k (heavy ties, many zero differences);
- ``"graded"``: values on a 0.05 grid in [0, 1] such as nDCG or F1 over few
  gold files (ties, zeros, and float noise in ``b - a``).

This module holds no tests; it is named ``test_stats_*`` only because the
statistics tests own that file pattern.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

KINDS = ("continuous", "binary", "graded")
GRID = 20
"""Graded values are multiples of 1 / GRID."""


def paired_sample(
    kind: str, n: int, seed: int, shift: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) of ``n`` pairs; the candidate is better by about ``shift``."""
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        a = rng.normal(0.5, 0.2, n)
        return a, a + rng.normal(shift, 0.15, n)
    if kind == "binary":
        p = rng.uniform(0.2, 0.8, n)
        a = (rng.random(n) < p).astype(float)
        b = (rng.random(n) < np.clip(p + shift, 0.0, 1.0)).astype(float)
        return a, b
    if kind == "graded":
        levels = rng.integers(0, GRID + 1, n)
        step = rng.integers(-3, 4, n) * (rng.random(n) < 0.6) + round(shift * GRID)
        return levels / GRID, np.clip(levels + step, 0, GRID) / GRID
    raise ValueError(f"unknown kind {kind!r}")


def integer_scaled(values: np.ndarray) -> np.ndarray | None:
    """``values`` times GRID as exact integers when they lie on the grid, else None.

    scipy's permutation test compares floats with a tolerance proportional to
    the observed statistic, which is zero when the observed mean is zero in
    exact arithmetic but ~1e-17 in floats; on integers its arithmetic is exact.
    """
    scaled = values * GRID
    rounded = np.round(scaled)
    return rounded if np.allclose(scaled, rounded, atol=1e-9, rtol=0) else None


SIZES = (5, 6, 8, 10, 13, 20, 30, 50, 80, 200, 500)
"""Numbers of pairs the cases cycle through."""
SHIFTS = (0.0, 0.03, 0.1)


@dataclass(frozen=True)
class Case:
    kind: str
    n: int
    seed: int
    shift: float
    a: np.ndarray
    b: np.ndarray

    @property
    def label(self) -> str:
        return f"{self.kind} n={self.n} seed={self.seed} shift={self.shift}"


def cases(count: int, *, max_n: int = 500, first_seed: int = 0) -> Iterator[Case]:
    """``count`` seeded cases cycling through kinds, sizes (<= max_n) and shifts.

    Cases whose differences are all zero are skipped (every test returns p = 1
    there by design, while scipy returns NaN for some).
    """
    sizes = [n for n in SIZES if n <= max_n]
    made, seed = 0, first_seed
    while made < count:
        kind = KINDS[seed % len(KINDS)]
        n = sizes[(seed // len(KINDS)) % len(sizes)]
        shift = SHIFTS[seed % len(SHIFTS)]
        a, b = paired_sample(kind, n, seed, shift)
        seed += 1
        if np.any(a != b):
            made += 1
            yield Case(kind, n, seed - 1, shift, a, b)
