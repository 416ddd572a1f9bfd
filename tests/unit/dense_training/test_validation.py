"""``fit-dense --holdout``: the temporal split and the held-out comparison of a trained
model with its base (docs/stages.md#validating-on-held-out-questions), with
hand-made vectors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from retrieval_bench.cli import main
from retrieval_bench.dense_training.documents import Document
from retrieval_bench.dense_training.questions import TrainingQuestion
from retrieval_bench.dense_training.validation import (
    best_positive_ranks,
    split_newest,
    summarize,
    validate,
)
from retrieval_bench.metrics.stats.randomisation import randomisation_test

BASE = {"q": 0.0, "p1": 0.6, "p2": 0.9, "n1": 0.2, "n2": 0.5, "n3": 0.7, "n4": 1.2}
"""Angles: cosine to ``q`` falls as the angle grows."""


def _embedder(angles: dict[str, float]) -> Callable[[list[str]], np.ndarray]:
    def embed(texts: list[str]) -> np.ndarray:
        return np.array([[np.cos(angles[t]), np.sin(angles[t])] for t in texts])

    return embed


def _question(qid: str, repo: str, positives: list[str], pool: list[str]) -> TrainingQuestion:
    return TrainingQuestion(
        qid, repo, "c" * 40, "q",
        tuple(Document(f"a.py:{t}", t) for t in positives),
        tuple(Document(f"b.py:{t}", t) for t in pool),
    )  # fmt: skip


def _repo(repo: str, n: int) -> list[TrainingQuestion]:
    return [_question(f"{repo}-{i}", repo, ["p1"], ["n1"]) for i in range(n)]


def test_the_newest_questions_of_each_repository_are_held_out() -> None:
    questions = _repo("a", 10) + _repo("b", 3) + _repo("c", 1)
    train, held = split_newest(questions, 0.25)
    # ceil(.25 · 10) = 3 of a, ceil(.75) = 1 of b, none of c (a repository keeps one)
    assert [q.id for q in held] == ["a-7", "a-8", "a-9", "b-2"]
    assert [q.id for q in train] == [f"a-{i}" for i in range(7)] + ["b-0", "b-1", "c-0"]
    assert split_newest(questions, 0.0) == (questions, [])
    assert [q.id for q in split_newest(_repo("a", 4), 0.99)[1]] == ["a-1", "a-2", "a-3"]
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        split_newest(questions, 1.0)


def test_a_question_ranks_by_its_best_positive_over_its_pool() -> None:
    one = _question("x", "r", ["p1", "p2"], ["n1", "n2", "n3", "n4"])
    two = _question("y", "r", ["p2"], ["n1", "n2", "n3", "n4"])
    embed = _embedder(BASE)
    # p1 (0.6) has n1 and n2 above it: rank 3; p2 (0.9) has n1, n2 and n3 above it: rank 4
    assert best_positive_ranks([one, two], embed, embed) == [3, 4]
    assert summarize([3, 4]) == {"MRR": round((1 / 3 + 1 / 4) / 2, 4), "Acc@1": 0.0, "Acc@5": 1.0}
    assert summarize([1, 6]) == {"MRR": round((1 + 1 / 6) / 2, 4), "Acc@1": 0.5, "Acc@5": 0.5}


def test_validation_compares_the_trained_model_with_its_base() -> None:
    questions = [
        _question("x", "r", ["p1"], ["n1", "n2", "n3", "n4"]),
        _question("y", "s", ["p2"], ["n1", "n2", "n3", "n4"]),
        _question("z", "s", ["p1"], ["n4"]),
    ]
    trained = dict(BASE, p1=0.1, q=0.0)  # moves p1 to the front; p2 stays fourth
    seen: list[list[str]] = []

    def trained_query(texts: list[str]) -> np.ndarray:
        seen.append(texts)
        return _embedder(trained)(texts)

    report = validate(questions, _embedder(BASE), trained_query, _embedder(trained))
    assert seen == [["q", "q", "q"]]  # the questions, each once, through the query side
    assert report["questions"] == 3 and report["repositories"] == {"r": 1, "s": 2}
    assert report["median_candidates"] == 5
    base_rr, trained_rr = [1 / 3, 1 / 4, 1.0], [1.0, 1 / 4, 1.0]
    assert report["base"] == summarize([3, 4, 1]) and report["trained"] == summarize([1, 4, 1])
    assert report["delta_MRR"] == round(np.mean(trained_rr) - np.mean(base_rr), 4)
    assert report["p_MRR"] == round(randomisation_test(base_rr, trained_rr).p_value, 4)


@pytest.mark.parametrize("value", ["1", "-0.1", "half"])
def test_a_holdout_outside_zero_to_one_is_refused(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["fit-dense", "x.bundle", "--out", "m", "--holdout", value])
    assert exit_info.value.code == 2
    assert "--holdout" in capsys.readouterr().err
