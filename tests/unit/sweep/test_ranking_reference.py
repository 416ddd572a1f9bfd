"""A sweep's stored ranked table does not depend on timing beyond its rank and seconds
columns (sweep/ranking.py): among equal means the chosen cell is the cheaper as
measured, but the Δ and p-values of every cell are against a reference chosen by
mean and cell number alone.

Before, the reference was the chosen cell, so whichever tied cell happened to run
faster — a loaded machine, the worker pool against this process — had no Δ/p while
the others had theirs against it: ``test_a_sweep_on_the_process_pool_equals_the_serial_one``
(tests/integration/test_sweep_executors.py) failed under load when the pool's run
chose another of its four tied cells than the serial run did.
"""

from __future__ import annotations

import itertools
from typing import Any

from retrieval_bench.config import parse_config
from retrieval_bench.sweep.grid import Cell
from retrieval_bench.sweep.ranking import CellScore, PhaseCell, rank_cells, reference_of

CONFIG = parse_config(
    {"name": "s", "datasets": [{"name": "d", "questions": "q.jsonl"}],
     "retrievers": [{"name": "bm25"}]}
)  # fmt: skip
VALUES = {
    0: [1.0, 1.0, 0.0, 1.0],
    1: [1.0, 1.0, 0.0, 1.0],  # the same answers as cell 0
    2: [1.0, 0.0, 1.0, 1.0],  # the same mean as cells 0 and 1, other answers
    3: [0.0, 1.0, 0.0, 0.0],
    4: [0.0, 0.0, 0.0, 0.0],
}
"""Per-question objective of five cells: 0, 1 and 2 tie on the best mean."""


def _score(index: int, seconds: float) -> CellScore:
    cell = Cell(index, f"cell-{index}", {}, CONFIG)
    score = CellScore(cell, "select", PhaseCell(index, CONFIG, cost={"seconds": seconds}),
                      "Acc@5", "bm25")  # fmt: skip
    score.values = {f"q{i}": v for i, v in enumerate(VALUES[index])}
    score.mean = sum(VALUES[index]) / len(VALUES[index])
    return score


def _rows(ranked: list[CellScore]) -> dict[int, dict[str, Any]]:
    """Each cell's stored row without the columns that are timing by design."""
    return {s.cell.index: {k: v for k, v in s.row().items() if k not in ("rank", "seconds")}
            for s in ranked}  # fmt: skip


def test_the_rows_do_not_depend_on_which_tied_cell_ran_faster() -> None:
    seen = []
    for seconds in itertools.permutations([1.0, 2.0, 3.0, 4.0, 5.0]):
        ranked = rank_cells([_score(i, s) for i, s in enumerate(seconds)])
        tied = [i for i in VALUES if i <= 2]
        assert ranked[0].cell.index == min(tied, key=lambda i: seconds[i])  # the cheaper
        seen.append(_rows(ranked))
    assert all(rows == seen[0] for rows in seen)
    rows = seen[0]
    assert rows[0]["delta"] is None and rows[0]["p_holm"] is None  # the reference
    assert rows[1]["delta"] == 0.0 and rows[1]["p_value"] == 1.0  # the same answers
    assert all(rows[i]["p_holm"] >= rows[i]["p_value"] for i in (1, 2, 3, 4))


def test_the_reference_is_the_best_mean_then_the_lower_cell_number() -> None:
    scores = [_score(i, 10.0 - i) for i in (4, 3, 2, 1, 0)]  # the higher number, the faster
    assert reference_of(scores).cell.index == 0
    assert reference_of(scores[:3]).cell.index == 2  # cells 4, 3, 2: 2 has the best mean
    ranked = rank_cells(scores)
    assert [s.cell.index for s in ranked] == [2, 1, 0, 3, 4]  # rank: the cheaper tie first
    assert ranked[2].delta is None and all(s.delta is not None for s in ranked if s.cell.index)


def test_without_a_tie_the_reference_is_the_chosen_cell() -> None:
    ranked = rank_cells([_score(3, 1.0), _score(2, 9.0), _score(4, 0.5)])
    assert [s.cell.index for s in ranked] == [2, 3, 4]
    assert ranked[0].delta is None and ranked[0].p_holm is None
    assert all(s.delta is not None and s.delta < 0 for s in ranked[1:])
