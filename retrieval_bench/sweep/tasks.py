"""One snapshot's share of a sweep: every cell over one snapshot group, with shared
work (docs/sweeps.md#shared-work).

A :class:`SweepTask` is the sweep's counterpart of
:class:`~retrieval_bench.harness.run.snapshot_work.GroupTask`: one snapshot group
of one dataset, but every cell of the sweep. :func:`run_sweep_task` opens the
snapshot once, chunks it once per distinct chunker setting (cells that differ
only downstream share the chunks), runs each distinct stage once
(:class:`~retrieval_bench.sweep.shared_work.SharedStages`) and scores each cell.
It is a plain function of a picklable task, so it runs on any executor.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from retrieval_bench.config import BenchmarkConfig, DatasetSpec
from retrieval_bench.errors import RBenchError
from retrieval_bench.harness.run.prepare import Progress, needs_vectors, prepare_snapshot
from retrieval_bench.harness.run.results import DatasetOutcome
from retrieval_bench.harness.run.snapshot_work import (
    make_llm_provider,
    open_ref,
    score_dataset,
    slim,
    with_index_stats,
)
from retrieval_bench.harness.run.stages import StageContext
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.snapshot.refs import SnapshotRef
from retrieval_bench.sweep.progress import CellProgress
from retrieval_bench.sweep.shared_work import SharedStages, WorkCounts, stage_cost
from retrieval_bench.types import Example
from retrieval_bench.workspace import Workspace


def chunking_key(cfg: BenchmarkConfig) -> str:
    """What a cell's chunks depend on: the chunker spec and whether vectors are needed."""
    data = {
        "chunker": cfg.chunker.model_dump(mode="json"),
        "vectors": needs_vectors(cfg.retrievers),
    }
    return json.dumps(data, sort_keys=True, default=str)


@dataclass(frozen=True)
class SweepTask:
    index: int
    key: str
    spec: DatasetSpec
    cells: tuple[tuple[int, BenchmarkConfig], ...]
    """(cell index, the cell's config), in cell order."""
    ws: Workspace
    ref: SnapshotRef | None
    label: str
    examples: tuple[Example, ...]
    train: tuple[Example, ...] = ()


@dataclass
class CellOutcome:
    """One cell over one snapshot group: scored (and slimmed), or why not."""

    outcome: DatasetOutcome | None = None
    failure: str | None = None
    cost: dict[str, float] = field(default_factory=dict)


@dataclass
class SweepTaskResult:
    index: int
    key: str
    label: str
    query_ids: list[str]
    cells: dict[int, CellOutcome] = field(default_factory=dict)
    counts: WorkCounts = field(default_factory=WorkCounts)
    failure: str | None = None
    """Why the snapshot could not be opened (no cell ran on it)."""
    seconds: float = 0.0
    worker: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)


def run_sweep_task(
    task: SweepTask, llm_provider: LazyLLM | None = None, progress: Progress | None = None
) -> SweepTaskResult:
    """Every cell of ``task`` over its snapshot group, each distinct piece of work once.
    ``progress`` hears a line per cell and the cell's stage lines under its label
    (:class:`~retrieval_bench.sweep.progress.CellProgress`, made here if it is not one)."""
    t0 = time.perf_counter()
    lines = progress if isinstance(progress, CellProgress) or progress is None else (
        CellProgress(progress, "task", len(task.cells), {}))  # fmt: skip
    result = SweepTaskResult(task.index, task.key, task.label, [e.id for e in task.examples])
    result.worker = f"{socket.gethostname()}:{os.getpid()}"
    try:
        snapshot = open_ref(task.ref, task.spec, task.ws, task.cells[0][1].repos)
    except RBenchError as exc:
        result.failure = str(exc)
        result.seconds = time.perf_counter() - t0
        if lines is not None:
            lines.skip(len(task.cells))
        return result
    opened = time.perf_counter() - t0
    if llm_provider is None:  # a pool worker: the sweep's process holds the local server
        cfgs = [cfg for _, cfg in task.cells]
        llm_provider = make_llm_provider(cfgs[0], task.ws, result.provenance, False, cfgs[1:])
    by_chunking: dict[str, list[tuple[int, BenchmarkConfig]]] = {}
    for index, cfg in task.cells:
        by_chunking.setdefault(chunking_key(cfg), []).append((index, cfg))
    for cells in by_chunking.values():
        first = cells[0][1]
        if lines is not None:
            lines.between_cells()  # the chunking is every cell's of this group
        try:
            ds = prepare_snapshot(
                task.spec, first, task.ws, snapshot, list(task.examples), list(task.train),
                [], lines, {"snapshot": opened}, per_question_snapshots=True,
            )  # fmt: skip
        except RBenchError as exc:
            for index, _ in cells:
                result.cells[index] = CellOutcome(failure=str(exc))
            if lines is not None:
                lines.skip(len(cells))
            continue
        result.counts.chunkings_run += 1
        result.counts.chunkings_reused += len(cells) - 1
        chunk_seconds = ds.timings.get("chunk_index", 0.0)
        shared = SharedStages(StageContext(ds, llm_provider, lines, task.ws))
        for index, cfg in cells:
            if lines is not None:
                lines.begin(index)
            stages = shared.stages_for(cfg)
            # the cell's own chunk counts (its retrievers' index_stats, as if it ran
            # alone); slim makes a new outcome: the shared dataset stays whole
            outcome = slim(score_dataset(with_index_stats(ds, stages), stages, cfg))
            cost = stage_cost(stages)
            cost["chunk_seconds"] = chunk_seconds
            result.cells[index] = CellOutcome(outcome, cost=cost)
        result.counts.add(shared.counts)
    result.seconds = time.perf_counter() - t0
    return result
