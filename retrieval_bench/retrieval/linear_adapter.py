"""The learned linear query adapter: a ``d × d`` matrix ``W`` mapping a query
vector ``q`` to ``W·q / ‖W·q‖`` (numpy, no retriever code; see docs/stages.md).

Chunk vectors are left alone, so the index is not rebuilt. Training
(:meth:`LinearAdapter.fit`) minimises, over (query, positive) pairs, the
InfoNCE loss with in-batch negatives (the other pairs' positives) plus
optional per-pair hard negatives, at temperature τ (default 0.05)::

    L = mean_i −log softmax_j(cos(W q_i, c_j) / τ)[pos_i]  +  λ ‖W − I‖²_F

Candidates that are positives of the same query (or duplicates of the
positive) are masked out of the softmax. The gradient is written out in numpy
(float64) and followed with Adam, minibatches drawn from a fixed-seed
generator, so a fit is deterministic. The L2 pull toward the identity keeps
the few hundred labelled pairs of a benchmark split from overfitting a
147k-parameter matrix (d = 384 for all-MiniLM-L6-v2).

Used by the ``dense`` retriever (``adapter=``, a saved adapter) and learnt by
``dense-adapted`` (:mod:`retrieval_bench.retrieval.adapter`); this module sits
below both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import normalize_rows

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
