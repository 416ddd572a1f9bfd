"""Consistency filtering, hard negatives and batches of ``rbench fit-dense``
(docs/stages.md#fit-dense), with hand-made vectors."""

from __future__ import annotations

import random

import numpy as np

from retrieval_bench.dense_training.documents import Document
from retrieval_bench.dense_training.questions import TrainingQuestion
from retrieval_bench.dense_training.selection import Instance, select
from retrieval_bench.dense_training.trainer import batches

ANGLES = {"q": 0.0, "p1": 0.1, "p2": 0.9, "n1": 0.2, "n2": 0.5, "n3": 0.7, "n4": 1.2}


def _embed(texts: list[str]) -> np.ndarray:
    """A unit vector per text at its angle: cosine to ``q`` falls as the angle grows."""
    return np.array([[np.cos(ANGLES[t]), np.sin(ANGLES[t])] for t in texts], dtype=np.float32)


def _question(qid: str, positives: list[str], pool: list[str], repo: str = "r") -> TrainingQuestion:
    return TrainingQuestion(
        qid, repo, "c" * 40, "q",
        tuple(Document(f"a.py:{t}", t) for t in positives),
        tuple(Document(f"b.py:{t}", t) for t in pool),
    )  # fmt: skip


def test_the_filter_keeps_a_positive_ranked_high_enough_in_its_pool() -> None:
    question = _question("q1", ["p1", "p2"], ["n1", "n2", "n3", "n4"])
    # p1 is first (rank 1); three pool documents are nearer q than p2 (rank 4)
    chosen = select([question], _embed, filter_top=3, hard_negatives=2)
    assert chosen.positive_ranks == [1, 4]
    assert chosen.instances == [Instance("q1", "q", "p1", ("n1", "n2"))]
    assert chosen.dropped == {"filter": 1}
    assert chosen.pairs == {"r": 2} and chosen.kept == {"r": 1}
    wider = select([question], _embed, filter_top=4, hard_negatives=2)
    assert [i.positive for i in wider.instances] == ["p1", "p2"]


def test_a_pool_smaller_than_the_hard_negatives_drops_the_pair() -> None:
    chosen = select([_question("q1", ["p1"], ["n4"])], _embed, filter_top=20, hard_negatives=2)
    assert chosen.instances == [] and chosen.dropped == {"pool_too_small": 1}


def test_texts_are_embedded_once_in_steps() -> None:
    calls: list[list[str]] = []

    def counting(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return _embed(texts)

    questions = [_question("q1", ["p1"], ["n1", "n2"]), _question("q2", ["p2"], ["n1", "n3"])]
    select(questions, counting, filter_top=20, hard_negatives=1, step=3)
    seen = [t for call in calls for t in call]
    assert sorted(seen) == sorted(set(seen)) == ["n1", "n2", "n3", "p1", "p2", "q"]
    assert [len(c) for c in calls] == [3, 3]


def _instances(counts: dict[str, int]) -> list[Instance]:
    return [Instance(q, q, f"{q}-{i}", ()) for q, n in counts.items() for i in range(n)]


def test_batches_never_hold_two_instances_of_one_question() -> None:
    items = _instances({"a": 5, "b": 3, "c": 1, "d": 2, "e": 4})
    out = batches(items, 4, random.Random(0))
    assert sorted(i.positive for b in out for i in b) == sorted(i.positive for i in items)
    for batch in out:
        assert 1 <= len(batch) <= 4
        assert len({i.question for i in batch}) == len(batch)
    assert out == batches(items, 4, random.Random(0))  # seeded
    assert batches(items, 4, random.Random(0)) != batches(items, 4, random.Random(1))
