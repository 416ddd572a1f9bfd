"""Each distinct piece of a sweep's work runs once per snapshot (docs/sweeps.md#shared-work).

Within one chunked snapshot, a sweep cell is a list of stages; many cells
share stages. :class:`SharedStages` keys every stage run by what it depends on
— the stage graph's node key: its spec, the candidate count and the keys of the
stages it reads (:meth:`~retrieval_bench.stage_graph.StageGraph.keys`) — and runs
a key only the first time a cell needs it.
The later cells take the same :class:`~retrieval_bench.types.StageResult`
(stage results are read-only once made: scoring reads them, nothing writes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.run.graph_run import NodeOutput, run_graph
from retrieval_bench.harness.run.stages import StageContext
from retrieval_bench.plan import Plan, compile_plan
from retrieval_bench.types import StageResult


@dataclass
class WorkCounts:
    """Stage runs a sweep made vs took from an earlier cell (and chunkings likewise)."""

    stages_run: int = 0
    stages_reused: int = 0
    chunkings_run: int = 0
    chunkings_reused: int = 0

    def add(self, other: WorkCounts) -> None:
        self.stages_run += other.stages_run
        self.stages_reused += other.stages_reused
        self.chunkings_run += other.chunkings_run
        self.chunkings_reused += other.chunkings_reused

    def as_dict(self) -> dict[str, int]:
        return {
            "stages_run": self.stages_run,
            "stages_reused": self.stages_reused,
            "chunkings_run": self.chunkings_run,
            "chunkings_reused": self.chunkings_reused,
        }


@dataclass
class SharedStages:
    """The memo of stage runs over one prepared snapshot (one chunker setting): a
    :class:`~retrieval_bench.harness.run.graph_run.StageMemo` keyed by the stage graph's
    node keys."""

    ctx: StageContext
    counts: WorkCounts = field(default_factory=WorkCounts)
    _done: dict[tuple[Any, ...], NodeOutput] = field(default_factory=dict)
    _plans: dict[int, Plan] = field(default_factory=dict)
    """The plans of the configs seen, by identity (a config is compiled once)."""

    def stages_for(self, cfg: BenchmarkConfig | Plan) -> list[StageResult]:
        """The stage results of ``cfg`` (retrievers, fusions, rerankers; a config is
        compiled into its plan, once), each run only if no earlier cell ran the same
        work."""
        plan = self._plans.get(id(cfg)) if not isinstance(cfg, Plan) else cfg
        if plan is None:
            plan = self._plans[id(cfg)] = compile_plan(cfg)
        return run_graph(self.ctx, plan.graph, plan.config.candidates, self)

    def once(self, key: tuple[Any, ...], work: Callable[[], NodeOutput]) -> NodeOutput:
        if key in self._done:
            self.counts.stages_reused += 1
        else:
            self._done[key] = work()
            self.counts.stages_run += 1
        return self._done[key]


def stage_cost(stages: Sequence[StageResult]) -> dict[str, float]:
    """A cell's cost as if it ran alone: its stages' own seconds, LLM calls and tokens."""
    return {
        "seconds": sum(s.seconds for s in stages),
        "llm_calls": float(sum(s.llm_calls for s in stages)),
        "llm_tokens": float(sum(s.llm_tokens for s in stages)),
    }
