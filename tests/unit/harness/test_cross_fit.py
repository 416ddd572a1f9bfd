"""Cross-fitting: a trained retriever never scores the questions it was fitted on
when its train-split runs feed a learned fusion."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.run.stages import cross_fitted_run
from retrieval_bench.types import Example, Run


class Memorizer:
    """Scores 1.0 for questions it was fitted on, 0.1 otherwise; logs every fit."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.fits: list[list[str]] = []

    def fit(self, examples: list[Example], corpus: Corpus) -> None:
        self.seen = {e.id for e in examples}
        self.fits.append(sorted(self.seen))

    def search(self, queries: dict[str, str], k: int) -> Run:
        return Run("m", {q: {"c": 1.0 if q in self.seen else 0.1} for q in queries})


def _ds(n: int) -> Any:
    examples = [Example(f"q{i}", f"question {i}", ("a.py",)) for i in range(n)]
    return SimpleNamespace(train_examples=examples, corpus=Corpus(Path("."), []))


def test_every_train_question_is_scored_out_of_sample() -> None:
    retriever = Memorizer()
    run = cross_fitted_run(retriever, _ds(7), k=5, folds=3)
    assert sorted(run.scores) == [f"q{i}" for i in range(7)]
    assert all(d == {"c": 0.1} for d in run.scores.values())  # never memorised
    assert len(retriever.fits) == 3
    for fit in retriever.fits:  # each fold trains on the other two thirds
        assert 4 <= len(fit) <= 5


def test_too_few_examples_fall_back_to_in_sample() -> None:
    retriever = Memorizer()
    run = cross_fitted_run(retriever, _ds(1), k=5)
    assert run.scores == {"q0": {"c": 1.0}}
