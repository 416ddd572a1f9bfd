"""``concat``: an equal share from each retriever, interleaved.

The "naive" ensemble rung (docs/stages.md#concat): retrieve the same number
of chunks from each index so that the total adds up to what is needed — what
simple systems ship. Here the sources take turns in the order given (round-robin by rank):
on each turn a source contributes its best-ranked chunk not yet taken, so
overlap between sources does not cost any of them its share; a source that
runs out drops out and the others fill the remaining places, until ``k``.

Scores carry no information beyond the order: the chunk at 1-based position
``p`` of the fused list scores ``1 / p`` (as :meth:`Run.from_lists`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_bench.contracts.fusion import Fusion, query_ids
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.types import Run


def interleave(lists: Sequence[Sequence[str]], k: int) -> list[str]:
    """Round-robin over ``lists``, each turn taking that list's next unseen id."""
    out: list[str] = []
    seen: set[str] = set()
    cursors = [0] * len(lists)
    active = [i for i, ids in enumerate(lists) if ids]
    while active and len(out) < k:
        still: list[int] = []
        for i in active:
            ids, pos = lists[i], cursors[i]
            while pos < len(ids) and ids[pos] in seen:
                pos += 1
            if pos < len(ids) and len(out) < k:
                out.append(ids[pos])
                seen.add(ids[pos])
                pos += 1
            cursors[i] = pos
            if pos < len(ids):
                still.append(i)
        active = still
    return out


class ConcatFusion(Fusion):
    """Round-robin interleaving of the runs, de-duplicated (see module doc)."""

    params: StageParams

    def __init__(
        self, params: StageParams | None = None, /, *, name: str = "concat", **values: Any
    ) -> None:
        self.params = self.Params.of(params, **values)
        super().__init__()
        self.name = name

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Fuse ``runs`` into at most ``k`` chunks per query."""
        fused: dict[str, dict[str, float]] = {}
        for q in query_ids(runs):
            ids = interleave([run.ids(q) for run in runs], k)
            fused[q] = {cid: 1.0 / pos for pos, cid in enumerate(ids, start=1)}
        return Run(self.name, fused)
