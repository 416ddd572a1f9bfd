"""The module- and function-level measures of a stage's ranking
(docs/metrics.md#function-and-module-level, docs/metrics.md#conventions).

Chunk rankings become function rankings (each chunk's definitions,
:func:`~retrieval_bench.metrics.retrieval.entities.entity_ranking`) and module
rankings (their top-level names); both are judged against the gold the run's
conventions read (:mod:`~retrieval_bench.metrics.retrieval.conventions`), for
the questions that have gold functions under them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval.conventions import (
    SCORED,
    Conventions,
    gold_functions,
    gold_modules,
    min_accuracy,
    ranked_functions,
    raw_gold,
)
from retrieval_bench.metrics.retrieval.entities import (
    entity_ranking,
    module_ranking,
    unmapped_functions,
)
from retrieval_bench.metrics.retrieval.ranking import FloatArray, judge, ranking_metrics
from retrieval_bench.types import Example

UNMAPPED = "function_unmapped"
"""Per question with gold functions: 1 when one of them is a function no chunk of the
corpus stands for (:func:`~retrieval_bench.metrics.retrieval.entities.unmapped_functions`),
so no chunk stage can find it; the level tables say how many such questions there are."""


def _labelled(example: Example) -> bool:
    """Whether a question carries function-level gold at all (some, or a derived list
    that may be empty): the questions ``has_gold_functions`` is stated for."""
    return bool(example.gold_functions) or example.gold_functions_locagent is not None


def entity_measures(
    examples: Sequence[Example],
    rankings: Sequence[Sequence[str]],
    corpus: Corpus,
    ks: Sequence[int],
    conventions: Conventions,
) -> list[tuple[list[str], dict[str, FloatArray]]]:
    """(question ids, measure → per-question values) groups: ``has_gold_functions`` of
    every question that carries function-level gold (a derived list, maybe empty), then
    the ``function_*``, ``module_*`` and ``function_unmapped`` measures of the examples
    with gold functions under ``conventions``."""
    golds = [gold_functions(ex, conventions) for ex in examples]
    idx = [i for i, gold in enumerate(golds) if gold]
    labelled = [i for i, ex in enumerate(examples) if _labelled(ex)]
    out: list[tuple[list[str], dict[str, FloatArray]]] = []
    if labelled:
        scored = np.array([1.0 if golds[i] else 0.0 for i in labelled], dtype=np.float64)
        out.append(([examples[i].id for i in labelled], {SCORED: scored}))
    if not idx:
        return out
    ids = [examples[i].id for i in idx]
    raw = [entity_ranking(rankings[i], corpus) for i in idx]
    levels = (
        ("function_", [golds[i] for i in idx], [ranked_functions(f, conventions) for f in raw]),
        (
            "module_",
            [gold_modules(examples[i], conventions) for i in idx],
            [module_ranking(f) for f in raw],
        ),
    )
    for prefix, gold, lists in levels:
        arrays = ranking_metrics(judge(lists, [dict.fromkeys(g, 1) for g in gold]), ks, prefix)
        if conventions == "locagent":
            for k in ks:
                arrays[f"{prefix}Acc@{k}"] = min_accuracy(lists, gold, k)
        out.append((ids, arrays))
    unmapped = [
        1.0 if unmapped_functions(examples[i], corpus, raw_gold(examples[i], conventions)) else 0.0
        for i in idx
    ]
    out.append((ids, {UNMAPPED: np.array(unmapped, dtype=np.float64)}))
    return out
