"""The signals of the ``history`` stage: per-file scores from one snapshot's history
(docs/stages.md#history).

Each takes a :class:`~retrieval_bench.retrieval.history_view.SnapshotHistory` (the
commits up to the snapshot's commit S, newest first, files named as at S) and returns
``{path at S: score > 0}``; the stage keeps the files of the snapshot.

* :func:`similar_fixes` — BugLocator's SimiScore (Zhou, Zhang & Lo, ICSE 2012,
  "Where should the bugs be fixed?", §III-C): the files changed by the past commits
  whose messages are most similar to the question,
  ``Σ_{c ∈ top-k} sim(q, c) / n_files(c) · decay(age(c))``.
* :func:`churn` — ``ln(1 + n)``, n the commits changing the file among the newest
  ``window`` of the history.
* :func:`recency` — ``0.5 ** (age of the newest commit changing the file / half_life)``.
* :func:`co_change` — the association-rule confidence of Zimmermann et al. (ICSE 2004,
  "Mining version histories to guide software changes"), from the files g the
  question names: ``Σ_{g named, g ≠ f} w_g · n(g, f) / n(g)``, n(g) the commits
  changing g, n(g, f) those changing both.

``decay(age) = 0.5 ** (age / half_life)`` (no decay when ``half_life`` is 0 or None).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from retrieval_bench.retrieval.history_view import SnapshotHistory


def decay(age: int, half_life: float | None) -> float:
    """``0.5 ** (age / half_life)``; 1 without a half-life."""
    return 0.5 ** (age / half_life) if half_life else 1.0


def top_similar(sims: Mapping[int, float], k: int) -> list[tuple[int, float]]:
    """The ``k`` most similar commits as ``(age, sim)``, best first; ties: the newer."""
    return sorted(sims.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def similar_fixes(
    history: SnapshotHistory, similar: list[tuple[int, float]], half_life: float | None
) -> dict[str, float]:
    """SimiScore (module doc) over ``similar``, the ``(age, sim)`` of the chosen commits."""
    scores: dict[str, float] = {}
    for age, sim in similar:
        n = history.n_changed[age]
        if sim <= 0 or n == 0:
            continue
        share = sim / n * decay(age, half_life)
        for path in history.files[age]:
            scores[path] = scores.get(path, 0.0) + share
    return scores


def churn(history: SnapshotHistory, window: int | None) -> dict[str, float]:
    """``ln(1 + n)`` per file, n its commits among the newest ``window`` (all: None)."""
    counts: dict[str, int] = {}
    for paths in history.files[:window]:
        for path in paths:
            counts[path] = counts.get(path, 0) + 1
    return {path: math.log1p(n) for path, n in counts.items()}


def recency(history: SnapshotHistory, half_life: float) -> dict[str, float]:
    """``0.5 ** (age of the file's newest commit / half_life)`` per file."""
    return {path: decay(ages[0], half_life) for path, ages in history.ages_of.items()}


def co_change(
    history: SnapshotHistory, named: Mapping[str, float], max_files: int | None
) -> dict[str, float]:
    """Confidence of ``g ⇒ f`` summed over the named files g with their weights w_g
    (module doc); commits changing more than ``max_files`` files are left out of both
    counts (a reformatting or a release touches everything)."""
    scores: dict[str, float] = {}
    for g, weight in named.items():
        ages = [
            a
            for a in history.ages_of.get(g, ())
            if max_files is None or history.n_changed[a] <= max_files
        ]
        if not ages or weight <= 0:
            continue
        together: dict[str, int] = {}
        for age in ages:
            for f in history.files[age]:
                if f != g:
                    together[f] = together.get(f, 0) + 1
        for f, n in together.items():
            scores[f] = scores.get(f, 0.0) + weight * n / len(ages)
    return scores
