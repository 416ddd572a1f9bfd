"""Holm's step-down adjustment of p-values for multiple comparisons.

Holm (1979), "A simple sequentially rejective multiple test procedure",
Scand. J. Statist. 6:65-70. With the m p-values sorted ascending,
``p_(1) <= ... <= p_(m)``, the adjusted values are
``p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` (the running maximum keeps
them monotone), returned in the input order. Rejecting where ``p~ < alpha``
controls the family-wise error rate at ``alpha``. Ties keep their input order
(stable sort), which does not change the adjusted values.
"""

from __future__ import annotations

import numpy as np

from retrieval_bench.metrics.stats.inputs import Values, as_values


def holm(p_values: Values) -> list[float]:
    """Holm-adjusted p-values, in the order given (empty in, empty out)."""
    p = as_values(p_values, "p_values", min_size=0)
    if ((p < 0.0) | (p > 1.0)).any():
        bad = float(p[(p < 0.0) | (p > 1.0)][0])
        raise ValueError(f"p_values must lie in [0, 1] (got {bad})")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.maximum.accumulate(scaled) if m else scaled
    return [float(v) for v in adjusted]
