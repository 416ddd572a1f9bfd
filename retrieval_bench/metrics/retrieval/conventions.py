"""Which rules score the module and function levels: LocAgent's or this project's
(docs/metrics.md#conventions).

``metrics: {conventions: locagent}`` (the default) scores as the localization
papers do (LocAgent, Chen et al. 2025; SweRank, Reddy et al. 2025, Table 1), so
a table can be compared with theirs:

* gold: the functions derived by LocAgent's rules
  (:mod:`retrieval_bench.datasets.gold_locagent`: ``Example.gold_functions_locagent``;
  a question without that list — hand-written gold — uses ``gold_functions``);
* ``Class.__init__`` counts as ``Class`` at function level, in gold and in the
  ranking alike (LocAgent's evaluation strips the ``.__init__``), and a ranking
  keeps each function at its best place;
* a question with no gold function is left out of the module and function
  levels (as everywhere in this project);
* ``Acc@k`` is 1 when the top k hold min(|G|, k) gold items — with more gold
  items than k, a top k made only of gold counts (LocAgent's ``acc_at_k``).

``conventions: rbench`` keeps this project's own rules: gold from
:mod:`retrieval_bench.datasets.gold_functions`, ``__init__`` its own function,
and ``Acc@k`` 1 only when every gold item is in the top k, as at file level.
The file level is the same under both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from retrieval_bench.dataset_spec import Conventions
from retrieval_bench.metrics.retrieval.ranking import FloatArray
from retrieval_bench.types import Example, module_of

LABELS = {"locagent": "LocAgent conventions", "rbench": "retrieval-bench conventions"}
SCORED = "has_gold_functions"
"""Per question: 1 when it has gold functions under the run's conventions (it is
scored at module and function level), else 0; its mean times the questions is
how many the level tables average over."""

_INIT = ".__init__"


def fold_init(entity: str) -> str:
    """``path:Class.__init__`` → ``path:Class``; any other entity unchanged."""
    return entity[: -len(_INIT)] if entity.endswith(_INIT) and ":" in entity else entity


def raw_gold(example: Example, conventions: Conventions) -> tuple[str, ...]:
    """The gold functions the conventions read (module doc), as derived."""
    if conventions == "locagent" and example.gold_functions_locagent is not None:
        return example.gold_functions_locagent
    return example.gold_functions


def gold_functions(example: Example, conventions: Conventions) -> tuple[str, ...]:
    """The function-level gold items under ``conventions``."""
    gold = raw_gold(example, conventions)
    return tuple(dict.fromkeys(map(fold_init, gold))) if conventions == "locagent" else gold


def gold_modules(example: Example, conventions: Conventions) -> tuple[str, ...]:
    """The module-level gold items: the top-level names of the gold functions."""
    return tuple(dict.fromkeys(map(module_of, raw_gold(example, conventions))))


def ranked_functions(functions: Iterable[str], conventions: Conventions) -> list[str]:
    """A function ranking as the conventions score it (``__init__`` folded under
    LocAgent's, each item at its best place)."""
    if conventions == "locagent":
        return list(dict.fromkeys(map(fold_init, functions)))
    return list(functions)


def min_accuracy(
    rankings: Sequence[Sequence[str]], golds: Sequence[Iterable[str]], k: int
) -> FloatArray:
    """LocAgent's ``Acc@k`` per query: 1 when the top ``k`` hold min(|G|, k) gold items
    (0 for a query without gold)."""
    out = np.zeros(len(rankings), dtype=np.float64)
    for i, (ranking, gold) in enumerate(zip(rankings, golds, strict=True)):
        wanted = set(gold)
        hits = sum(1 for item in dict.fromkeys(ranking[:k]) if item in wanted)
        out[i] = 1.0 if wanted and hits >= min(len(wanted), k) else 0.0
    return out
