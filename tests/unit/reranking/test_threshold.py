"""Threshold sweep: hand-computed file-level P/R/F1 of the candidates kept at each t."""

from __future__ import annotations

import pytest

from retrieval_bench.reranking.llm import LLMYesNoReranker
from retrieval_bench.reranking.threshold import (
    ThresholdRow,
    best_threshold,
    default_thresholds,
    threshold_sweep,
)
from retrieval_bench.types import Example, Run
from tests.fakes.llm import ScriptedLLM
from tests.unit.reranking.helpers import by_mark, chunk, corpus_of, input_run

CORPUS = corpus_of(
    [chunk("a1", "a.py"), chunk("a2", "a.py"), chunk("b1", "b.py"), chunk("c1", "c.py")]
)
RUN = Run(
    "llm-logprob",
    {
        "q1": {"a1": 0.9, "b1": 0.6, "c1": 0.3, "a2": 0.05},
        "q2": {"b1": 0.8, "c1": 0.2},
    },
)
EXAMPLES = [Example("q1", "?", ("a.py", "c.py")), Example("q2", "?", ("b.py",))]


def row(rows: list[ThresholdRow], t: float) -> ThresholdRow:
    return next(r for r in rows if r.threshold == t)


def prf(r: ThresholdRow) -> tuple[float, float, float]:
    return r.P, r.R, r.F1


def test_sweep_hand_computed() -> None:
    rows = threshold_sweep(RUN, EXAMPLES, CORPUS, thresholds=[1.0, 0.5, 0.0, 0.7, 0.5])
    assert [r.threshold for r in rows] == [0.0, 0.5, 0.7, 1.0]
    # t=0: q1 keeps a,b,c files → P 2/3 R 1 F1 0.8; q2 keeps b,c → P 1/2 R 1 F1 2/3
    r0 = row(rows, 0.0)
    assert prf(r0) == pytest.approx((7 / 12, 1.0, (0.8 + 2 / 3) / 2))
    assert (r0.kept, r0.kept_files, r0.n_queries) == (3.0, 2.5, 2)
    # t=0.5: q1 keeps a,b → P .5 R .5 F1 .5; q2 keeps b → 1, 1, 1
    r5 = row(rows, 0.5)
    assert (r5.P, r5.R, r5.F1, r5.kept, r5.kept_files) == pytest.approx(
        (0.75, 0.75, 0.75, 1.5, 1.5)
    )
    # t=0.7: q1 keeps a → P 1 R .5 F1 2/3; q2 keeps b → 1, 1, 1
    r7 = row(rows, 0.7)
    assert (r7.P, r7.R, r7.F1, r7.kept) == pytest.approx((1.0, 0.75, 5 / 6, 1.0))
    r10 = row(rows, 1.0)
    assert (r10.P, r10.R, r10.F1, r10.kept, r10.kept_files) == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert best_threshold(rows).threshold == 0.7
    assert best_threshold(rows, "P").threshold == 0.7
    assert best_threshold(rows, "R").threshold == 0.0
    assert r7.to_dict()["F1"] == pytest.approx(5 / 6)


def test_examples_missing_from_the_run_score_zero() -> None:
    examples = [*EXAMPLES, Example("q3", "?", ("a.py",))]
    (r,) = threshold_sweep(RUN, examples, CORPUS, thresholds=[0.7])
    assert (r.P, r.R, r.F1, r.kept) == pytest.approx((2 / 3, 0.5, 5 / 9, 2 / 3))
    assert r.n_queries == 3


def test_default_grid() -> None:
    assert default_thresholds([0.2, 1.0, 0.0]) == [i / 10 for i in range(11)]
    assert default_thresholds([]) == [i / 10 for i in range(11)]
    logits = [-3.0, -1.0, 0.5, 2.0, 4.0]
    grid = default_thresholds(logits)
    assert grid == sorted(set(grid)) and set(grid) <= set(logits)
    assert grid[0] == -3.0 and grid[-1] == 4.0
    rows = threshold_sweep(Run("ce", {"q1": {"a1": 4.0, "c1": -3.0}}), EXAMPLES[:1], CORPUS)
    assert [r.threshold for r in rows] == [-3.0, 4.0]
    assert rows[0].R == 1.0 and rows[1].R == 0.5


def test_best_threshold_ties_and_errors() -> None:
    rows = [
        ThresholdRow(0.2, 0.5, 0.5, 0.5, 3, 2, 1),
        ThresholdRow(0.1, 0.4, 0.6, 0.5, 4, 3, 1),
        ThresholdRow(0.9, 0.1, 0.1, 0.1, 1, 1, 1),
    ]
    assert best_threshold(rows).threshold == 0.1  # equal F1: the lowest threshold
    with pytest.raises(ValueError, match="metric"):
        best_threshold(rows, "MRR")
    with pytest.raises(ValueError, match="no threshold rows"):
        best_threshold([])


def test_sweep_over_a_yesno_run_keeps_tied_yes_at_1() -> None:
    rr = LLMYesNoReranker(llm=ScriptedLLM(by_mark({"a1": "Yes", "c1": "Yes", "b1": "No"})))
    run = rr.rerank({"q1": "x"}, input_run({"q1": ["a1", "b1", "c1"]}), CORPUS, k=10)
    rows = threshold_sweep(run, EXAMPLES[:1], CORPUS)
    assert len(rows) == 11
    assert row(rows, 1.0).kept == 2 and row(rows, 1.0).F1 == 1.0  # both "yes" despite ulps
    assert row(rows, 0.0).kept == 3
    assert best_threshold(rows).threshold == 0.1
