"""The unit of work of a run: one snapshot's questions through every stage, scored
(docs/architecture.md#executors).

:func:`run_stages` runs the configured retrievers, fusions, rerankers (and the
answerer) over one prepared dataset and scores every stage;
:func:`run_group` does the same for one snapshot group of a dataset whose
questions have their own snapshots — open the snapshot, chunk it, run, score,
and keep only what the merged results need. :func:`run_group` is a plain
function of a picklable :class:`GroupTask`, so an executor can run it in this
process, in a process pool or as a Ray task, with identical results.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from retrieval_bench.config import BenchmarkConfig, DatasetSpec
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import RBenchError
from retrieval_bench.harness.answers.dataset import DatasetAnswers, answer_dataset
from retrieval_bench.harness.run.graph_run import run_graph
from retrieval_bench.harness.run.prepare import (
    PreparedDataset,
    Progress,
    open_dataset_snapshot,
    prepare_snapshot,
)
from retrieval_bench.harness.run.results import DatasetOutcome
from retrieval_bench.harness.run.stages import StageContext
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.plan import REGISTRY_OF, Plan
from retrieval_bench.snapshot import Snapshot, open_snapshot
from retrieval_bench.snapshot.refs import SnapshotRef
from retrieval_bench.snapshot.sources import open_repo, open_tarball, repo_locations, repo_source
from retrieval_bench.types import Example, Run, StageResult
from retrieval_bench.workspace import Workspace


def input_stages(stage: StageResult, stages: Sequence[StageResult]) -> list[StageResult] | None:
    """The stages that fed ``stage``, as it declares them (None for a retriever: the
    whole corpus fed it)."""
    if stage.inputs is None:
        return None
    by_name = {s.name: s for s in stages}
    return [by_name[label] for label in stage.inputs if label in by_name]


def stage_inputs(stage: StageResult, stages: Sequence[StageResult]) -> list[Run] | None:
    """The runs that fed ``stage`` (None for a retriever: the whole corpus fed it)."""
    fed = input_stages(stage, stages)
    return None if fed is None else [s.run for s in fed]


def with_index_stats(ds: PreparedDataset, stages: Sequence[StageResult]) -> PreparedDataset:
    """``ds`` with its stages' ``index_stats`` (texts embedded vs cached) summed into
    its ``chunk_stats``, in stage order: a new dataset (``ds`` itself when no stage
    reported any), so ``ds`` is left as every stage read it."""
    if not any(s.index_stats for s in stages):
        return ds
    counts = dict(ds.chunk_stats)
    for stage in stages:
        for key, n in stage.index_stats.items():
            counts[key] = counts.get(key, 0) + n
    return replace(ds, chunk_stats=counts)


def score_dataset(
    ds: PreparedDataset, stages: list[StageResult], cfg: BenchmarkConfig
) -> DatasetOutcome:
    """Every stage's per-query metrics; ``lost`` is ``Lost@table_k`` (the one
    definition in :mod:`retrieval_bench.metrics.retrieval.scoring`)."""
    ks, budgets = cfg.metrics.ks, cfg.metrics.budgets
    outcome = DatasetOutcome(ds, stages, {})
    for stage in stages:
        metrics = evaluate_stage(
            stage.run, ds.examples, ds.corpus, ks=ks, budgets=budgets,
            inputs=stage_inputs(stage, stages), conventions=cfg.metrics.conventions,
        )  # fmt: skip
        rows = {q: dict(m) for q, m in metrics.per_query.items()}
        lost = {q: by_k[cfg.table_k] for q, by_k in metrics.lost.items() if cfg.table_k in by_k}
        for qid, row in rows.items():
            row["lost"] = row[f"Lost@{cfg.table_k}"]
            row["failed"] = 1.0 if qid in stage.failures else 0.0
        outcome.per_query[stage.name] = rows
        outcome.lost[stage.name] = lost
    return outcome


def score_unrun(
    examples: Sequence[Example], stages: Sequence[str], cfg: BenchmarkConfig
) -> dict[str, dict[str, dict[str, float]]]:
    """Stage → query id → metrics of questions that could not be run (their snapshot
    failed): scored as queries no stage retrieved anything for — 0 in every metric,
    as SWE-bench counts an unresolved instance — with nothing lost, so every mean
    divides by all questions. ``failed`` stays 0: no stage failed on the question,
    so it is a pair (0 against 0) in the paired columns, whose Δ then equals the
    difference of the column means (docs/metrics.md#questions-that-could-not-be-run)."""
    if not examples:
        return {}
    scored = evaluate_stage(
        Run("unrun"), examples, Corpus(Path("."), []), ks=cfg.metrics.ks,
        budgets=cfg.metrics.budgets, conventions=cfg.metrics.conventions,
    )  # fmt: skip
    rows = {q: {**m, "lost": 0.0, "failed": 0.0} for q, m in scored.per_query.items()}
    return {stage: {q: dict(m) for q, m in rows.items()} for stage in stages}


def calls_llm(cfg: BenchmarkConfig) -> bool:
    """Whether some stage of ``cfg`` calls the model (``needs_llm_for`` its
    parameters; the answerer always does)."""
    return cfg.answerer is not None or any(
        REGISTRY_OF[n.kind].type_of(n.spec.name).needs_llm_for(n.spec.params())
        for n in cfg.stage_graph()
    )


def make_llm_provider(
    cfg: BenchmarkConfig,
    ws: Workspace,
    prov: dict[str, Any],
    hold: bool = True,
    more: Sequence[BenchmarkConfig] = (),
) -> LazyLLM | None:
    """The run's lazy LLM (of ``cfg.llm``) when some stage of ``cfg`` or of ``more``
    (a sweep's other cells) calls the model (:func:`calls_llm`), else None; the
    client is made on first use, and its model and server are then written into
    ``prov``. With ``hold`` (the run's own process) the client holds the local
    server it uses, which :func:`release_llm` lets go; a pool worker passes False."""
    if not any(calls_llm(c) for c in (cfg, *more)):
        return None

    def make() -> Any:
        from retrieval_bench.llm.factory import make_llm

        client = make_llm(cfg.llm, ws, hold)
        prov.setdefault("models", {})["llm"] = client.model
        prov["llm_base_url"] = client.settings.base_url
        return client

    return LazyLLM(make)


def release_llm(llm_provider: LazyLLM | None, cfg: BenchmarkConfig) -> None:
    """At the end of a run (done, failed or interrupted): stop the local model server
    its client started on demand, unless ``llm.keep_server`` or another live
    process holds it (:meth:`~retrieval_bench.llm.local_server.ServerHold.release`)."""
    if llm_provider is None or llm_provider.made is None:
        return
    from retrieval_bench.llm.factory import release_server

    release_server(llm_provider.made, keep=cfg.llm.keep_server)
    held = getattr(llm_provider.made, "server_hold", None)
    if cfg.llm.keep_server and held is not None and held.state.on_demand:
        print(
            f"kept the local model server at {held.state.base_url} running "
            "(llm.keep_server / --keep-llm-server): stop it with `rbench llm stop`",
            file=sys.stderr,
        )


def run_stages(
    ds: PreparedDataset,
    plan: Plan,
    llm_provider: LazyLLM | None,
    progress: Progress | None = None,
    ws: Workspace | None = None,
) -> tuple[DatasetOutcome, DatasetAnswers | None]:
    """Retrievers, fusions, rerankers and the answerer of ``plan`` over ``ds``, every
    stage scored; ``ws`` is the run's workspace (its caches serve the stages)."""
    cfg = plan.config
    ctx = StageContext(ds, llm_provider, progress, ws)
    stages = run_graph(ctx, plan.graph, cfg.candidates)
    answered = None
    if cfg.answerer is not None:  # reads the stages' runs, changes none of them
        answered = answer_dataset(ctx, cfg.answerer, stages, cfg.answer_input())
    return score_dataset(with_index_stats(ds, stages), stages, cfg), answered


@dataclass(frozen=True)
class GroupTask:
    """One snapshot group of a dataset: everything a worker needs, picklable."""

    index: int
    key: str
    """Content key of the task (dataset, snapshot, questions, config): its checkpoint name."""
    spec: DatasetSpec
    plan: Plan
    ws: Workspace
    ref: SnapshotRef | None
    """The snapshot (None: the dataset's own ``snapshot:``)."""
    label: str
    examples: tuple[Example, ...]
    train: tuple[Example, ...] = ()

    @property
    def cfg(self) -> BenchmarkConfig:
        """The run's config (the plan's)."""
        return self.plan.config


@dataclass
class GroupResult:
    """What a worker sends back for one :class:`GroupTask`."""

    index: int
    key: str
    label: str
    query_ids: list[str]
    outcome: DatasetOutcome | None = None
    answers: DatasetAnswers | None = None
    entry: dict[str, Any] = field(default_factory=dict)
    """The provenance entry of the snapshot group (source, chunks, timings, reuse counts)."""
    failure: str | None = None
    """Why the snapshot could not be opened or chunked (the group did not run)."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """Models and LLM server the worker used."""
    seconds: float = 0.0
    worker: str = ""


def open_ref(
    ref: SnapshotRef | None,
    spec: DatasetSpec,
    ws: Workspace,
    repos: Mapping[str, str] | None = None,
) -> Snapshot:
    """The snapshot ``ref`` names, opened (extracted into the cache on first use)."""
    if ref is None:
        return open_dataset_snapshot(spec, ws)
    if ref.kind == "tarball":
        return open_tarball(Path(ref.target), ws.snapshots_dir, expected_sha256=ref.sha256)
    if ref.kind == "repo":
        source = ref.source or repo_source(ref.target, repo_locations(repos))
        return open_repo(ref.target, ref.commit, ws.snapshots_dir, source=source, parent=ref.parent)
    return open_snapshot(ref.target, ws.snapshots_dir)


def run_group(
    task: GroupTask,
    llm_provider: LazyLLM | None = None,
    progress: Progress | None = None,
) -> GroupResult:
    """Open, chunk, run and score one snapshot group (in whatever process runs it).

    A snapshot that cannot be opened or chunked is a failed group, with its
    one-line reason, not an exception: the run's other groups go on. A worker
    process builds its own lazy LLM (``llm_provider`` is for the serial path).
    """
    t0 = time.perf_counter()
    result = GroupResult(task.index, task.key, task.label, [e.id for e in task.examples])
    result.worker = f"{socket.gethostname()}:{os.getpid()}"
    opened = time.perf_counter()
    try:
        snapshot = open_ref(task.ref, task.spec, task.ws, task.cfg.repos)
        opened = time.perf_counter()
        ds = prepare_snapshot(
            task.spec, task.cfg, task.ws, snapshot, list(task.examples), list(task.train),
            [], progress, {"snapshot": opened - t0}, per_question_snapshots=True,
        )  # fmt: skip
    except RBenchError as exc:
        result.failure = str(exc)
        result.seconds = time.perf_counter() - t0
        return result
    if llm_provider is None:
        # the parent holds the local server for the run (it starts it before the workers)
        llm_provider = make_llm_provider(task.cfg, task.ws, result.provenance, hold=False)
    outcome, answers = run_stages(ds, task.plan, llm_provider, progress, task.ws)
    result.entry = {
        "snapshot": snapshot.source,
        "kind": snapshot.kind,
        "fingerprint": snapshot.fingerprint,
        "query_ids": result.query_ids,
        "n_chunks": len(ds.corpus.chunks),
        "timings": dict(ds.timings),
        **outcome.prepared.chunk_stats,  # files chunked / reused, texts embedded / cached
    }
    if ds.codebase_index is not None:
        result.provenance.setdefault("models", {})["embedding"] = ds.codebase_index.embedder.name
    result.outcome, result.answers = slim(outcome), answers
    result.seconds = time.perf_counter() - t0
    return result


def slim(outcome: DatasetOutcome) -> DatasetOutcome:
    """``outcome`` with only the chunks the group's runs name (what the drill-down and
    the threshold sweeps map to files); the texts and the index are let go. A new
    outcome: the dataset it was scored on keeps its whole corpus."""
    ds = outcome.prepared
    wanted = {c for s in outcome.stages for d in s.run.scores.values() for c in d}
    chunks = [replace(c, text="") for c in ds.corpus.chunks if c.id in wanted]
    corpus = Corpus(ds.corpus.root, chunks, ds.corpus.tokenizer, ds.corpus.skipped)
    return replace(outcome, prepared=replace(ds, corpus=corpus, codebase_index=None))
