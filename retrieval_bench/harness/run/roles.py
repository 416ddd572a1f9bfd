"""What each configured stage ranks, and the checks of stages that need their
inputs in given roles (docs/stages.md#hierarchical).

Whether a run ranks files (``file:<path>`` ids) or chunks is known for sure only
when it has run; but the stage classes say what their contract promises
(:meth:`~retrieval_bench.contracts.stage.Stage.ranks_for`: ``bm25-files``, ``ltr`` and
``code-graph`` rank files, the other retrievers chunks, a reranker its input's
ids, a fusion files once its inputs are lifted to files). Walking the stage graph
in the order it runs gives every stage's answer (None where the classes cannot
tell: a plug-in that says nothing), and each stage then checks its parameter
values and its inputs' roles (:meth:`~retrieval_bench.contracts.stage.Stage.check_config`):
``hierarchical`` wants two inputs, files then chunks. A mistake there would fail
every question of a run that still says ``done``; here it is a
:class:`~retrieval_bench.errors.ConfigError` naming the entry, before any work.
"""

from __future__ import annotations

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.contracts.stage import Ranks, Stage
from retrieval_bench.errors import ConfigError, RBenchError
from retrieval_bench.plan import REGISTRY_OF


def check_roles(cfg: BenchmarkConfig) -> dict[str, Ranks | None]:
    """Every stage's :meth:`~retrieval_bench.contracts.stage.Stage.check_config`, in graph order;
    returns what each stage ranks (label → ``files``, ``chunks`` or None). The first
    problem raises :class:`ConfigError` (``fusions.2 (files-fn): hierarchical: ...``)."""
    ranks: dict[str, Ranks | None] = {}
    for node in cfg.stage_graph():
        made = REGISTRY_OF[node.kind].type_of(node.spec.name)
        if not issubclass(made, Stage):
            ranks[node.label] = None
            continue
        params = node.spec.params()
        inputs = [(label, ranks[label]) for label in node.inputs]
        try:
            made.check_config(params, inputs)
        except RBenchError as exc:
            raise ConfigError(f"{node.where} ({node.label}): {exc}") from None
        ranks[node.label] = made.ranks_for(params, [r for _, r in inputs])
    return ranks
