"""``rbench sweep``: every cell on the selection split with shared work, the chosen
cell and the base config on the report split, all stored (docs/sweeps.md).

1. **Select.** Every cell runs on the ``select_on`` split. Per snapshot group
   one :class:`~retrieval_bench.sweep.tasks.SweepTask` runs all cells on the
   run's executor (checkpointed, so an interrupted sweep resumes); each
   distinct chunking and stage runs once.
2. **Rank** (:mod:`~retrieval_bench.sweep.ranking`): the objective of each
   cell's last stage, mean with a 95% bootstrap CI, a paired test of each cell
   against the best, Holm-adjusted.
3. **Report.** The best cell and the base config run on the ``report_on``
   split (work shared again): the chosen setting is never scored on the
   questions that chose it.
4. **Store.** Each cell of each phase becomes a run (so ``rbench compare``
   and the web UI read it like any other); the sweep and its ranked table go
   to the ``sweeps`` tables.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.checkpoints import Checkpoints, group_key
from retrieval_bench.harness.run.executors import Executor, SerialExecutor, make_executor
from retrieval_bench.harness.run.groups import colliding_ids, merge_outcomes, plan_groups
from retrieval_bench.harness.run.outputs import write_outputs
from retrieval_bench.harness.run.prepare import PreparedDataset, Progress, select_questions
from retrieval_bench.harness.run.provenance import run_provenance
from retrieval_bench.harness.run.recording import record_results
from retrieval_bench.harness.run.results import BenchmarkResult, DatasetOutcome
from retrieval_bench.harness.run.runner import summarise
from retrieval_bench.harness.run.snapshot_work import make_llm_provider, release_llm
from retrieval_bench.harness.run.validate import check_stage_inputs, validate_stages
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.store.db import ResultsDB, failure_reason
from retrieval_bench.store.runfile import save_run_file
from retrieval_bench.store.sweepfile import save_sweep_file
from retrieval_bench.store.sweeps import finish_sweep, record_cell, reopen_sweep, start_sweep
from retrieval_bench.sweep.grid import Cell
from retrieval_bench.sweep.progress import CellProgress
from retrieval_bench.sweep.ranking import CellScore, PhaseCell, rank_cells, score_cell
from retrieval_bench.sweep.resume import resumable_sweep
from retrieval_bench.sweep.shared_work import WorkCounts
from retrieval_bench.sweep.spec import SweepSpec
from retrieval_bench.sweep.tasks import SweepTask, SweepTaskResult, run_sweep_task
from retrieval_bench.workspace import Workspace

DEFAULT_CELL = -1
"""The cell number of the base config in the report phase."""


@dataclass
class SweepResult:
    sweep_id: str
    name: str
    spec: SweepSpec
    cells: list[Cell]
    ranked: list[CellScore]
    """Every cell on the selection split, best first (failed cells last)."""
    report: list[CellScore] = field(default_factory=list)
    """The chosen cell, then the base config, on the report split."""
    counts: WorkCounts = field(default_factory=WorkCounts)
    seconds: float = 0.0
    executor: dict[str, Any] = field(default_factory=dict)

    @property
    def chosen(self) -> CellScore | None:
        return self.ranked[0] if self.ranked and self.ranked[0].status == "done" else None


def _with_split(cfg: BenchmarkConfig, split: str | None) -> BenchmarkConfig:
    out = cfg.model_copy(deep=True)
    if split is not None:
        for ds in out.datasets:
            ds.split = split
    return out


def run_sweep(
    base: BenchmarkConfig,
    spec: SweepSpec,
    cells: Sequence[Cell],
    ws: Workspace | None = None,
    progress: Progress | None = None,
    resume: str | None = None,
) -> SweepResult:
    """Run, rank, report and store the sweep of ``cells`` (expanded from ``spec``)."""
    ws = ws or Workspace.default()
    if base.answerer is not None:
        raise ConfigError(
            "a sweep tunes the retrieval stages; remove the answerer: section "
            "(answers are not swept)"
        )
    for split in (spec.select_on, spec.report_on):
        for ds in _with_split(base, split).datasets:
            select_questions(ds)  # a split no row has fails now, naming the splits present
    for cell in cells:
        validate_stages(cell.config)
    splits = [_with_split(base, split) for split in (spec.select_on, spec.report_on)]
    check_stage_inputs([c.config for c in cells], splits)  # each external file read once
    db = ResultsDB(ws.db_path)
    config_json = base.results_dump()
    sweep_json = spec.model_dump(mode="json")
    if resume is not None:
        sweep_id = resumable_sweep(db, base.name, config_json, sweep_json, resume)
        reopen_sweep(db, sweep_id)
    else:
        sweep_id = start_sweep(db, base.name, config_json, sweep_json)
    folder = ws.results_dir / "sweeps" / sweep_id
    save_sweep_file(db, sweep_id, folder)  # what --rebuild-db reads back
    checkpoints = Checkpoints(folder / "tasks", SweepTaskResult)
    started = time.perf_counter()
    try:
        with make_executor(base.executor) as executor:
            result = _sweep(base, spec, cells, ws, executor, checkpoints, progress, sweep_id)
        result.seconds = time.perf_counter() - started
        result.executor = executor.describe()
        _store(db, ws, result)
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        finish_sweep(db, sweep_id, status, {"seconds": time.perf_counter() - started},
                     failure_reason(exc))  # fmt: skip
        save_sweep_file(db, sweep_id, folder)
        raise
    checkpoints.clear()
    save_sweep_file(db, sweep_id, folder)
    return result


def _sweep(
    base: BenchmarkConfig,
    spec: SweepSpec,
    cells: Sequence[Cell],
    ws: Workspace,
    executor: Executor,
    checkpoints: Checkpoints[SweepTaskResult],
    progress: Progress | None,
    sweep_id: str,
) -> SweepResult:
    # one client for every cell that calls the model; it holds an on-demand local
    # server for the sweep (started now when workers will need it), stopped at its end
    llm_provider = make_llm_provider(base, ws, {}, more=[c.config for c in cells])
    try:
        if llm_provider is not None and not isinstance(executor, SerialExecutor):
            llm_provider.client()
        return _select_and_report(base, spec, cells, ws, executor, checkpoints, progress,
                                  sweep_id, llm_provider)  # fmt: skip
    finally:
        release_llm(llm_provider, base)


def _select_and_report(
    base: BenchmarkConfig,
    spec: SweepSpec,
    cells: Sequence[Cell],
    ws: Workspace,
    executor: Executor,
    checkpoints: Checkpoints[SweepTaskResult],
    progress: Progress | None,
    sweep_id: str,
    llm_provider: LazyLLM | None,
) -> SweepResult:
    run = functools.partial(
        _phase, ws=ws, executor=executor, checkpoints=checkpoints,
        llm_provider=llm_provider, progress=progress,
    )  # fmt: skip
    selecting = [(c.index, _with_split(c.config, spec.select_on)) for c in cells]
    selected, counts = run(selecting, "select", {c.index: c.label for c in cells})
    scores = [score_cell(selected[c.index], spec, "select", c) for c in cells]
    ranked = rank_cells(scores)
    result = SweepResult(sweep_id, base.name, spec, list(cells), ranked, counts=counts)
    chosen = result.chosen
    if chosen is None:
        return result
    reporting = [
        (chosen.cell.index, _with_split(chosen.cell.config, spec.report_on)),
        (DEFAULT_CELL, _with_split(base, spec.report_on)),
    ]
    default = Cell(DEFAULT_CELL, "default (the base config)", {}, base)
    labels = {chosen.cell.index: chosen.cell.label, DEFAULT_CELL: default.label}
    reported, report_counts = run(reporting, "report", labels)
    result.counts.add(report_counts)
    result.report = rank_cells(
        [
            score_cell(reported[chosen.cell.index], spec, "report", chosen.cell),
            score_cell(reported[DEFAULT_CELL], spec, "report", default),
        ],
        keep_order=True,
    )
    return result


def _phase(
    configs: list[tuple[int, BenchmarkConfig]],
    phase: str,
    labels: Mapping[int, str],
    *,
    ws: Workspace,
    executor: Executor,
    checkpoints: Checkpoints[SweepTaskResult],
    llm_provider: LazyLLM | None,
    progress: Progress | None,
) -> tuple[dict[int, PhaseCell], WorkCounts]:
    """Every config of ``configs`` over every dataset, one task per snapshot group;
    ``labels`` name the cells in the progress lines (:mod:`~retrieval_bench.sweep.progress`)."""
    first = configs[0][1]
    namespace = len(first.datasets) > 1 and colliding_ids(first)
    cells = {i: PhaseCell(i, cfg) for i, cfg in configs}
    counts = WorkCounts()
    for d, dataset in enumerate(first.datasets):
        grouped = plan_groups(dataset, first, ws, namespace)
        tasks: list[SweepTask] = []
        for g, group in enumerate(grouped.groups):
            ids = [e.id for e in [*group.examples, *group.train]]
            phase_cells = tuple((i, cfg) for i, cfg in configs)
            key = group_key({"cells": [cfg.results_dump() for _, cfg in phase_cells],
                             "dataset": d}, dataset.name, repr(group.ref), ids)  # fmt: skip
            label = group.ref.label if group.ref is not None else str(dataset.snapshot)
            tasks.append(SweepTask(g, key, dataset, phase_cells, ws, group.ref, label,
                                   tuple(group.examples), tuple(group.train)))  # fmt: skip
        lines = None if progress is None else CellProgress(
            progress, f"{phase} [{dataset.name}]", len(tasks) * len(configs), labels)  # fmt: skip
        results = _run_tasks(tasks, executor, checkpoints, llm_provider, lines, phase)
        for r in results:
            counts.add(r.counts)
        for i, cell in cells.items():
            shell = grouped.shell  # a value: each cell's dataset is a new one made from it
            failures, entries = list(shell.snapshot_failures), list(shell.snapshot_groups)
            outcomes: list[DatasetOutcome] = []
            for r in results:
                done = r.cells.get(i)
                reason = r.failure or (done.failure if done is not None else "no result")
                if done is None or done.outcome is None:
                    failures.append({"snapshot": r.label, "reason": reason,
                                     "query_ids": r.query_ids})  # fmt: skip
                    cell.errors.append(f"{r.label}: {reason}")
                    continue
                entries.append({"snapshot": r.label, "query_ids": r.query_ids,
                                "worker": r.worker})  # fmt: skip
                outcomes.append(done.outcome)
                for key, value in done.cost.items():
                    cell.cost[key] = cell.cost.get(key, 0.0) + value
            if outcomes:
                shell = replace(shell, snapshot_failures=failures, snapshot_groups=entries)
                cell.outcomes.append(merge_outcomes(shell, outcomes, cell.config))
                cell.groups += len(outcomes)
    return cells, counts


def _run_tasks(
    tasks: list[SweepTask],
    executor: Executor,
    checkpoints: Checkpoints[SweepTaskResult],
    llm_provider: LazyLLM | None,
    progress: Progress | None,
    phase: str,
) -> list[SweepTaskResult]:
    """The tasks' results in task order (checkpointed ones taken as they are)."""
    results: dict[int, SweepTaskResult] = {}
    todo = []
    for task in tasks:
        kept = checkpoints.load(task.key)
        if kept is not None:
            results[task.index] = kept
        else:
            todo.append(task)
    if results:
        print(f"  sweep {phase}: resumed {len(results)} finished snapshot(s) from checkpoints; "
              f"{len(todo)} to run", file=sys.stderr)  # fmt: skip
        if isinstance(progress, CellProgress):  # their cells count as done
            progress.skip(sum(len(r.cells) for r in results.values()))
    fn: Any = run_sweep_task
    if isinstance(executor, SerialExecutor):
        fn = functools.partial(run_sweep_task, llm_provider=llm_provider, progress=progress)
    waves = [todo] if isinstance(executor, SerialExecutor) else [todo[:1], todo[1:]]
    done = len(results)
    for wave in waves:
        if not wave:
            continue
        for position, result in executor.map_unordered(fn, wave):
            task = wave[position]
            results[task.index] = result
            checkpoints.save(result)
            done += 1
            if result.failure:
                print(f"  warning: sweep {phase}: snapshot {result.label} skipped "
                      f"({len(result.query_ids)} question(s)): {result.failure}",
                      file=sys.stderr)  # fmt: skip
            if progress is not None:
                progress(f"sweep {phase}", done, len(tasks), "snapshots")
    return [results[t.index] for t in tasks]


