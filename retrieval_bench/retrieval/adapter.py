"""A learned linear adapter for query embeddings, and the ``dense-adapted`` retriever.

The "basic" embedding rung (docs/stages.md#dense-adapted): learn a matrix that
multiplies the embedding to emphasise the dimensions that are particularly
useful for the use case. :class:`LinearAdapter` holds a ``d × d``
matrix ``W``, initialised to the identity, and maps a query vector ``q`` to
``W·q / ‖W·q‖``; chunk vectors are left alone, so the index is not rebuilt.
It complements HyDE (Gao et al. 2022, "Precise Zero-Shot Dense Retrieval
without Relevance Labels"), which closes the question/code gap without
labels; the adapter closes it with labels.

The adapter itself, its InfoNCE training and its file format live in
:mod:`retrieval_bench.retrieval.linear_adapter` (numpy, no retriever code), which the plain
``dense`` retriever also uses.

:class:`AdaptedDenseRetriever` (``dense-adapted``) is the dense retriever plus
``fit(train_examples, corpus)``: each training question is paired with the
chunks of its gold files (the chunks overlapping its gold spans, when it has
some), the most similar ones first, and gets hard negatives from its own plain
dense ranking (top chunks outside its gold files). A saved adapter is used by
the plain ``dense`` retriever through its ``adapter=`` path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import Embedder
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.retrieval.linear_adapter import LinearAdapter
from retrieval_bench.types import Example, Run

NEEDS_TRAINING = "dense-adapted needs a training split: set train_split in the dataset config"


def positive_chunk_ids(example: Example, corpus: Corpus) -> list[str]:
    """Chunks of the example's gold files; for a file with gold spans, only the chunks
    overlapping a span. Order: gold files, then chunk position."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for s in example.gold_spans:
        spans.setdefault(s.path, []).append((s.start_line, s.end_line))
    out: list[str] = []
    for path in dict.fromkeys([*example.gold_files, *spans]):
        ranges = spans.get(path)
        for c in corpus.chunks_of(path):
            if ranges is None or any(c.start_line <= e and s <= c.end_line for s, e in ranges):
                out.append(c.id)
    return list(dict.fromkeys(out))


class AdaptedDenseRetriever(DenseRetriever):
    """``dense`` with a query adapter learnt by :meth:`fit` on a training split.

    Parameters (:class:`AdaptedDenseRetriever.Params`, besides the dense ones):
    ``steps``, ``temperature``, ``reg``, ``lr``, ``train_batch``, ``seed`` of
    :meth:`LinearAdapter.fit`; ``hard_negatives`` per question, ``max_positives``
    chunks per question; ``save_to``: where to save the fitted adapter (optional).
    :meth:`fit` replaces an adapter loaded with ``adapter=``; without either,
    :meth:`search` raises :class:`ConfigError`.
    """

    class Params(DenseRetriever.Params):
        steps: int = 300
        # ``float | int``: an int stays one, as given (the adapter's saved meta records it)
        temperature: float | int = 0.05
        reg: float | int = 0.01
        lr: float | int = 1e-3
        train_batch: int = 64
        hard_negatives: int = 4
        max_positives: int = 8
        seed: int = 0
        save_to: str | None = None

    name = "dense-adapted"
    trainable = True
    params: AdaptedDenseRetriever.Params

    def __init__(
        self,
        params: AdaptedDenseRetriever.Params | None = None,
        /,
        *,
        embedder: Embedder | None = None,
        **values: Any,
    ) -> None:
        p = self.Params.of(params, **values)
        super().__init__(p, embedder=embedder)
        if p.max_positives < 1 or p.hard_negatives < 0 or p.steps < 0:
            raise ConfigError("dense-adapted: max_positives ≥ 1, hard_negatives ≥ 0, steps ≥ 0")
        self.train_params: dict[str, Any] = {
            "steps": p.steps,
            "temperature": p.temperature,
            "reg": p.reg,
            "lr": p.lr,
            "batch_size": p.train_batch,
            "seed": p.seed,
        }
        self.hard_negatives = p.hard_negatives
        self.max_positives = p.max_positives
        self.save_to = p.save_to
        self.fit_report: dict[str, Any] = {}
        """Pairs, skipped questions and losses of the last :meth:`fit`."""

    def fit(self, examples: Sequence[Example], corpus: Corpus) -> LinearAdapter:
        """Learn the adapter from labelled ``examples`` (a training split) of ``corpus``."""
        if not self._ids:
            raise RuntimeError("AdaptedDenseRetriever.fit called before index()")
        rows = {cid: i for i, cid in enumerate(self._ids)}
        train = [ex for ex in examples if ex.query.strip()]
        if not train:
            raise ConfigError(NEEDS_TRAINING)
        qv = self.cached_embedder.embed([ex.query for ex in train]).astype(np.float32)
        h = self.hard_negatives
        q_idx: list[int] = []
        pos_rows: list[int] = []
        neg_rows: list[list[int]] = []
        skipped: list[str] = []
        for i, ex in enumerate(train):
            gold = [rows[c] for c in positive_chunk_ids(ex, corpus) if c in rows]
            if not gold:
                skipped.append(ex.id)
                continue
            scores = self._matrix @ qv[i]
            gold = sorted(gold, key=lambda r: -scores[r])[: self.max_positives]
            gold_files = {*ex.gold_files, *(s.path for s in ex.gold_spans)}
            negs: list[int] = []
            for r in np.argsort(-scores, kind="stable") if h else ():
                if len(negs) == h:
                    break
                if corpus.path_of(self._ids[r]) not in gold_files:
                    negs.append(int(r))
            negs += [-1] * (h - len(negs))  # too few: zero vectors (no gradient)
            for r in gold:
                q_idx.append(i)
                pos_rows.append(r)
                neg_rows.append(negs)
        if not q_idx:
            raise ConfigError(
                f"dense-adapted: none of the {len(train)} training questions has gold chunks "
                "in the corpus; check the training split's gold files"
            )
        negatives = None
        if h:
            padded = np.vstack([self._matrix, np.zeros((1, self._matrix.shape[1]), np.float32)])
            negatives = padded[np.asarray(neg_rows)]
        self.adapter = LinearAdapter.fit(
            qv[q_idx],
            self._matrix[pos_rows],
            negatives,
            groups=q_idx,
            embedder=self.embedder.name,
            **self.train_params,
        )
        self.fit_report = {**self.adapter.meta, "skipped": skipped}
        if self.save_to:
            self.adapter.save(self.save_to)
        return self.adapter

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """As :meth:`DenseRetriever.search`, with the fitted adapter on the queries."""
        if self.adapter is None:
            raise ConfigError(NEEDS_TRAINING)
        return super().search(queries, k)
