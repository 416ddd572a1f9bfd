"""A learned linear adapter for query embeddings, and the ``dense-adapted`` retriever.

Seed 002's "basic" embedding rung: "learn a matrix that multiplies the
embedding to emphasise the dimensions that are particularly useful for your
use case" (SPEC §1.3 `dense`). :class:`LinearAdapter` holds a ``d × d``
matrix ``W``, initialised to the identity, and maps a query vector ``q`` to
``W·q / ‖W·q‖``; chunk vectors are left alone, so the index is not rebuilt.
It complements HyDE (Gao et al. 2022, "Precise Zero-Shot Dense Retrieval
without Relevance Labels"), which closes the question/code gap without
labels; the adapter closes it with labels.

Training (:meth:`LinearAdapter.fit`) minimises, over (query, positive) pairs,
the InfoNCE loss with in-batch negatives (the other pairs' positives) plus
optional per-pair hard negatives, at temperature τ (default 0.05)::

    L = mean_i −log softmax_j(cos(W q_i, c_j) / τ)[pos_i]  +  λ ‖W − I‖²_F

Candidates that are positives of the same query (or duplicates of the
positive) are masked out of the softmax. The gradient is written out in numpy
(float64) and followed with Adam, minibatches drawn from a fixed-seed
generator, so a fit is deterministic. The L2 pull toward the identity keeps
the few hundred labelled pairs of a benchmark split from overfitting a
147k-parameter matrix (d = 384 for all-MiniLM-L6-v2).

:class:`AdaptedDenseRetriever` (``dense-adapted``) is the dense retriever plus
``fit(train_examples, corpus)``: each training question is paired with the
chunks of its gold files (the chunks overlapping its gold spans, when it has
some), the most similar ones first, and gets hard negatives from its own plain
dense ranking (top chunks outside its gold files). A saved adapter is used by
the plain ``dense`` retriever through its ``adapter=`` path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import Embedder, normalize_rows
from retrieval_bench.registry import register
from retrieval_bench.retrieval.dense import DenseRetriever
from retrieval_bench.types import Example, Run

NEEDS_TRAINING = "dense-adapted needs a training split: set train_split in the dataset config"
_FORMAT = 1


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.asarray(x / np.where(norms == 0, 1.0, norms), dtype=np.float64)


def info_nce(
    w: np.ndarray,
    q: np.ndarray,
    p: np.ndarray,
    neg: np.ndarray | None,
    mask: np.ndarray,
    temperature: float,
) -> tuple[float, np.ndarray]:
    """InfoNCE loss of one batch and its gradient with respect to ``w``.

    ``q``, ``p``: ``(B, d)`` unit rows; ``neg``: ``(B, h, d)`` or None;
    ``mask``: ``(B, B)`` True where an in-batch candidate is excluded.
    """
    u = q @ w.T
    r = np.linalg.norm(u, axis=1, keepdims=True)
    r[r == 0] = 1.0
    z = u / r
    s = z @ p.T / temperature
    s[mask] = -np.inf
    if neg is not None:
        s = np.concatenate([s, np.einsum("bd,bhd->bh", z, neg) / temperature], axis=1)
    top = s.max(axis=1, keepdims=True)
    e = np.exp(s - top)
    total = e.sum(axis=1, keepdims=True)
    b = len(q)
    diag = np.arange(b)
    loss = float(np.mean(np.log(total[:, 0]) + top[:, 0] - s[diag, diag]))
    g = e / total
    g[diag, diag] -= 1.0
    g /= b
    dz = g[:, :b] @ p
    if neg is not None:
        dz += np.einsum("bh,bhd->bd", g[:, b:], neg)
    dz /= temperature
    du = (dz - z * np.sum(z * dz, axis=1, keepdims=True)) / r
    return loss, du.T @ q


class LinearAdapter:
    """``v ↦ W·v / ‖W·v‖`` for query vectors (module doc). ``meta`` records the fit."""

    def __init__(self, matrix: np.ndarray, meta: dict[str, Any] | None = None) -> None:
        m = np.asarray(matrix, dtype=np.float32)
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"an adapter matrix must be square, got shape {m.shape}")
        self.matrix = m
        self.meta: dict[str, Any] = dict(meta or {})

    @classmethod
    def identity(cls, dim: int) -> LinearAdapter:
        return cls(np.eye(dim, dtype=np.float32), {"dim": dim})

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[0])

    @classmethod
    def fit(
        cls,
        query_vecs: np.ndarray,
        positive_vecs: np.ndarray,
        negative_vecs: np.ndarray | None = None,
        *,
        groups: Sequence[int] | None = None,
        steps: int = 300,
        temperature: float = 0.05,
        reg: float = 0.01,
        lr: float = 1e-3,
        batch_size: int = 64,
        seed: int = 0,
        embedder: str | None = None,
    ) -> LinearAdapter:
        """Learn ``W`` from aligned (query, positive) rows (module doc for the loss).

        ``negative_vecs``: ``(n, h, d)`` (or ``(n, d)``: one each) hard negatives
        per pair. ``groups``: the query each pair belongs to; pairs of one query
        are not each other's negatives (default: every pair its own query).
        """
        q, p = _unit(np.asarray(query_vecs)), _unit(np.asarray(positive_vecs))
        if q.ndim != 2 or q.shape != p.shape or len(q) == 0:
            raise ValueError(f"need aligned (n, d) queries and positives, got {q.shape}, {p.shape}")
        neg = None if negative_vecs is None else _unit(np.asarray(negative_vecs))
        if neg is not None and neg.ndim == 2:
            neg = neg[:, None, :]
        if neg is not None and (neg.shape[0] != len(q) or neg.shape[2] != q.shape[1]):
            raise ValueError(f"negatives of shape {neg.shape} do not match {q.shape}")
        n, d = q.shape
        group = np.arange(n) if groups is None else np.asarray(groups)
        if group.shape != (n,):
            raise ValueError(f"groups must have one entry per pair ({n}), got {group.shape}")
        rng = np.random.default_rng(seed)
        eye = np.eye(d)
        w, m, v = eye.copy(), np.zeros((d, d)), np.zeros((d, d))
        beta1, beta2 = 0.9, 0.999
        order, pos = rng.permutation(n), 0
        losses: list[float] = []
        for step in range(1, steps + 1):
            if n <= batch_size:
                idx = order
            else:
                if pos + batch_size > n:
                    order, pos = rng.permutation(n), 0
                idx, pos = order[pos : pos + batch_size], pos + batch_size
            qb, pb = q[idx], p[idx]
            mask = (group[idx][:, None] == group[idx][None, :]) | (pb @ pb.T > 1 - 1e-6)
            np.fill_diagonal(mask, False)
            loss, grad = info_nce(w, qb, pb, None if neg is None else neg[idx], mask, temperature)
            losses.append(loss + reg * float(np.sum((w - eye) ** 2)))
            grad += 2.0 * reg * (w - eye)
            m = beta1 * m + (1 - beta1) * grad
            v = beta2 * v + (1 - beta2) * grad * grad
            m_hat, v_hat = m / (1 - beta1**step), v / (1 - beta2**step)
            w -= lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        meta = {
            "format": _FORMAT,
            "dim": d,
            "embedder": embedder,
            "pairs": n,
            "queries": len(np.unique(group)),
            "hard_negatives": 0 if neg is None else int(neg.shape[1]),
            "steps": steps,
            "temperature": temperature,
            "reg": reg,
            "lr": lr,
            "batch_size": batch_size,
            "seed": seed,
            "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None,
        }
        return cls(w, meta)

    def transform(self, vectors: np.ndarray) -> np.ndarray:
        """Unit-norm ``W·v`` for each row ``v`` of ``vectors`` (float32)."""
        v = np.asarray(vectors, dtype=np.float32)
        if v.ndim != 2 or (len(v) and v.shape[1] != self.dim):
            raise ConfigError(
                f"adapter is {self.dim}-dimensional but the vectors have shape {v.shape}; "
                "train it with the same embedding model"
            )
        return normalize_rows(v @ self.matrix.T)

    def save(self, path: str | Path) -> Path:
        """Write ``W`` to ``<path>.npy`` and the metadata to ``<path>.json``; return the .npy."""
        npy = Path(path).with_suffix(".npy")
        npy.parent.mkdir(parents=True, exist_ok=True)
        np.save(npy, self.matrix)
        meta = {**self.meta, "format": _FORMAT, "dim": self.dim}
        npy.with_suffix(".json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return npy

    @classmethod
    def load(cls, path: str | Path) -> LinearAdapter:
        """Read an adapter written by :meth:`save` (``path`` with or without a suffix)."""
        npy = Path(path).with_suffix(".npy")
        try:
            matrix = np.load(npy, allow_pickle=False)
            meta_file = npy.with_suffix(".json")
            meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
            return cls(matrix, meta)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"adapter {npy} cannot be read ({exc}); train and save one") from exc


def load_adapter(path: str | Path, embedder_name: str) -> LinearAdapter:
    """:meth:`LinearAdapter.load`, refusing an adapter trained for another embedding model."""
    adapter = LinearAdapter.load(path)
    trained = adapter.meta.get("embedder")
    if trained and trained != embedder_name:
        raise ConfigError(
            f"adapter {path} was trained for embedder {trained!r}, not {embedder_name!r}; "
            "retrain it or use the same model"
        )
    return adapter


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


@register("retrievers", "dense-adapted")
class AdaptedDenseRetriever(DenseRetriever):
    """``dense`` with a query adapter learnt by :meth:`fit` on a training split.

    Parameters (besides the dense ones): ``steps``, ``temperature``, ``reg``,
    ``lr``, ``train_batch``, ``seed`` of :meth:`LinearAdapter.fit`;
    ``hard_negatives`` per question, ``max_positives`` chunks per question;
    ``save_to``: where to save the fitted adapter (optional). :meth:`fit`
    replaces an adapter loaded with ``adapter=``; without either, :meth:`search`
    raises :class:`ConfigError`.
    """

    name = "dense-adapted"

    def __init__(
        self,
        model_path: str | None = None,
        batch_size: int = 64,
        threads: int | None = None,
        index_uri: str | None = None,
        cache_dir: str | None = None,
        embedder: Embedder | None = None,
        adapter: str | None = None,
        *,
        steps: int = 300,
        temperature: float = 0.05,
        reg: float = 0.01,
        lr: float = 1e-3,
        train_batch: int = 64,
        hard_negatives: int = 4,
        max_positives: int = 8,
        seed: int = 0,
        save_to: str | None = None,
    ) -> None:
        super().__init__(model_path, batch_size, threads, index_uri, cache_dir, embedder, adapter)
        if max_positives < 1 or hard_negatives < 0 or steps < 0:
            raise ConfigError("dense-adapted: max_positives ≥ 1, hard_negatives ≥ 0, steps ≥ 0")
        self.train_params: dict[str, Any] = {
            "steps": steps,
            "temperature": temperature,
            "reg": reg,
            "lr": lr,
            "batch_size": train_batch,
            "seed": seed,
        }
        self.hard_negatives = hard_negatives
        self.max_positives = max_positives
        self.save_to = save_to
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