def _store(db: ResultsDB, ws: Workspace, result: SweepResult) -> None:
    """Each scored cell as a run, the cells' rows, and the sweep's summary."""
    for phase, scores in (("select", result.ranked), ("report", result.report)):
        split = result.spec.select_on if phase == "select" else result.spec.report_on
        for score in scores:
            run_id = None
            if score.phase_cell is not None and score.phase_cell.outcomes:
                run_id = _store_run(db, ws, score, result, split or "all")
            record_cell(
                db, result.sweep_id, score.cell.index, f"{phase}:{split or 'all'}",
                score.cell.label, score.cell.assignments, run_id, score.status,
                score.row(), score.error,
            )  # fmt: skip
    chosen = result.chosen
    summary = {
        "seconds": result.seconds,
        "cells": len(result.cells),
        "objective": result.spec.objective,
        "chosen": chosen.cell.index if chosen else None,
        "chosen_label": chosen.cell.label if chosen else None,
        "work": result.counts.as_dict(),
        "executor": result.executor,
        "report": [s.row() | {"cell": s.cell.index, "label": s.cell.label} for s in result.report],
    }
    finish_sweep(db, result.sweep_id, "done", summary)


def _store_run(
    db: ResultsDB, ws: Workspace, score: CellScore, result: SweepResult, split: str
) -> str:
    assert score.phase_cell is not None
    cell, cfg = score.phase_cell, score.phase_cell.config
    prepared: list[PreparedDataset] = [o.prepared for o in cell.outcomes]
    prov = run_provenance(cfg, prepared)
    prov["sweep"] = {"id": result.sweep_id, "cell": score.cell.index, "label": score.cell.label,
                     "split": split, "assignments": score.cell.assignments}  # fmt: skip
    name = f"{result.name} [{split}] {score.cell.label}"
    run_id = db.start_run(name, config=cfg.model_dump(mode="json"), provenance=prov,
                          dataset_fingerprint=prov["dataset_fingerprint"])  # fmt: skip
    stage_order = [s.label for s in cfg.stage_specs()]
    bench = summarise(BenchmarkResult(run_id, cfg, cell.outcomes, stage_order))
    bench.seconds = cell.cost.get("seconds", 0.0) + cell.cost.get("chunk_seconds", 0.0)
    bench.out_dir = ws.results_dir / run_id
    write_outputs(bench, bench.out_dir, prov)
    db.finish_run(run_id, "done", record_results(db, bench, prov, prepared))
    save_run_file(db, run_id, bench.out_dir, stage_order)
    return run_id
