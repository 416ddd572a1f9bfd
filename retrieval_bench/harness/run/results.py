"""What a benchmark run produced: per-dataset outcomes and the run's result.

Built by :mod:`retrieval_bench.harness.run.runner`, written to ``results/<run-id>/``
by :mod:`retrieval_bench.harness.run.outputs` and to the results database by
:mod:`retrieval_bench.harness.run.recording`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.answers.dataset import AnswerSection
from retrieval_bench.harness.run.prepare import PreparedDataset
from retrieval_bench.types import StageResult


@dataclass
class DatasetOutcome:
    prepared: PreparedDataset
    stages: list[StageResult]
    per_query: dict[str, dict[str, dict[str, float]]]
    """stage → query id → metric → value."""
    lost: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """stage → query id → gold files lost at that stage."""


@dataclass
class BenchmarkResult:
    run_id: str
    config: BenchmarkConfig
    outcomes: list[DatasetOutcome]
    stage_order: list[str]
    tables: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """subset → stage → metric → mean."""
    counts: dict[str, int] = field(default_factory=dict)
    """subset → number of queries (the questions that could not be run included)."""
    failed: dict[str, dict[str, str]] = field(default_factory=dict)
    """subset → question id → why it could not be run (its snapshot failed); such a
    question scores 0 in every metric (docs/metrics.md#questions-that-could-not-be-run)."""
    out_dir: Path | None = None
    seconds: float = 0.0
    sweeps: dict[str, list[dict[str, float | int]]] = field(default_factory=dict)
    """reranker stage → threshold sweep rows over all queries (docs/metrics.md#threshold-sweep)."""
    answers: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    """answer metric → mean, ci_low, ci_high, count, missing (std, min, max), over
    every question of every dataset; empty without an ``answerer:`` (docs/stages.md#answerer)."""
    answer_stage: AnswerSection | None = None
    """The answers themselves, their scores and the answer stage's LLM use."""
    loads: dict[str, float] = field(default_factory=dict)
    """Seconds spent loading models during the run (the embedding model, the local
    LLM server), kept out of every stage's seconds; ``load:<name>`` in the timings."""
