"""Running one stage of one prepared dataset: a retriever, a fusion or a reranker
(the loop over a config's stage graph: :mod:`retrieval_bench.harness.run.graph_run`).

Wiring conventions (no if/elif per strategy): the harness reads what a stage
needs from the flags its class declares (:class:`~retrieval_bench.contracts.stage.Stage`,
docs/extending.md), never from its signature:

* a stage declaring ``needs_llm`` gets the run's shared LLM client as
  ``llm`` (a lazy handle); the run has a client only when some configured stage
  calls the model (``needs_llm_for`` its parameters), so lexical-only runs —
  ``exact`` with ``terms: identifiers`` included — never start a model server;
* a stage declaring ``uses_embedding_cache`` gets the run's workspace's embedding
  cache folder as ``cache_dir`` (unless its config names one), not the folder of
  whatever workspace the process's environment or working directory implies;
* a retriever declaring ``uses_vector_index`` gets the LanceDB index of the
  snapshot in ``index(corpus, codebase_index)`` (None for per-question
  snapshots: vectors then come from the embedding cache); its ``index_stats``
  (texts embedded vs cached) travel in its :class:`StageResult`, and are summed
  into the scored dataset's ``chunk_stats`` (the prepared dataset is a value that
  no stage changes: :class:`~retrieval_bench.harness.run.prepare.PreparedDataset`);
* a stage declaring ``trainable`` is trained on the dataset's ``train_split``
  before it scores the evaluation split (retrievers: ``fit(examples,
  corpus)``; fusions: ``fit(train_runs, examples, corpus)``); the train-split
  runs a learned fusion trains on come from cross-fitting for retrievers
  that are themselves trained (no in-sample leakage);
* a stage's ``failures`` and ``artifacts`` (query id → …) are copied into its
  :class:`StageResult`;
* a stage that raises is recorded as failed for every query, with the
  reason, and the run goes on (docs/architecture.md#bad-input-and-failures);
* a stage's seconds are its own work: a model that loads while it runs (the
  embedding model, the local LLM server) is recorded under ``loads``
  (:mod:`retrieval_bench.loads`), not charged to whichever stage came first;
* with a ``progress`` reporter, each finished stage prints one line
  (``[shopapi] bm25  0.4s``) and an LLM stage's calls show as counts with an ETA.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from retrieval_bench.contracts.fusion import Fusion
from retrieval_bench.contracts.params import StageParams, StageServices
from retrieval_bench.contracts.registry import FUSIONS, RERANKERS, RETRIEVERS, Registry
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.contracts.stage import Stage
from retrieval_bench.errors import ConfigError, RBenchError
from retrieval_bench.harness.run.prepare import PreparedDataset
from retrieval_bench.llm.base import LLM, CallStats
from retrieval_bench.llm.lazy import LazyLLM
from retrieval_bench.llm.reporting import ReportingLLM
from retrieval_bench.loads import own_seconds
from retrieval_bench.progress import Progress
from retrieval_bench.runs.file_ids import has_file_ids
from retrieval_bench.runs.lifting import file_level_run
from retrieval_bench.specs import StageSpec
from retrieval_bench.stage_graph import GRAPH_KEYS, StageNode
from retrieval_bench.types import Run, StageResult
from retrieval_bench.workspace import Workspace

log = logging.getLogger(__name__)
STAGE_ERRORS = (RBenchError, OSError, RuntimeError, ValueError)
S = TypeVar("S", bound=Stage)


@dataclass
class StageContext:
    """What every stage of one dataset shares."""

    ds: PreparedDataset
    llm_provider: Callable[[], LLM] | None = None
    """Makes the run's LLM client (a :class:`LazyLLM` shared by every dataset of a
    run, or any callable); called at most once, on the first model call."""
    progress: Progress | None = None
    """Where stage lines and LLM-call counts go (None: nowhere)."""
    ws: Workspace | None = None
    """The run's workspace: its embedding cache goes to stages declaring
    ``uses_embedding_cache`` (None: the stages' own default)."""
    llm: LazyLLM = field(init=False)
    """The run's LLM client, made on first use."""

    def __post_init__(self) -> None:
        self.llm = LazyLLM.of(self.llm_provider)

    def tracked(self, llm: LLM, stage: str) -> LLM:
        """``llm``, reporting its calls as progress of ``stage`` when there is a reporter."""
        if self.progress is None:
            return llm
        return ReportingLLM(llm, self.progress, f"[{self.ds.spec.name}] {stage}")

    def create(self, stages: Registry[S], node: StageNode) -> S:
        """Build ``node``'s stage from ``stages`` with its compiled parameters (the
        plan's, :mod:`retrieval_bench.plan`; a graph not compiled into a plan gives
        its entry's keys, read as the class's ``Params`` here) and the run's
        services: the LLM (the lazy handle, reporting its calls as this stage's
        progress: the server starts only if the stage calls it), the
        workspace's embedding and code-facts caches and the dataset's snapshot
        (:class:`~retrieval_bench.contracts.params.StageServices`; each stage gets
        the ones its class declares it uses)."""
        spec = node.spec
        params: StageParams | dict[str, Any] | None = node.params
        if params is None:
            params = {k: v for k, v in spec.params().items() if k not in GRAPH_KEYS}
        ws = self.ws
        services = StageServices(
            llm=self.tracked(self.llm, spec.label) if stages.type_of(spec.name).needs_llm else None,
            embedding_cache=None if ws is None else str(ws.embeddings_uri),
            facts_cache=None if ws is None else str(ws.cache_dir / "facts"),
            snapshot=getattr(self.ds, "snapshot", None),  # a context without a dataset: none
        )
        return stages.create(spec.name, params, services)

    def finished(self, result: StageResult) -> StageResult:
        """Print the stage's line (time, LLM use, loads, failures) and return ``result``."""
        if self.progress is not None:
            self.progress.note(stage_line(self.ds.spec.name, result))
        return result

    def stats(self) -> CallStats:
        # a client shared across datasets may exist before this context first used it
        llm = self.llm.made
        return llm.stats.snapshot() if llm is not None else CallStats()


def _finish(
    ctx: StageContext,
    label: str,
    stage: Stage,
    run: Run,
    t0: float,
    before: CallStats,
    inputs: tuple[str, ...] | None,
    queries: Sequence[str],
    index_stats: Mapping[str, int] | None = None,
) -> StageResult:
    run = run.renamed(label)  # the stage's own run object is left as it returned it
    failures = {q: "no result" for q in queries if q not in run.scores}
    failures.update(stage.failures)
    used = ctx.stats().since(before)
    seconds, loads = own_seconds(t0)
    result = StageResult(
        label,
        run,
        seconds,
        llm_calls=used.calls,
        llm_tokens=used.tokens,
        llm_cache_hits=used.cache_hits,
        failures=failures,
        inputs=inputs,
        artifacts=dict(stage.artifacts),
        loads=loads,
        index_stats=dict(index_stats or {}),
    )
    return ctx.finished(result)


def stage_line(dataset: str, result: StageResult) -> str:
    """``[shopapi] dense  0.3s (+ loading embedding model 5.2s)``: one finished stage."""
    line = f"[{dataset}] {result.name}  {result.seconds:.1f}s"
    if result.llm_calls or result.llm_cache_hits:
        line += f", {result.llm_calls} LLM calls, {result.llm_cache_hits} cached"
    if result.loads:
        loaded = ", ".join(f"{name} {sec:.1f}s" for name, sec in result.loads.items())
        line += f" (+ loading {loaded})"
    if result.failures:
        reasons = sorted(set(result.failures.values()))
        line += f"; failed for {len(result.failures)} queries: {reasons[0]}"
        if len(reasons) > 1:
            line += f" (+{len(reasons) - 1} other reasons)"
    return line


def _failed(
    ctx: StageContext,
    label: str,
    queries: Sequence[str],
    exc: Exception,
    t0: float,
    inputs: tuple[str, ...] | None,
    index_stats: Mapping[str, int] | None = None,
) -> StageResult:
    reason = f"{type(exc).__name__}: {exc}"
    log.warning("stage %s failed: %s", label, reason)
    seconds, loads = own_seconds(t0)
    return ctx.finished(StageResult(
        label, Run(label), seconds, failures=dict.fromkeys(queries, reason), inputs=inputs,
        loads=loads, index_stats=dict(index_stats or {}),
    ))  # fmt: skip


def _need_train(ds: PreparedDataset, label: str) -> None:
    if not ds.train_examples:
        raise ConfigError(
            f"{label} is trained on a labelled split: set train_split (e.g. dev) in dataset "
            f"{ds.spec.name}, with split set to the evaluation split (e.g. test)"
        )


def cross_fitted_run(retriever: Retriever, ds: PreparedDataset, k: int, folds: int = 3) -> Run:
    """Train-split run of a retriever that is itself trained on the train split.

    Each fold's questions are searched by the retriever fitted on the *other*
    folds, so a learned fusion trained on these runs sees out-of-sample
    behaviour, as it will on the evaluation split (cross-fitting). With fewer
    than two training examples there is nothing to hold out: in-sample.
    """
    examples = ds.train_examples
    n = min(folds, len(examples))
    if n < 2:
        retriever.fit(examples, ds.corpus)
        run: Run = retriever.search({e.id: e.query for e in examples}, k)
        return run
    scores: dict[str, dict[str, float]] = {}
    for fold in range(n):
        held = examples[fold::n]
        rest = [e for i, e in enumerate(examples) if i % n != fold]
        retriever.fit(rest, ds.corpus)
        scores.update(retriever.search({e.id: e.query for e in held}, k).scores)
    return Run("cross-fitted", scores)


def run_retriever(
    ctx: StageContext, node: StageNode, k: int, need_train_runs: bool
) -> tuple[StageResult, Run | None]:
    """One retriever over the evaluation queries, and its run over the train queries
    when a learned fusion will need it (None otherwise, or when it failed)."""
    spec, ds = node.spec, ctx.ds
    queries = {e.id: e.query for e in ds.examples}
    train_queries = {e.id: e.query for e in ds.train_examples}
    t0, before = time.perf_counter(), ctx.stats()
    train_run = None
    index_stats: dict[str, int] = {}  # texts embedded vs cached: kept if a later step fails
    try:
        retriever = ctx.create(RETRIEVERS, node)
        retriever.index(ds.corpus, ds.codebase_index if retriever.uses_vector_index else None)
        index_stats = retriever.index_stats
        fitted = retriever.trainable
        if fitted:
            _need_train(ds, spec.label)
        if need_train_runs and train_queries:
            train_run = (
                cross_fitted_run(retriever, ds, k) if fitted else retriever.search(train_queries, k)
            ).renamed(spec.label)
        if fitted:
            retriever.fit(ds.train_examples, ds.corpus)
        run = retriever.search(queries, k)
    except STAGE_ERRORS as exc:
        return _failed(ctx, spec.label, list(queries), exc, t0, None, index_stats), None
    result = _finish(ctx, spec.label, retriever, run, t0, before, None, list(queries), index_stats)
    return result, train_run


def run_fusion(
    ctx: StageContext,
    node: StageNode,
    inputs: Sequence[StageResult],
    k: int,
    train_runs: Mapping[str, Run],
) -> StageResult:
    """One fusion over the runs of its inputs (a failed input contributes nothing);
    a trained fusion fits on its inputs' train-split runs (``train_runs``: label →
    run, retrievers only).

    When some input ranks files (``external``, ``bm25-files``: ``file:<path>``
    ids), or the node asks for ``level: file``, every input is lifted to file level
    first (a file scored by its best chunk), so the fusion combines the votes for a
    file (docs/stages.md#external).
    """
    spec, queries = node.spec, [e.id for e in ctx.ds.examples]
    runs = [r.run for r in inputs]
    t0, before = time.perf_counter(), ctx.stats()
    try:
        fusion = ctx.create(FUSIONS, node)
        if fusion.needs_queries:
            fusion.queries = {e.id: e.query for e in (*ctx.ds.examples, *ctx.ds.train_examples)}
        if fusion.needs_corpus:
            fusion.corpus = ctx.ds.corpus
        train = [train_runs[label] for label in node.inputs if label in train_runs]
        lift = node.level == "file" or any(has_file_ids(r.scores) for r in runs)
        if lift and fusion.lifts_inputs:
            runs = [file_level_run(r, ctx.ds.corpus) for r in runs]
            train = [file_level_run(r, ctx.ds.corpus) for r in train]
        if fusion.trainable:
            _need_train(ctx.ds, spec.label)
            if len(train) < len(node.inputs) and ctx.ds.train_examples:
                raise ConfigError(
                    f"fusion {spec.label} is trained on its inputs' train-split runs: "
                    "its inputs must be retrievers"
                )
            fusion.fit(train, ctx.ds.train_examples, ctx.ds.corpus)
        run = fusion.fuse(runs, k)
    except STAGE_ERRORS as exc:
        return _failed(ctx, spec.label, queries, exc, t0, node.inputs)
    return _finish(ctx, spec.label, fusion, run, t0, before, node.inputs, queries)


def run_reranker(ctx: StageContext, node: StageNode, source: StageResult, k: int) -> StageResult:
    """One reranker over the candidates of the stage it reads."""
    queries = {e.id: e.query for e in ctx.ds.examples}
    t0, before = time.perf_counter(), ctx.stats()
    try:
        reranker = ctx.create(RERANKERS, node)
        run = reranker.rerank(queries, source.run, ctx.ds.corpus, k)
    except STAGE_ERRORS as exc:
        return _failed(ctx, node.label, list(queries), exc, t0, node.inputs)
    return _finish(ctx, node.label, reranker, run, t0, before, node.inputs, list(queries))


def fitted_stage_names(
    specs: Sequence[StageSpec], stages: Registry[Retriever] | Registry[Fusion]
) -> list[str]:
    """Labels of the configured ``stages`` whose class declares ``trainable``."""
    return [spec.label for spec in specs if stages.type_of(spec.name).trainable]
