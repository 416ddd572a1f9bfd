"""``vote``: a few more from each source, more weight to multi-source chunks.

The "basic" ensemble rung (docs/stages.md#vote): take slightly more results
from each source, and weight more heavily the results retrieved by several
sources.
It is a weighted vote in the family of CombMNZ (Fox & Shaw, "Combination of
Multiple Searches", TREC-2, 1994), reduced to its vote count: a source's
score only says *whether* it backs a chunk, never by how much.

Each source ``s`` (weight ``w_s``, default 1) votes for the chunks in its top
``depth`` (1-based ``rank_s(d) <= depth``, ranks as :meth:`Run.ranked`)::

    V(d)  = Σ_s w_s · [rank_s(d) <= depth]                       (the vote)
    T(d)  = 1 - min_{s votes for d} (rank_s(d) - 1) / depth      (∈ (0, 1])
    score(d) = V(d) + ε · T(d)

``T`` is the best (lowest) normalised rank among the voters, turned into a
bonus, and ``ε = g / 2`` where ``g`` is the smallest positive difference
between two sums of distinct subsets of the weights (``g = 1`` for unit
weights, so ``score = count + T / 2``). Since ``ε · T <= g / 2 < g``, the vote
always dominates and the rank only breaks ties between equal votes — unlike
``rrf``, where one top rank can outweigh a second source. Remaining ties
break by chunk id.

Only chunks voted for by some source with a positive weight are candidates
(a zero-weight source is ignored); the list is cut at ``k``. ``depth``
defaults to ``ceil(2 · k / n)`` for ``n`` sources ("a few more" than
``concat``'s equal share ``k / n``), and may be set to a fixed number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from pydantic import field_validator

from retrieval_bench.contracts.fusion import Fusion, query_ids, resolve_weights
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.types import Run

_ROUND = 12  # decimals: sums of weights closer than this count as equal


def default_depth(k: int, n_sources: int) -> int:
    """``ceil(2k / n)``, at least 1: twice the equal share of each source."""
    return max(1, math.ceil(2 * k / max(1, n_sources)))


def tie_scale(weights: Sequence[float]) -> float:
    """``ε``: half the smallest positive gap between sums of subsets of ``weights``.

    Sums are rounded to 12 decimals so that float noise (0.1 + 0.2 vs 0.3) is
    not mistaken for a real gap. With no positive gap at all, ``ε = 0.5``.
    """
    positive = [w for w in weights if w > 0]
    if len(positive) > 16:  # 2^n subsets: fall back to a tiny, safe-for-practice scale
        return 0.5 * min(positive) * 1e-6
    sums = sorted(
        {
            round(math.fsum(c), _ROUND)
            for r in range(len(positive) + 1)
            for c in combinations(positive, r)
        }
    )
    gaps = [b - a for a, b in zip(sums, sums[1:], strict=False) if b - a > 0]
    return 0.5 * min(gaps) if gaps else 0.5


class VoteFusion(Fusion):
    """Weighted vote over each source's top ``depth``, ties by best rank.

    Parameters:
        depth: how many of each source's results vote (default ``ceil(2k / n)``).
        weights: ``{run name: weight}``; missing names weigh 1.0.
        name: the name of the fused run.
    """

    class Params(StageParams):
        depth: int | None = None
        weights: dict[str, float] | None = None

        @field_validator("depth", mode="before")
        @classmethod
        def _positive_integer(cls, depth: object) -> object:
            if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
                raise ValueError(f"vote: depth must be a positive integer, not {depth!r}")
            if depth is not None and depth < 1:
                raise ValueError(f"vote: depth must be >= 1, not {depth}")
            return depth

    params: VoteFusion.Params

    def __init__(
        self, params: VoteFusion.Params | None = None, /, *, name: str = "vote", **values: Any
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name
        self.depth = p.depth
        self.weights = dict(p.weights) if p.weights else None

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Fuse ``runs`` into the top ``k`` chunks per query."""
        ws = resolve_weights(runs, self.weights, "vote")
        voters = [(run, w) for run, w in zip(runs, ws, strict=True) if w > 0]
        depth = self.depth if self.depth is not None else default_depth(k, len(runs))
        eps = tie_scale([w for _, w in voters])
        fused: dict[str, dict[str, float]] = {}
        for q in query_ids(runs):
            votes: dict[str, float] = {}
            best: dict[str, int] = {}
            for run, w in voters:
                for rank, cid in enumerate(run.ids(q, depth), start=1):
                    votes[cid] = votes.get(cid, 0.0) + w
                    best[cid] = min(best.get(cid, rank), rank)
            fused[q] = {cid: v + eps * (1.0 - (best[cid] - 1) / depth) for cid, v in votes.items()}
        return Run(self.name, fused).truncated(k)
