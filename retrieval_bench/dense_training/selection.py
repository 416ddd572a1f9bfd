"""Consistency filtering and hard negatives with the base model (docs/stages.md#fit-dense).

SweRank (arXiv 2505.07849, section 3) keeps a training pair only when the base
embedder already ranks its positive among its top 20 candidates: a message that
says nothing of its code ("fix typing") teaches noise, and training without the
filter fell below the base model there. Here a question's candidates are its
pool (:mod:`~retrieval_bench.dense_training.questions`) plus the positive, so the
filter is ``rank <= filter_top`` in that pool. The hard negatives of a kept pair
are the ``hard_negatives`` pool documents the base model finds most similar to
the question (all unmodified: the pool holds no positive nor any definition
holding one or held by one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from retrieval_bench.dense_training.questions import TrainingQuestion
from retrieval_bench.index.embed import Embedder


@dataclass(frozen=True)
class Instance:
    """One training instance: a question, one of its positives and its hard negatives."""

    question: str
    """The question's id (two instances of one question never share a batch)."""
    query: str
    positive: str
    negatives: tuple[str, ...]


@dataclass
class Selection:
    """The kept instances and, per repository, what was kept and dropped."""

    instances: list[Instance] = field(default_factory=list)
    pairs: Counter[str] = field(default_factory=Counter)
    """(question, positive) pairs seen, per repository."""
    kept: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    """Why pairs were dropped (``filter``: the base model ranked the positive too low)."""
    positive_ranks: list[int] = field(default_factory=list)
    """Each pair's rank under the base model (1 = first), kept or not."""


def select(
    questions: Sequence[TrainingQuestion],
    embed: Callable[[list[str]], np.ndarray],
    *,
    filter_top: int,
    hard_negatives: int,
    step: int = 512,
    progress: Callable[[int, int, str], None] | None = None,
) -> Selection:
    """Score every question's positives and pool with ``embed`` (the base model, texts →
    unit rows), filter the pairs and pick the hard negatives (module doc)."""
    texts = list(
        dict.fromkeys(
            t
            for q in questions
            for t in (q.query, *(d.text for d in q.positives), *(d.text for d in q.pool))
        )
    )
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(texts), step):
        part = texts[start : start + step]
        vectors.update(zip(part, embed(part), strict=True))
        if progress is not None:
            progress(min(start + step, len(texts)), len(texts), "texts")
    out = Selection()
    for q in questions:
        query = vectors[q.query]
        pool = np.stack([vectors[d.text] for d in q.pool])
        pool_scores = pool @ query
        order = np.argsort(-pool_scores, kind="stable")
        hard = tuple(q.pool[i].text for i in order[:hard_negatives])
        for positive in q.positives:
            out.pairs[q.repo] += 1
            score = float(vectors[positive.text] @ query)
            rank = 1 + int(np.count_nonzero(pool_scores > score))
            out.positive_ranks.append(rank)
            if rank > filter_top:
                out.dropped["filter"] += 1
            elif len(hard) < hard_negatives:
                out.dropped["pool_too_small"] += 1
            else:
                out.kept[q.repo] += 1
                out.instances.append(Instance(q.id, q.query, positive.text, hard))
    return out


def as_embed(embedder: Embedder) -> Callable[[list[str]], np.ndarray]:
    """An embedder's ``embed`` (documents and questions alike: the base model has no prefix)."""
    return lambda texts: np.asarray(embedder.embed(texts), dtype=np.float32)
