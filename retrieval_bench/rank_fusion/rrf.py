"""``rrf``: reciprocal rank fusion (docs/stages.md#rrf).

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods", SIGIR 2009. For a chunk ``d`` and sources
``s`` with weights ``w_s`` (default 1) and 1-based ranks ``rank_s(d)``::

    score(d) = Σ_{s : d ∈ s} w_s / (k_rrf + rank_s(d)),      k_rrf = 60

A source that did not return ``d`` adds nothing. Ranks follow
:meth:`Run.ranked` (score descending, ties by chunk id), and the fused list
breaks ties by chunk id too, so the result is deterministic. RRF needs no
score calibration, which is why it sits beside the "better" ensemble rung
(``normsum``) as the common default of hybrid search engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidatorFunctionWrapHandler, field_validator

from retrieval_bench.contracts.fusion import Fusion, query_ids, resolve_weights
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.types import Run


class RRFFusion(Fusion):
    """Weighted reciprocal rank fusion.

    Parameters:
        k_rrf: the rank offset (60 in the paper; smaller favours top ranks).
        weights: ``{run name: weight}``; missing names weigh 1.0.
        name: the name of the fused run.
    """

    class Params(StageParams):
        k_rrf: float = 60.0
        weights: dict[str, float] | None = None

        @field_validator("k_rrf", mode="wrap")
        @classmethod
        def _non_negative(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> float:
            k_rrf: float = handler(value)
            if k_rrf < 0:
                raise ValueError(f"rrf: k_rrf must be >= 0, not {value}")
            return k_rrf

    params: RRFFusion.Params

    def __init__(
        self, params: RRFFusion.Params | None = None, /, *, name: str = "rrf", **values: Any
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name
        self.k_rrf = p.k_rrf
        self.weights = dict(p.weights) if p.weights else None

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Fuse ``runs`` into the top ``k`` chunks per query."""
        ws = resolve_weights(runs, self.weights, "rrf")
        fused: dict[str, dict[str, float]] = {}
        for q in query_ids(runs):
            scores: dict[str, float] = {}
            for run, w in zip(runs, ws, strict=True):
                for rank, (cid, _) in enumerate(run.ranked(q), start=1):
                    scores[cid] = scores.get(cid, 0.0) + w / (self.k_rrf + rank)
            fused[q] = scores
        return Run(self.name, fused).truncated(k)
