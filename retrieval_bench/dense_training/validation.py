"""Held-out validation of a ``fit-dense`` training: the trained model against its base
on the newest questions of each repository, which it never trained on
(docs/stages.md#validating-on-held-out-questions).

``--holdout F`` keeps the newest ``ceil(F · n)`` of a repository's ``n`` mined
questions out of the filter and the training (a temporal split: every training
question is older than every held-out one of its repository, as a user's next
question will be newer than their history). Each held-out question is then ranked
by both models over its *candidates*: its positives and its pool (the other
definitions of the changed files and of ``pool_files`` other files, as in
training). The consistency filter is **not** applied to them: a filter by the base
model would keep the questions the base model already answers.

Per question, with r the rank of its best positive as the filter ranks a pair
(1 + the pool documents scoring above it: ties in its favour, the other positives
not counted):

* ``MRR``: mean of 1 / r; ``Acc@k``: the share with r ≤ k (k = 1, 5).

The trained model is read as the ``dense`` stage reads it (its int8 ONNX export,
the query prefix before the question); the base model as the filter read it. The
difference of MRR is tested with the paired randomisation test (10,000 sign flips,
seed 0; Smucker, Allan & Carterette, CIKM 2007).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrieval_bench.dense_training.questions import TrainingQuestion
from retrieval_bench.metrics.stats.randomisation import randomisation_test

Embed = Callable[[list[str]], np.ndarray]
"""Texts → unit rows."""
KS = (1, 5)


def split_newest(
    questions: Sequence[TrainingQuestion], fraction: float
) -> tuple[list[TrainingQuestion], list[TrainingQuestion]]:
    """(training, held out): per repository, the newest ``ceil(fraction · n)`` of its
    ``n`` questions held out (the mined questions come oldest first), at most ``n − 1``
    so that every repository still trains; nothing held out when ``fraction`` is 0."""
    if not 0 <= fraction < 1:
        raise ValueError(f"holdout fraction must be in [0, 1), got {fraction}")
    by_repo: dict[str, list[TrainingQuestion]] = {}
    for q in questions:
        by_repo.setdefault(q.repo, []).append(q)
    train: list[TrainingQuestion] = []
    held: list[TrainingQuestion] = []
    for group in by_repo.values():
        n_held = min(math.ceil(fraction * len(group)), len(group) - 1) if fraction else 0
        cut = len(group) - n_held
        train += group[:cut]
        held += group[cut:]
    return train, held


def best_positive_ranks(
    questions: Sequence[TrainingQuestion], embed_query: Embed, embed_document: Embed
) -> list[int]:
    """Per question, the rank of its best positive among its pool (module doc)."""
    queries = embed_query([q.query for q in questions])
    texts = list(dict.fromkeys(d.text for q in questions for d in (*q.positives, *q.pool)))
    rows = {t: i for i, t in enumerate(texts)}
    docs = embed_document(texts) if texts else np.zeros((0, queries.shape[1]))
    ranks = []
    for q, query in zip(questions, queries, strict=True):
        pool = docs[[rows[d.text] for d in q.pool]] @ query
        best = max(float(docs[rows[d.text]] @ query) for d in q.positives)
        ranks.append(1 + int(np.count_nonzero(pool > best)))
    return ranks


def summarize(ranks: Sequence[int]) -> dict[str, float]:
    """MRR and Acc@k of best-positive ranks, rounded to 4 decimals."""
    arr = np.asarray(ranks, dtype=np.float64)
    out = {"MRR": round(float(np.mean(1.0 / arr)), 4)}
    for k in KS:
        out[f"Acc@{k}"] = round(float(np.mean(arr <= k)), 4)
    return out


def validate(
    questions: Sequence[TrainingQuestion],
    base: Embed,
    trained_query: Embed,
    trained_document: Embed,
) -> dict[str, Any]:
    """The held-out comparison of the manifest's ``validation`` (module doc)."""
    base_ranks = best_positive_ranks(questions, base, base)
    trained_ranks = best_positive_ranks(questions, trained_query, trained_document)
    report: dict[str, Any] = {
        "questions": len(questions),
        "repositories": dict(sorted(Counter(q.repo for q in questions).items())),
        "median_candidates": int(np.median([1 + len(q.pool) for q in questions])),
        "base": summarize(base_ranks),
        "trained": summarize(trained_ranks),
    }
    base_rr = [1.0 / r for r in base_ranks]
    trained_rr = [1.0 / r for r in trained_ranks]
    report["delta_MRR"] = round(float(np.mean(trained_rr) - np.mean(base_rr)), 4)
    report["p_MRR"] = (
        round(randomisation_test(base_rr, trained_rr).p_value, 4) if len(questions) > 1 else None
    )
    return report
