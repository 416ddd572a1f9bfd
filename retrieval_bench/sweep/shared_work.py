"""Each distinct piece of a sweep's work runs once per snapshot (docs/sweeps.md#shared-work).

Within one chunked snapshot, a sweep cell is a list of stages; many cells
share stages. :class:`SharedStages` keys every stage run by what it depends on
— a retriever by its spec and the candidate count; a fusion by its spec and
the keys of the retriever runs it fuses; a reranker by its spec and the key of
the stage it reranks — and runs a key only the first time a cell needs it.
The later cells take the same :class:`~retrieval_bench.types.StageResult`
(stage results are read-only once made: scoring reads them, nothing writes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.stages import (
    StageContext,
    default_rerank_input,
    fitted_stage_names,
    run_fusions,
    run_rerankers,
    run_retrievers,
)
from retrieval_bench.registry import FUSIONS
from retrieval_bench.specs import StageSpec
from retrieval_bench.types import Run, StageResult


def _spec_key(spec: StageSpec) -> str:
    return json.dumps(spec.model_dump(mode="json"), sort_keys=True, default=str)


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
    """The memo of stage runs over one prepared snapshot (one chunker setting)."""

    ctx: StageContext
    counts: WorkCounts = field(default_factory=WorkCounts)
    _retrievers: dict[tuple[Any, ...], tuple[StageResult, Run | None]] = field(default_factory=dict)
    _stages: dict[tuple[Any, ...], StageResult] = field(default_factory=dict)

    def stages_for(self, cfg: BenchmarkConfig) -> list[StageResult]:
        """The stage results of ``cfg`` (retrievers, fusions, rerankers), each run only
        if no earlier cell ran the same work."""
        k = cfg.candidates
        need_train = bool(fitted_stage_names(cfg.fusions, FUSIONS))
        retrieved: list[StageResult] = []
        train_runs: list[Run] = []
        keys: dict[str, tuple[Any, ...]] = {}
        for spec in cfg.retrievers:
            key: tuple[Any, ...] = ("retriever", _spec_key(spec), k, need_train)
            if key not in self._retrievers:
                (result,), trained = run_retrievers(self.ctx, [spec], k, need_train)
                self._retrievers[key] = (result, trained[0] if trained else None)
                self.counts.stages_run += 1
            else:
                self.counts.stages_reused += 1
            result, train_run = self._retrievers[key]
            retrieved.append(result)
            if train_run is not None:
                train_runs.append(train_run)
            keys[spec.label] = key
        inputs = tuple(keys[s.label] for s in cfg.retrievers)
        fused: list[StageResult] = []
        for spec in cfg.fusions:
            key = ("fusion", _spec_key(spec), k, inputs)
            fused.append(
                self._once(key, lambda s=spec: run_fusions(self.ctx, retrieved, [s], k, train_runs))
            )
            keys[spec.label] = key
        earlier = retrieved + fused
        default_input = default_rerank_input(earlier, [f.label for f in cfg.fusions])
        reranked: list[StageResult] = []
        for spec in cfg.rerankers:
            source = str(spec.params().get("input", default_input))
            key = ("reranker", _spec_key(spec), k, keys.get(source, (source,)))
            done = earlier + reranked
            reranked.append(
                self._once(
                    key, lambda s=spec, d=done: run_rerankers(self.ctx, d, [s], k, default_input)
                )
            )
            keys[spec.label] = key
        return earlier + reranked

    def _once(self, key: tuple[Any, ...], run: Any) -> StageResult:
        if key in self._stages:
            self.counts.stages_reused += 1
        else:
            (self._stages[key],) = run()
            self.counts.stages_run += 1
        return self._stages[key]


def stage_cost(stages: Sequence[StageResult]) -> dict[str, float]:
    """A cell's cost as if it ran alone: its stages' own seconds, LLM calls and tokens."""
    return {
        "seconds": sum(s.seconds for s in stages),
        "llm_calls": float(sum(s.llm_calls for s in stages)),
        "llm_tokens": float(sum(s.llm_tokens for s in stages)),
    }
