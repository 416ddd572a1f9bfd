"""A whole benchmark run: every dataset, every stage, scored, stored, reported
(docs/architecture.md#how-a-benchmark-run-flows).

The orchestration and the scoring live here; the run folder
``<workspace>/results/<run-id>/`` is written by :mod:`~retrieval_bench.harness.run.outputs`,
the provenance collected by :mod:`~retrieval_bench.harness.run.provenance`, and the
database rows (which ``rbench compare`` and the web UI read) recorded by
:mod:`~retrieval_bench.harness.run.recording`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.answers.dataset import DatasetAnswers, evaluate_answers
from retrieval_bench.harness.run.checkpoints import Checkpoints
from retrieval_bench.harness.run.executors import Executor, SerialExecutor, make_executor
from retrieval_bench.harness.run.groups import (
    GroupedDataset,
    colliding_ids,
    group_tasks,
    is_grouped,
    namespace_prepared,
    plan_groups,
    run_groups,
)
from retrieval_bench.harness.run.outputs import write_outputs
from retrieval_bench.harness.run.prepare import (
    PreparedDataset,
    Progress,
    prepare_dataset,
    select_questions,
)
from retrieval_bench.harness.run.provenance import run_provenance
from retrieval_bench.harness.run.recording import record_results
from retrieval_bench.harness.run.results import BenchmarkResult, DatasetOutcome
from retrieval_bench.harness.run.resume import resumable_run
from retrieval_bench.harness.run.snapshot_work import (
    GroupResult,
    make_llm_provider,
    release_llm,
    run_stages,
)
from retrieval_bench.harness.run.validate import check_stage_inputs, validate_stages
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.loads import loads_since
from retrieval_bench.plan import Plan
from retrieval_bench.store.db import ResultsDB, failure_reason
from retrieval_bench.store.io import write_text_atomically
from retrieval_bench.store.runfile import save_run_file
from retrieval_bench.workspace import Workspace

__all__ = ["BenchmarkResult", "DatasetOutcome", "run_benchmark"]

log = logging.getLogger(__name__)


def _subset_members(outcomes: Sequence[DatasetOutcome], keys: Sequence[str]) -> dict[str, set[str]]:
    """Query ids of each reported subset: all, each dataset, and each boolean key on/off."""
    subsets: dict[str, set[str]] = {"all": set()}
    for o in outcomes:
        ids = {e.id for e in o.prepared.examples}
        subsets["all"] |= ids
        if len(outcomes) > 1:
            subsets[f"dataset={o.prepared.spec.name}"] = ids
        for key in keys:
            for e in o.prepared.examples:
                if key in e.meta:
                    subsets.setdefault(f"{key}={str(bool(e.meta[key])).lower()}", set()).add(e.id)
    return subsets


def _aggregate(
    outcomes: Sequence[DatasetOutcome], stage_order: Sequence[str], members: set[str]
) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for stage in stage_order:
        rows = [
            row
            for o in outcomes
            for qid, row in o.per_query.get(stage, {}).items()
            if qid in members
        ]
        if not rows:
            continue
        # each metric is averaged over the queries that have it (span-level
        # metrics exist only for queries with gold spans)
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for r in rows:
            for m, v in r.items():
                sums[m] = sums.get(m, 0.0) + v
                counts[m] = counts.get(m, 0) + 1
        table[stage] = {m: sums[m] / counts[m] for m in sorted(sums)}
        ran = [s for o in outcomes for s in o.stages if s.name == stage]
        table[stage]["seconds"] = sum(s.seconds for s in ran)
        table[stage]["llm_calls"] = float(sum(s.llm_calls for s in ran))
        table[stage]["llm_cache_hits"] = float(sum(s.llm_cache_hits for s in ran))
    return table


def _threshold_sweeps(
    outcomes: Sequence[DatasetOutcome], rerankers: Sequence[str]
) -> dict[str, list[dict[str, float | int]]]:
    """Keep-above-threshold P/R/F1 per reranker, pooled over datasets on one grid."""
    from retrieval_bench.reranking.threshold import default_thresholds, threshold_sweep

    sweeps: dict[str, list[dict[str, float | int]]] = {}
    for stage in rerankers:
        ran = [(o, s) for o in outcomes for s in o.stages if s.name == stage]
        scores = [v for _, s in ran for d in s.run.scores.values() for v in d.values()]
        if not scores:
            continue
        grid = default_thresholds(scores)
        pooled: dict[float, dict[str, float]] = {}
        total = 0
        for o, s in ran:
            n = len(o.prepared.examples)
            total += n
            for row in threshold_sweep(s.run, o.prepared.examples, o.prepared.corpus, grid):
                acc = pooled.setdefault(row.threshold, {"P": 0.0, "R": 0.0, "F1": 0.0, "kept": 0.0})
                for key in acc:
                    acc[key] += getattr(row, key) * n
        sweeps[stage] = [
            {"threshold": t, **{k: v / max(total, 1) for k, v in acc.items()}}
            for t, acc in sorted(pooled.items())
        ]
    return sweeps


def _add_paired(result: BenchmarkResult) -> None:
    """Each subset's paired columns (every stage against the baseline, the fusion
    guard) into its table as reserved entries (:mod:`~retrieval_bench.harness.compare.paired`)."""
    from retrieval_bench.harness.compare import paired

    config = result.config.model_dump(mode="json")
    baseline, metric = paired.resolve_baseline(config)
    inputs = paired.fusion_inputs(config)
    per_query = {
        stage: {q: m for o in result.outcomes for q, m in o.per_query.get(stage, {}).items()}
        for stage in result.stage_order
    }
    members = _subset_members(result.outcomes, result.config.metrics.subsets)
    for subset, table in result.tables.items():
        view = paired.paired_view(per_query, list(table), baseline, metric, inputs, members[subset])
        if view is None:
            if subset == "all":
                log.warning(
                    "no paired columns: baseline stage %s has no per-query %s values",
                    baseline, metric,
                )  # fmt: skip
            continue
        for stage, entries in paired.encode(view).items():
            table[stage].update(entries)


def summarise(result: BenchmarkResult) -> BenchmarkResult:
    """Fill ``result``'s tables (per subset; with the paired columns of
    :mod:`~retrieval_bench.harness.compare.paired`), counts, questions that could not be run
    and reranker threshold sweeps from its outcomes; returns it."""
    cfg, outcomes = result.config, result.outcomes
    unrun = {q: why for o in outcomes for q, why in o.prepared.failed_questions.items()}
    for subset, members in _subset_members(outcomes, cfg.metrics.subsets).items():
        result.tables[subset] = _aggregate(outcomes, result.stage_order, members)
        result.counts[subset] = len(members)
        result.failed[subset] = {q: why for q, why in unrun.items() if q in members}
    _add_paired(result)
    result.sweeps = _threshold_sweeps(outcomes, [r.label for r in cfg.rerankers])
    return result


def _check_answer_metrics(cfg: BenchmarkConfig) -> None:
    """Fail before any work when answer metrics are named wrongly (ConfigError)."""
    cfg.check_answer_stage(cfg.name)
    if cfg.answerer is not None and cfg.answer_metrics:
        from retrieval_bench.metrics.answer.factory import needs_llm

        needs_llm(cfg.answer_metrics)  # resolves every name: unknown ones raise here


def run_benchmark(
    cfg: BenchmarkConfig | Plan,
    ws: Workspace | None = None,
    progress: Progress | None = None,
    on_dataset: Callable[[PreparedDataset], None] | None = None,
    resume: str | None = None,
) -> BenchmarkResult:
    """Run the configured benchmark (a config, or its compiled :class:`Plan`) end to
    end and store everything, the plan as ``plan.json``.

    The run is recorded (a ``running`` row and ``run.json``) before the first
    work, so a run killed while a snapshot is opened or its first index built
    is still there for ``--resume``; the datasets are then prepared (snapshot,
    chunks, index; for per-question snapshots: the groups planned) and their
    provenance stored; every way out after the record marks the run ``done``,
    ``failed`` (with why) or ``interrupted``. Snapshot groups run on
    ``cfg.executor`` and are checkpointed as they finish; ``resume`` (a run id,
    or ``last``) continues an interrupted or failed run of the same config
    without redoing its finished groups.
    """
    ws = ws or Workspace.default()
    plan = validate_stages(cfg)  # compiled once: stage names and parameters, before any work
    cfg = plan.config
    _check_answer_metrics(cfg)
    for spec in cfg.datasets:  # every dataset's questions, before any is chunked or indexed
        select_questions(spec)
    check_stage_inputs([cfg])  # the files stages read (external), against those questions
    db = ResultsDB(ws.db_path)  # a damaged results database stops the run before any work
    resumed = resumable_run(db, cfg, resume) if resume is not None else None
    started = time.perf_counter()
    grouped_names = {spec.name for spec in cfg.datasets if is_grouped(spec)}
    # a Ray address that does not answer fails here, before a run is stored
    executor: Executor = make_executor(cfg.executor) if grouped_names else SerialExecutor()
    try:
        run_id = _record_start(db, cfg, resumed, executor)
    except BaseException:
        executor.close()
        raise
    run_dir = ws.results_dir / run_id
    save_run_file(db, run_id, run_dir)  # a run killed from here on is still in results/
    checkpoints = Checkpoints(run_dir / "groups", GroupResult)
    stage_order = [s.label for s in cfg.stage_specs()]
    llm_provider: LazyLLM | None = None
    try:  # from here every way out marks the run: done, failed (with why) or interrupted
        with executor:
            prepared, grouped = _prepare(cfg, ws, grouped_names, progress, on_dataset)
            prov = run_provenance(cfg, prepared)
            prov["executor"] = executor.describe()
            db.update_provenance(run_id, prov, dataset_fingerprint=prov["dataset_fingerprint"])
            save_run_file(db, run_id, run_dir)
            llm_provider = make_llm_provider(cfg, ws, prov)
            outcomes, answered = _run_datasets(
                plan, ws, prepared, grouped, (executor, checkpoints, llm_provider), prov, progress,
                on_dataset,
            )  # fmt: skip
        result = summarise(BenchmarkResult(run_id, cfg, outcomes, stage_order))
        if cfg.answerer is not None:
            section = evaluate_answers(
                cfg.answerer, cfg.answer_input(), answered, cfg.answer_metrics, llm_provider
            )
            result.answer_stage = section
            result.answers = section.aggregates()
        result.seconds = time.perf_counter() - started
        result.loads = loads_since(started)
        result.out_dir = ws.results_dir / run_id
        prov["question_counts"] = question_counts(result)
        write_outputs(result, result.out_dir, prov)
        write_text_atomically(result.out_dir / "plan.json", json.dumps(plan.to_json(), indent=2))
        ran = [o.prepared for o in result.outcomes]  # one per dataset, as run (and merged)
        db.finish_run(run_id, "done", record_results(db, result, prov, ran))
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        total = {"total": time.perf_counter() - started}
        db.finish_run(run_id, status, total, error=failure_reason(exc))
        save_run_file(db, run_id, run_dir, stage_order)
        raise
    finally:
        release_llm(llm_provider, cfg)  # a model server the run started on demand stops
    checkpoints.clear()  # the stored results are complete: nothing left to resume
    save_run_file(db, run_id, run_dir, stage_order)  # what --rebuild-db reads back
    return result


def question_counts(result: BenchmarkResult) -> dict[str, dict[str, Any]]:
    """Subset → ``{"total": questions, "failed": {id: why it could not be run}}``:
    what ``rbench show`` and the web page say below a table (stored in the
    provenance as ``question_counts``; docs/metrics.md#questions-that-could-not-be-run)."""
    return {
        subset: {"total": n, "failed": result.failed.get(subset, {})}
        for subset, n in result.counts.items()
    }


def _record_start(
    db: ResultsDB, cfg: BenchmarkConfig, resumed: str | None, executor: Executor
) -> str:
    """Store the run as ``running`` (or reopen the resumed one) with the provenance
    known before any work; returns its id."""
    prov = run_provenance(cfg, [])  # the datasets' part follows once they are prepared
    prov["executor"] = executor.describe()
    if resumed is None:
        run_id = db.start_run(cfg.name, config=cfg.model_dump(mode="json"), provenance=prov)
    else:
        run_id = resumed
        db.reopen_run(run_id, config=cfg.model_dump(mode="json"), provenance=prov)
    return run_id


def _prepare(
    cfg: BenchmarkConfig,
    ws: Workspace,
    grouped_names: set[str],
    progress: Progress | None,
    on_dataset: Callable[[PreparedDataset], None] | None,
) -> tuple[list[PreparedDataset], dict[str, GroupedDataset]]:
    """Every dataset prepared: snapshot opened, chunked and indexed; for per-question
    snapshots, the groups planned (they run later, on the executor)."""
    namespace = len(cfg.datasets) > 1 and colliding_ids(cfg)
    prepared: list[PreparedDataset] = []
    grouped: dict[str, GroupedDataset] = {}
    for spec in cfg.datasets:
        if spec.name in grouped_names:
            grouped[spec.name] = plan_groups(spec, cfg, ws, namespace)
            prepared.append(grouped[spec.name].shell)
            continue
        ds = prepare_dataset(spec, cfg, ws, progress)
        if namespace:
            ds = namespace_prepared(ds)
        if on_dataset:
            on_dataset(ds)
        prepared.append(ds)
    return prepared, grouped


def _run_datasets(
    plan: Plan,
    ws: Workspace,
    prepared: list[PreparedDataset],
    grouped: dict[str, GroupedDataset],
    how: tuple[Executor, Checkpoints[GroupResult], LazyLLM | None],
    prov: dict[str, Any],
    progress: Progress | None,
    on_dataset: Callable[[PreparedDataset], None] | None,
) -> tuple[list[DatasetOutcome], list[DatasetAnswers]]:
    """Every dataset's stages, scored: single-snapshot datasets here, snapshot groups
    on the executor; the provenance is completed with what only the run knows."""
    cfg, (executor, checkpoints, llm_provider) = plan.config, how
    if grouped and llm_provider is not None and not isinstance(executor, SerialExecutor):
        llm_provider.client()  # start the local LLM server once, before workers race to
    outcomes: list[DatasetOutcome] = []
    answered: list[DatasetAnswers] = []
    worker_prov: dict[str, Any] = {}
    for ds in prepared:
        if ds.spec.name not in grouped:
            outcome, answers = run_stages(ds, plan, llm_provider, progress, ws)
            outcomes.append(outcome)
            answered.extend([answers] if answers is not None else [])
            continue
        group = grouped[ds.spec.name]
        tasks = group_tasks(group, plan, ws)
        outcome, group_answers, reported = run_groups(
            group, tasks, executor, checkpoints, llm_provider, progress
        )
        for key, value in reported.items():
            if isinstance(value, dict):
                worker_prov.setdefault(key, {}).update(value)
            else:
                worker_prov[key] = value
        if on_dataset:
            on_dataset(outcome.prepared)
        outcomes.append(outcome)
        answered.extend(group_answers)
    if grouped:  # chunk counts, missing gold and timings are known only now
        final = run_provenance(cfg, [o.prepared for o in outcomes])  # groups merged
        models = {**final.pop("models", {}), **worker_prov.pop("models", {}),
                  **prov.get("models", {})}  # fmt: skip
        prov.update(final, **worker_prov, models=models)
    return outcomes, answered
