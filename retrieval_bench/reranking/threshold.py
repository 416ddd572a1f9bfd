"""Threshold sweep over a reranked run (docs/metrics.md#threshold-sweep): a
reranker's score threshold is configurable, and this shows where to set it.

A reranker cuts about 50 candidates to about 10; a score threshold cuts by
confidence instead of by count. For each threshold ``t`` and each example, the
kept set is the chunks of the reranked run scoring ``>= t``; they map to files
(a file's rank is its best chunk's,
:func:`~retrieval_bench.runs.lifting.ranked_files`) and are scored against
the gold files as sets (:func:`~retrieval_bench.metrics.retrieval.set_prf`)::

    P_q = |kept files ∩ gold| / |kept files|   (0 when nothing is kept)
    R_q = |kept files ∩ gold| / |gold|
    F1_q = 2 P_q R_q / (P_q + R_q)             (0 when P_q + R_q = 0)

Each row holds the means over all examples (one absent from the run keeps
nothing and scores 0, as in :func:`~retrieval_bench.metrics.retrieval.evaluate_stage`),
plus the mean number of kept chunks and files. Note that the mean F1 is the
mean of per-query F1s, not the F1 of the mean P and R.

Default grid: 0.0, 0.1, …, 1.0 when every score lies in [0, 1] (P(Yes),
1/0 answers, a sigmoid cross-encoder); otherwise the distinct deciles of the
scores (each one a score that occurs, the lowest keeping everything).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval.scoring import set_prf
from retrieval_bench.runs.lifting import ranked_files
from retrieval_bench.types import Example, Run

__all__ = ["METRICS", "ThresholdRow", "best_threshold", "default_thresholds", "threshold_sweep"]

METRICS = ("P", "R", "F1")
_UNIT_GRID = tuple(i / 10 for i in range(11))
_SLACK = 1e-9  # stable_scores lifts tied scores by a few ulps above 1.0


@dataclass(frozen=True)
class ThresholdRow:
    """Mean file-level scores of the candidates kept at one threshold."""

    threshold: float
    P: float
    R: float
    F1: float
    kept: float
    """Mean number of kept chunks per example."""
    kept_files: float
    """Mean number of distinct files among them."""
    n_queries: int

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def default_thresholds(scores: Iterable[float]) -> list[float]:
    """The grid used when none is given (see the module docstring)."""
    values = np.fromiter(scores, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0 or (values.min() >= 0.0 and values.max() <= 1.0 + _SLACK):
        return list(_UNIT_GRID)
    qs = np.quantile(values, np.linspace(0.0, 1.0, 11), method="inverted_cdf")
    return sorted({float(q) for q in qs})


def threshold_sweep(
    run: Run,
    examples: Sequence[Example],
    corpus: Corpus,
    thresholds: Sequence[float] | None = None,
) -> list[ThresholdRow]:
    """One :class:`ThresholdRow` per threshold, in ascending threshold order."""
    grid = (
        sorted(set(thresholds))
        if thresholds is not None
        else default_thresholds(s for q in run.scores.values() for s in q.values())
    )
    n = len(examples)
    ranked = [run.ranked(ex.id) for ex in examples]
    rows = []
    for t in grid:
        sums = [0.0, 0.0, 0.0, 0.0, 0.0]
        for ex, items in zip(examples, ranked, strict=True):
            kept = [cid for cid, score in items if score >= t]
            files = ranked_files(kept, corpus)
            for i, v in enumerate((*set_prf(files, ex.gold_files), len(kept), len(files))):
                sums[i] += v
        p, r, f1, kept_chunks, kept_files = (v / n if n else math.nan for v in sums)
        rows.append(ThresholdRow(float(t), p, r, f1, kept_chunks, kept_files, n))
    return rows


def best_threshold(rows: Sequence[ThresholdRow], metric: str = "F1") -> ThresholdRow:
    """The row with the highest mean ``metric`` ("P", "R" or "F1"); among equal
    values the lowest threshold wins (it drops the fewest candidates)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, not {metric!r}")
    if not rows:
        raise ValueError("no threshold rows to choose from")
    return max(rows, key=lambda row: (getattr(row, metric), -row.threshold))
