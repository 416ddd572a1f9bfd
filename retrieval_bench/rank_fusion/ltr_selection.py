"""The out-of-fold check of a fitted ``ltr`` model against its inputs
(docs/stages.md#learning-to-rank): a learned ranker that only ties its best input,
or loses to it, must be visible as such.

Per question: the objective of the model's out-of-fold ranking and of each
input's own file ranking. Reported: every input's mean, the best input by mean,
the model's Δ against it with a paired randomisation test and a 95% bootstrap
interval of the mean paired difference, and the same per dataset of the
training runs (with repository cross-fitting, per held-back repository: its
questions were scored by a model that never saw that repository).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval_bench.errors import ConfigError
from retrieval_bench.measures import parse_measure
from retrieval_bench.metrics.retrieval.ranking import (
    Judged,
    all_found,
    judge,
    judge_scores,
    recall,
    reciprocal_rank,
    success,
)
from retrieval_bench.rank_fusion.ltr_data import TrainingSet
from retrieval_bench.runs.file_ids import file_id

FloatArray = npt.NDArray[np.float64]
OBJECTIVES = ("Acc@k", "Hit@k", "R@k", "MRR")


_MEASURES: dict[str, Callable[[Judged, int], FloatArray]] = {
    "Acc": all_found,
    "Hit": success,
    "R": recall,
}


def objective_measure(objective: str) -> Callable[[Judged], FloatArray]:
    """The per-query measure of ``objective`` over judged rankings (the metric
    code the stage tables use: docs/metrics.md)."""
    parsed = parse_measure(objective)
    if str(parsed) == "MRR":
        return reciprocal_rank
    measure = _MEASURES.get(parsed.family) if not parsed.level else None
    cutoff = parsed.cutoff
    if measure is None or cutoff is None:
        raise ConfigError(
            f"fit-ltr: objective {objective!r}: choose one of {', '.join(OBJECTIVES)}"
        )
    return lambda judged: measure(judged, cutoff)


def file_metric(ranked: Sequence[str], gold: frozenset[str], objective: str) -> float:
    """One file-level metric of a ranking of paths, as docs/metrics.md defines it:
    ``Acc@k`` every gold file in the top k, ``Hit@k`` some, ``R@k`` the share, ``MRR``."""
    return float(objective_measure(objective)(judge([ranked], [dict.fromkeys(gold, 1)]))[0])


def objective_values(
    scores: Sequence[Mapping[str, float]], golds: Sequence[frozenset[str]], objective: str
) -> list[float]:
    """Per question, ``objective`` of its ``file:`` id scores ranked as ``Run.ranked``."""
    qrels = [{file_id(p): 1 for p in gold} for gold in golds]
    values: list[float] = objective_measure(objective)(judge_scores(scores, qrels)).tolist()
    return values


def _compare(ltr: Sequence[float], inputs: Mapping[str, Sequence[float]], seed: int,
             alpha: float) -> dict[str, Any]:  # fmt: skip
    from retrieval_bench.metrics.stats.bootstrap_ci import bootstrap_ci
    from retrieval_bench.metrics.stats.randomisation import randomisation_test

    best = max(inputs, key=lambda s: (float(np.mean(inputs[s])), s))
    diff = np.asarray(ltr, dtype=np.float64) - np.asarray(inputs[best], dtype=np.float64)
    test = randomisation_test(list(inputs[best]), list(ltr), seed=seed)
    ci = bootstrap_ci(diff, seed=seed) if len(diff) > 1 else None
    delta = float(diff.mean())
    return {
        "questions": len(ltr),
        "ltr_out_of_fold": float(np.mean(ltr)),
        "inputs": {s: float(np.mean(v)) for s, v in inputs.items()},
        "best_input": best,
        "delta_vs_best_input": delta,
        "delta_ci95": [ci.low, ci.high] if ci is not None else None,
        "p_value": float(test.p_value),
        "significantly_worse": bool(delta < 0 and test.p_value < alpha),
    }


def selection_check(
    data: TrainingSet,
    qids: Sequence[str],
    oof_scores: Mapping[str, Mapping[str, float]],
    objective: str,
    *,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The check over all ``qids`` and per dataset (module doc)."""
    golds = [data.gold[q] for q in qids]
    inputs = {
        s: objective_values([data.runs[s].scores.get(q, {}) for q in qids], golds, objective)
        for s in data.sources
    }
    ltr = objective_values([oof_scores[q] for q in qids], golds, objective)
    out = {"objective": objective, **_compare(ltr, inputs, seed, alpha)}
    names = sorted({data.dataset_of(q) for q in qids})
    if len(names) > 1:
        out["per_dataset"] = {
            name: _compare(
                [v for q, v in zip(qids, ltr, strict=True) if data.dataset_of(q) == name],
                {s: [v for q, v in zip(qids, vals, strict=True) if data.dataset_of(q) == name]
                 for s, vals in inputs.items()},
                seed, alpha,
            )
            for name in names
        }  # fmt: skip
    return out
