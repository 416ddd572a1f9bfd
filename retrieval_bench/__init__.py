"""retrieval_bench: measure and tune retrieval over codebases, stage by stage.

The public surface (docs/architecture.md#interfaces)::

    import retrieval_bench as rb

    pipe = (rb.retriever("bm25") + rb.retriever("exact")) >> rb.fusion("rrf")
    result = rb.Experiment(pipe, {"name": "d", "questions": "q.jsonl", "snapshot": "repo"}).run()
    rb.run("benchmarks/configs/fixtures.yaml").tables["all"]["rrf"]["MRR"]

Names are imported on first use, so ``import retrieval_bench`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from retrieval_bench.version import __version__

if TYPE_CHECKING:
    from retrieval_bench.api import compare, evaluate, query, run
    from retrieval_bench.builder import Experiment, Pipeline, Stage, fusion, reranker, retriever
    from retrieval_bench.config import BenchmarkConfig, load_config
    from retrieval_bench.harness.run.runner import BenchmarkResult
    from retrieval_bench.plan import Plan, compile_plan, load_plan
    from retrieval_bench.stage_graph import StageGraph
    from retrieval_bench.types import Chunk, Example, Run, StageResult

_EXPORTS = {
    "retrieval_bench.builder": ("Experiment", "Pipeline", "Stage", "fusion", "reranker",
                                "retriever"),
    "retrieval_bench.api": ("compare", "evaluate", "query", "run"),  # not index: a subpackage
    "retrieval_bench.config": ("BenchmarkConfig", "load_config"),
    "retrieval_bench.harness.run.runner": ("BenchmarkResult",),
    "retrieval_bench.plan": ("Plan", "compile_plan", "load_plan"),
    "retrieval_bench.stage_graph": ("StageGraph",),
    "retrieval_bench.types": ("Chunk", "Example", "Run", "StageResult"),
}  # fmt: skip
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "BenchmarkConfig",
    "BenchmarkResult",
    "Chunk",
    "Example",
    "Experiment",
    "Pipeline",
    "Plan",
    "Run",
    "Stage",
    "StageGraph",
    "StageResult",
    "__version__",
    "compare",
    "compile_plan",
    "evaluate",
    "fusion",
    "load_config",
    "load_plan",
    "query",
    "reranker",
    "retriever",
    "run",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'retrieval_bench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
