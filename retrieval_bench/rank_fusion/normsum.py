"""``normsum``: per-source score normalisation, then a weighted sum.

The "better" ensemble rung (docs/stages.md#normsum): make sure each source
returns quantified, normalised results, so that the sum per chunk can serve
as the total score.
This is CombSUM over normalised scores (Fox & Shaw, "Combination of Multiple
Searches", TREC-2, 1994; normalisations as compared by Lee, SIGIR 1997, and
as in ranx's ``fusion/comb_sum.py`` with ``norm=``)::

    score(d) = Σ_s w_s · norm_s(score_s(d))        (0 where s did not return d)

Normalisations, per source and per query, over the scores that source returned:

* ``"minmax"`` (default): ``(x - min) / (max - min)``; a list of equal scores
  (one result, or all tied) maps to 1.0 — each is that source's best;
* ``"zscore"``: ``(x - mean) / std`` (population std); all equal → 0.0. A
  missing chunk then counts as an average one;
* ``"max"``: ``x / max|x|``; all zero → 0.0.

Weights are ``{run name: weight}`` (default 1.0 each). Ties in the fused list
break by chunk id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import field_validator

from retrieval_bench.contracts.fusion import Fusion, query_ids, resolve_weights
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.types import Run


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """``(x - min) / (max - min)``; all-equal scores map to 1.0."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    return {cid: (s - lo) / (hi - lo) for cid, s in scores.items()}


def zscore(scores: Mapping[str, float]) -> dict[str, float]:
    """``(x - mean) / std`` with the population std; all-equal scores map to 0.0."""
    if not scores:
        return {}
    values = list(scores.values())
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    if std == 0.0:
        return dict.fromkeys(scores, 0.0)
    return {cid: (s - mean) / std for cid, s in scores.items()}


def maxnorm(scores: Mapping[str, float]) -> dict[str, float]:
    """``x / max|x|``; all-zero scores stay 0.0."""
    if not scores:
        return {}
    top = max(abs(s) for s in scores.values())
    if top == 0.0:
        return dict.fromkeys(scores, 0.0)
    return {cid: s / top for cid, s in scores.items()}


NORMALISERS: dict[str, Callable[[Mapping[str, float]], dict[str, float]]] = {
    "minmax": minmax,
    "zscore": zscore,
    "max": maxnorm,
}


class NormSumFusion(Fusion):
    """Weighted sum of per-source normalised scores.

    Parameters:
        norm: "minmax" (default), "zscore" or "max".
        weights: ``{run name: weight}``; missing names weigh 1.0.
        name: the name of the fused run.
    """

    class Params(StageParams):
        norm: str = "minmax"
        weights: dict[str, float] | None = None

        @field_validator("norm", mode="before")
        @classmethod
        def _known_norm(cls, norm: object) -> object:
            if not isinstance(norm, str) or norm not in NORMALISERS:
                raise ValueError(f"normsum: norm {norm!r} is not one of {', '.join(NORMALISERS)}")
            return norm

    params: NormSumFusion.Params

    def __init__(
        self, params: NormSumFusion.Params | None = None, /, *, name: str = "normsum", **values: Any
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name
        self.norm = p.norm
        self.weights = dict(p.weights) if p.weights else None

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Fuse ``runs`` into the top ``k`` chunks per query."""
        ws = resolve_weights(runs, self.weights, "normsum")
        normalise = NORMALISERS[self.norm]
        fused: dict[str, dict[str, float]] = {}
        for q in query_ids(runs):
            scores: dict[str, float] = {}
            for run, w in zip(runs, ws, strict=True):
                for cid, s in normalise(run.scores.get(q, {})).items():
                    scores[cid] = scores.get(cid, 0.0) + w * s
            fused[q] = scores
        return Run(self.name, fused).truncated(k)
