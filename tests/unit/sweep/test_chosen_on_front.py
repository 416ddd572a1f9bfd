"""The sweep's chosen cell is on its own Pareto front (issue 19 item 9): the ranking's
tie-break on seconds, the stored row and the web UI's front use one rounding."""

from __future__ import annotations

import random

from retrieval_bench.config import parse_config
from retrieval_bench.store.sweeps import SweepCellRecord
from retrieval_bench.sweep.grid import Cell
from retrieval_bench.sweep.ranking import CellScore, PhaseCell, rank_cells
from retrieval_bench.web.sweeps import pareto_cells

CONFIG = parse_config(
    {"name": "s", "datasets": [{"name": "d", "questions": "q.jsonl"}],
     "retrievers": [{"name": "bm25"}]}
)  # fmt: skip


def _score(index: int, seconds: float, values: list[float]) -> CellScore:
    cell = Cell(index, f"cell-{index}", {}, CONFIG)
    score = CellScore(cell, "select", PhaseCell(index, CONFIG, cost={"seconds": seconds}),
                      "Acc@5", "bm25")  # fmt: skip
    score.values = {f"q{i}": v for i, v in enumerate(values)}
    score.mean = sum(values) / len(values)
    return score


def _front(ranked: list[CellScore]) -> list[int]:
    rows = [SweepCellRecord(s.cell.index, "select:dev", s.cell.label, {}, None, s.status, None,
                            s.row()) for s in ranked]  # fmt: skip
    return pareto_cells(rows)


def test_equal_means_and_sub_millisecond_seconds() -> None:
    """Cell 0 is 0.1 ms slower: to the millisecond both cost 1.000 s, so the lower number
    wins; the front must not then drop it for being 0.1 ms slower."""
    ranked = rank_cells([_score(0, 1.0002, [1.0, 0.0]), _score(1, 1.0001, [1.0, 0.0])])
    assert ranked[0].cell.index == 0
    assert ranked[0].row()["seconds"] == ranked[1].row()["seconds"] == 1.0
    assert 0 in _front(ranked)


def test_the_chosen_cell_is_always_on_the_front() -> None:
    rng = random.Random(0)
    for _ in range(300):
        scores = [
            _score(i, 1.0 + rng.choice([0.0, 0.0001, 0.0004, 0.0006, 0.001, 0.5]),
                   [float(rng.random() < 0.5) for _ in range(4)])
            for i in range(rng.randint(2, 6))
        ]  # fmt: skip
        ranked = rank_cells(scores)
        assert ranked[0].cell.index in _front(ranked)
