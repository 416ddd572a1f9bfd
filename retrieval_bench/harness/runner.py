"""A whole benchmark run: every dataset, every stage, scored, stored, reported
(docs/architecture.md#how-a-benchmark-run-flows).

The orchestration and the scoring live here; the run folder
``<workspace>/results/<run-id>/`` is written by :mod:`~retrieval_bench.harness.outputs`,
the provenance collected by :mod:`~retrieval_bench.harness.provenance`, and the
database rows (which ``rbench compare`` and the web UI read) recorded by
:mod:`~retrieval_bench.harness.recording`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.answers import (
    DatasetAnswers,
    answer_dataset,
    evaluate_answers,
)
from retrieval_bench.harness.groups import (
    GroupedDataset,
    colliding_ids,
    is_grouped,
    namespace_prepared,
    open_groups,
    run_groups,
)
from retrieval_bench.harness.outputs import write_outputs
from retrieval_bench.harness.pipeline import (
    PreparedDataset,
    Progress,
    prepare_dataset,
    select_questions,
)
from retrieval_bench.harness.provenance import run_provenance
from retrieval_bench.harness.recording import record_results
from retrieval_bench.harness.results import BenchmarkResult, DatasetOutcome
from retrieval_bench.harness.stages import (
    StageContext,
    any_needs_llm,
    default_rerank_input,
    fitted_stage_names,
    run_fusions,
    run_rerankers,
    run_retrievers,
)
from retrieval_bench.harness.validate import validate_stages
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.loads import loads_since
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.registry import FUSIONS, RERANKERS, RETRIEVERS, Registry
from retrieval_bench.specs import StageSpec
from retrieval_bench.store.db import ResultsDB, failure_reason
from retrieval_bench.store.runfile import save_run_file
from retrieval_bench.types import Run, StageResult
from retrieval_bench.workspace import Workspace

__all__ = ["BenchmarkResult", "DatasetOutcome", "run_benchmark"]

log = logging.getLogger(__name__)


def _stage_inputs(stage: StageResult, stages: Sequence[StageResult]) -> list[Run] | None:
    """The runs that fed ``stage`` (None for a retriever: the whole corpus fed it)."""
    if stage.parent in (None, "corpus"):
        return None
    if stage.parent == "retrievers":
        return [s.run for s in stages if s.parent in (None, "corpus")]
    return [s.run for s in stages if s.name == stage.parent]


def _score_dataset(
    ds: PreparedDataset, stages: list[StageResult], cfg: BenchmarkConfig
) -> DatasetOutcome:
    """Every stage's per-query metrics; ``lost`` is ``Lost@table_k`` (the one
    definition in :mod:`retrieval_bench.metrics.retrieval.scoring`)."""
    ks, budgets = cfg.metrics.ks, cfg.metrics.budgets
    outcome = DatasetOutcome(ds, stages, {})
    for stage in stages:
        metrics = evaluate_stage(
            stage.run, ds.examples, ds.corpus, ks=ks, budgets=budgets,
            inputs=_stage_inputs(stage, stages),
        )  # fmt: skip
        rows = {q: dict(m) for q, m in metrics.per_query.items()}
        lost = {q: by_k[cfg.table_k] for q, by_k in metrics.lost.items() if cfg.table_k in by_k}
        for qid, row in rows.items():
            row["lost"] = row[f"Lost@{cfg.table_k}"]
            row["failed"] = 1.0 if qid in stage.failures else 0.0
        outcome.per_query[stage.name] = rows
        outcome.lost[stage.name] = lost
    return outcome


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


def _llm_provider(cfg: BenchmarkConfig, ws: Workspace, prov: dict[str, Any]) -> LazyLLM | None:
    """The run's lazy LLM when some configured stage declares ``needs_llm`` (the
    answerer always does). The client is made once and shared by every dataset."""
    stages: list[tuple[Registry[Any], list[StageSpec]]] = [
        (RETRIEVERS, cfg.retrievers),
        (FUSIONS, cfg.fusions),
        (RERANKERS, cfg.rerankers),
    ]
    if not any_needs_llm(stages) and cfg.answerer is None:
        return None

    def make() -> Any:
        from retrieval_bench.llm.factory import make_llm

        client = make_llm(cfg.llm, ws)
        prov.setdefault("models", {})["llm"] = client.model
        prov["llm_base_url"] = client.settings.base_url
        return client

    return LazyLLM(make)


def _check_answer_metrics(cfg: BenchmarkConfig) -> None:
    """Fail before any work when answer metrics are named wrongly (ConfigError)."""
    cfg.check_answer_stage(cfg.name)
    if cfg.answerer is not None and cfg.answer_metrics:
        from retrieval_bench.metrics.answer.factory import needs_llm

        needs_llm(cfg.answer_metrics)  # resolves every name: unknown ones raise here


def run_benchmark(
    cfg: BenchmarkConfig,
    ws: Workspace | None = None,
    progress: Progress | None = None,
    on_dataset: Callable[[PreparedDataset], None] | None = None,
) -> BenchmarkResult:
    """Run the configured benchmark end to end and store everything.

    Datasets are prepared first (snapshot, chunks, index) so that the stored
    run carries its complete provenance from the start; a run that fails
    after that is kept, marked ``failed``.
    """
    ws = ws or Workspace.default()
    validate_stages(cfg)  # stage names and parameters, before any work
    _check_answer_metrics(cfg)
    for spec in cfg.datasets:  # every dataset's questions, before any is chunked or indexed
        select_questions(spec)
    db = ResultsDB(ws.db_path)  # a damaged results database stops the run before any work
    started = time.perf_counter()
    namespace = len(cfg.datasets) > 1 and colliding_ids(cfg)
    prepared: list[PreparedDataset] = []
    grouped: dict[str, GroupedDataset] = {}
    for spec in cfg.datasets:
        if is_grouped(spec):  # questions with their own snapshots: opened now, chunked later
            grouped[spec.name] = open_groups(spec, cfg, ws, namespace)
            prepared.append(grouped[spec.name].shell)
            continue
        ds = prepare_dataset(spec, cfg, ws, progress)
        if namespace:
            namespace_prepared(ds)
        if on_dataset:
            on_dataset(ds)
        prepared.append(ds)
    prov = run_provenance(cfg, prepared)
    run_id = db.start_run(
        cfg.name,
        config=cfg.model_dump(mode="json"),
        provenance=prov,
        dataset_fingerprint=prov["dataset_fingerprint"],
    )
    run_dir = ws.results_dir / run_id
    save_run_file(db, run_id, run_dir)  # a run killed from here on is still in results/
    stage_order = [s.label for s in cfg.stage_specs()]
    try:  # from here every way out marks the run: done, failed (with why) or interrupted
        outcomes: list[DatasetOutcome] = []
        llm_provider = _llm_provider(cfg, ws, prov)
        need_train_runs = bool(fitted_stage_names(cfg.fusions, FUSIONS))
        fusion_labels = [f.label for f in cfg.fusions]
        answered: list[DatasetAnswers] = []

        def run_stages(ds: PreparedDataset) -> DatasetOutcome:
            ctx = StageContext(ds, llm_provider, progress)
            retrieved, train_runs = run_retrievers(
                ctx, cfg.retrievers, cfg.candidates, need_train_runs
            )
            fused = run_fusions(ctx, retrieved, cfg.fusions, cfg.candidates, train_runs)
            earlier = retrieved + fused
            reranked = run_rerankers(
                ctx, earlier, cfg.rerankers, cfg.candidates,
                default_rerank_input(earlier, fusion_labels),
            )  # fmt: skip
            if cfg.answerer is not None:  # reads the stages' runs, changes none of them
                answered.append(
                    answer_dataset(ctx, cfg.answerer, earlier + reranked, cfg.answer_input())
                )
            return _score_dataset(ds, earlier + reranked, cfg)

        for ds in prepared:
            if ds.spec.name not in grouped:
                outcomes.append(run_stages(ds))
                continue
            outcome = run_groups(grouped[ds.spec.name], cfg, ws, run_stages, progress)
            if on_dataset:
                on_dataset(outcome.prepared)
            outcomes.append(outcome)
        if grouped:  # chunk counts, missing gold and timings are known only now
            final = run_provenance(cfg, prepared)
            models = {**final.pop("models", {}), **prov.get("models", {})}
            prov.update(final, models=models)

        result = BenchmarkResult(run_id, cfg, outcomes, stage_order)
        for subset, members in _subset_members(outcomes, cfg.metrics.subsets).items():
            result.tables[subset] = _aggregate(outcomes, stage_order, members)
            result.counts[subset] = len(members)
        result.sweeps = _threshold_sweeps(outcomes, [r.label for r in cfg.rerankers])
        if cfg.answerer is not None:
            section = evaluate_answers(
                cfg.answerer, cfg.answer_input(), answered, cfg.answer_metrics, llm_provider
            )
            result.answer_stage = section
            result.answers = section.aggregates()
        result.seconds = time.perf_counter() - started
        result.loads = loads_since(started)
        result.out_dir = ws.results_dir / run_id
        write_outputs(result, result.out_dir, prov)
        db.finish_run(run_id, "done", record_results(db, result, prov, prepared))
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        total = {"total": time.perf_counter() - started}
        db.finish_run(run_id, status, total, error=failure_reason(exc))
        save_run_file(db, run_id, run_dir, stage_order)
        raise
    save_run_file(db, run_id, run_dir, stage_order)  # what --rebuild-db reads back
    return result
