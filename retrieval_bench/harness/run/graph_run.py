"""One loop over a config's stage graph (docs/architecture.md#the-stage-graph).

Nodes run in the graph's topological order; each reads the results of the
labels it declares (:mod:`retrieval_bench.stage_graph`) and its result records
them as ``inputs``. A retriever's train-split run, made when some fusion is
trained, goes to the fusions that read that retriever. With a
:class:`StageMemo` a node whose key an earlier config already ran is taken
from it instead (a sweep's cells over one snapshot: docs/sweeps.md#shared-work).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

from retrieval_bench.contracts.registry import FUSIONS
from retrieval_bench.harness.run.stages import (
    StageContext,
    fitted_stage_names,
    run_fusion,
    run_reranker,
    run_retriever,
)
from retrieval_bench.stage_graph import StageGraph, StageNode
from retrieval_bench.types import Run, StageResult

NodeOutput = tuple[StageResult, Run | None]
"""A node's result and, for a retriever feeding a trained fusion, its train-split run."""


class StageMemo(Protocol):
    """Where node outputs outlive one config (a sweep's shared work)."""

    def once(self, key: tuple[Any, ...], work: Callable[[], NodeOutput]) -> NodeOutput:
        """The output stored under ``key``, or ``work()``'s, stored."""
        ...


def run_graph(
    ctx: StageContext, graph: StageGraph, k: int, memo: StageMemo | None = None
) -> list[StageResult]:
    """Every node of ``graph`` over ``ctx``'s dataset, in order; ``k`` candidates each."""
    fusions = [n.spec for n in graph.of_kind("fusion")]
    need_train = bool(fitted_stage_names(fusions, FUSIONS))
    keys = graph.keys(k, need_train) if memo is not None else {}
    results: dict[str, StageResult] = {}
    train_runs: dict[str, Run] = {}

    def work(node: StageNode) -> NodeOutput:
        inputs = [results[label] for label in node.inputs]
        if node.kind == "retriever":
            out = run_retriever(ctx, node, k, need_train)
        elif node.kind == "fusion":
            out = run_fusion(ctx, node, inputs, k, train_runs), None
        else:
            out = run_reranker(ctx, node, inputs[0], k), None
        if node.cutoff is not None:  # ``cutoff: N``: the stage's run keeps its top N
            result, train_run = out
            out = replace(result, run=result.run.truncated(node.cutoff)), train_run
        return out

    for node in graph:
        if memo is None:
            result, train_run = work(node)
        else:
            result, train_run = memo.once(keys[node.label], partial(work, node))
        results[node.label] = result
        if train_run is not None:
            train_runs[node.label] = train_run
    return list(results.values())
