"""Effect sizes for paired differences ``d = b - a``.

- :func:`cohens_dz`: ``mean(d) / sd(d)`` with ddof = 1, Cohen's *d_z* for
  paired designs (Cohen 1988, *Statistical Power Analysis*, eq. 2.3.5;
  Lakens 2013, "Calculating and reporting effect sizes", Front. Psychol. 4:863,
  eq. 6). All differences zero: 0.0; constant nonzero differences: ``±inf``.
- :func:`hedges_gz`: *d_z* times Hedges' small-sample correction
  ``J(df) = Gamma(df/2) / (sqrt(df/2) Gamma((df-1)/2))``, ``df = n - 1``
  (Hedges 1981, J. Educ. Stat. 6(2), eq. 6e; Lakens 2013). Needs 3 pairs.
- :func:`rank_biserial`: matched-pairs rank-biserial correlation, the effect
  size of the Wilcoxon signed-rank test: ``(R+ - R-) / (R+ + R-)`` over the
  nonzero differences (Kerby 2014, "The simple difference formula",
  Compr. Psychol. 3:11.IT.3.1), in [-1, 1]; all differences zero: 0.0.
"""

from __future__ import annotations

import math

import numpy as np

from retrieval_bench.metrics.stats.inputs import Values, paired_differences
from retrieval_bench.metrics.stats.ranks import average_ranks, snap_ties


def cohens_dz(a: Values, b: Values) -> float:
    """Standardised mean difference of paired samples: ``mean(b - a) / sd(b - a)``."""
    d = paired_differences(a, b)
    mean = float(d.mean())
    if np.ptp(d) == 0.0:
        return 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    return mean / float(d.std(ddof=1))


def hedges_gz(a: Values, b: Values) -> float:
    """Cohen's d_z with Hedges' exact small-sample bias correction."""
    d = paired_differences(a, b)
    if d.size < 3:
        raise ValueError(f"hedges_gz needs at least 3 pairs (got {d.size})")
    df = d.size - 1
    from scipy import special  # on first use: 0.2 s to import

    correction = math.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2))
    return cohens_dz(a, b) * correction / math.sqrt(df / 2)


def rank_biserial(a: Values, b: Values) -> float:
    """Matched-pairs rank-biserial correlation (Kerby 2014), zero differences dropped."""
    d = snap_ties(paired_differences(a, b))
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return 0.0
    ranks, _ = average_ranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    r_minus = float(ranks[nonzero < 0].sum())
    return (r_plus - r_minus) / (r_plus + r_minus)
