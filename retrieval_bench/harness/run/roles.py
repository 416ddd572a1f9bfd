"""What each configured stage ranks, and the checks of stages that need their
inputs in given roles (docs/stages.md#hierarchical).

Whether a run ranks files (``file:<path>`` ids) or chunks is known for sure only
when it has run; but the stage classes say what their contract promises
(:meth:`~retrieval_bench.stage.Stage.ranks_for`: ``bm25-files``, ``ltr`` and
``code-graph`` rank files, the other retrievers chunks, a reranker its input's
ids, a fusion files once its inputs are lifted to files). Walking the stage graph
in the order it runs gives every stage's answer (None where the classes cannot
tell: a plug-in that says nothing), and each stage then checks its parameter
values and its inputs' roles (:meth:`~retrieval_bench.stage.Stage.check_config`):
``hierarchical`` wants two inputs, files then chunks. A mistake there would fail
every question of a run that still says ``done``; here it is a
:class:`~retrieval_bench.errors.ConfigError` naming the entry, before any work.
"""

from __future__ import annotations

from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.errors import ConfigError, RBenchError
from retrieval_bench.registry import FUSIONS, RERANKERS, RETRIEVERS, Registry
from retrieval_bench.stage import Ranks, Stage

_REGISTRIES: dict[str, Registry[Any]] = {
    "retriever": RETRIEVERS,
    "fusion": FUSIONS,
    "reranker": RERANKERS,
}


def _where(cfg: BenchmarkConfig) -> dict[str, str]:
    """Stage label → its entry's place in the config (``fusions.1``)."""
    lists = (("retrievers", cfg.retrievers), ("fusions", cfg.fusions),
             ("rerankers", cfg.rerankers))  # fmt: skip
    return {spec.label: f"{kind}.{i}" for kind, specs in lists for i, spec in enumerate(specs)}


def check_roles(cfg: BenchmarkConfig) -> dict[str, Ranks | None]:
    """Every stage's :meth:`~retrieval_bench.stage.Stage.check_config`, in graph order;
    returns what each stage ranks (label → ``files``, ``chunks`` or None). The first
    problem raises :class:`ConfigError` (``fusions.2 (files-fn): hierarchical: ...``)."""
    ranks: dict[str, Ranks | None] = {}
    where = _where(cfg)
    for node in cfg.stage_graph():
        made = _REGISTRIES[node.kind].type_of(node.spec.name)
        if not issubclass(made, Stage):
            ranks[node.label] = None
            continue
        params = node.spec.params()
        inputs = [(label, ranks[label]) for label in node.inputs]
        try:
            made.check_config(params, inputs)
        except RBenchError as exc:
            raise ConfigError(f"{where[node.label]} ({node.label}): {exc}") from None
        ranks[node.label] = made.ranks_for(params, [r for _, r in inputs])
    return ranks
