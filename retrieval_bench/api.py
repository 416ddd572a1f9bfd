"""The Python API, mirroring the CLI (docs/architecture.md#interfaces).

from retrieval_bench import api
result = api.run("benchmarks/configs/fixtures.yaml")
result.tables["all"]["rrf"]["F1@5"]
api.query("fixtures/repos/shopapi", "where are auth tokens verified?", retriever="bm25")
api.compare(["RUN1:bm25", "RUN2:rrf"], test="wilcoxon").rows
api.evaluate("benchmarks/eval/fixtures_answers.jsonl", ["token_f1", "bleu"]).result.aggregates
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_bench.config import BenchmarkConfig
from retrieval_bench.contracts import registry
from retrieval_bench.contracts.chunker import Chunker
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.harness.run.prepare import (
    build_corpus,
    index_name,
    make_chunker,
    needs_vectors,
)
from retrieval_bench.harness.run.runner import BenchmarkResult, run_benchmark
from retrieval_bench.plan import Plan, load_plan
from retrieval_bench.progress import Progress, for_label
from retrieval_bench.runs.file_ids import entity_of, file_path
from retrieval_bench.snapshot import open_snapshot
from retrieval_bench.specs import StageSpec
from retrieval_bench.types import Chunk
from retrieval_bench.workspace import Workspace

if TYPE_CHECKING:  # imported where they are used: a plain ``run`` never loads them
    from retrieval_bench.harness.compare.comparison import Comparison
    from retrieval_bench.harness.eval.predictions import EvalOutcome
    from retrieval_bench.index.build_stats import BuildStats


def run(
    config: BenchmarkConfig | Plan | str | Path,
    workspace: Workspace | None = None,
    progress: Progress | None = None,
) -> BenchmarkResult:
    """``rbench run``: run a benchmark config (a config, its compiled plan, or a
    YAML/TOML path)."""
    plan = config if isinstance(config, BenchmarkConfig | Plan) else load_plan(config)
    return run_benchmark(plan, workspace, progress)


def index(
    repo: str,
    chunker: Chunker | None = None,
    workspace: Workspace | None = None,
    index_uri: Path | None = None,
    rebuild: bool = False,
    progress: Progress | None = None,
    *,
    ignore: Sequence[str] = (),
    include: Sequence[str] = (),
) -> BuildStats:
    """``rbench index``: build or update the LanceDB index of a repository.

    ``progress`` (e.g. :class:`retrieval_bench.progress.ProgressReporter`) hears
    ``("index <repo>", done, total, unit)``: files chunked, then chunks embedded.
    ``ignore`` and ``include`` are a dataset's ``ignore:`` and ``include:`` lists
    (docs/datasets.md#ignore-rules-and-skipped-files); they are part of the index name.
    """
    from retrieval_bench.index.embed import default_embedder
    from retrieval_bench.index.store import CodebaseIndex

    ws = workspace or Workspace.default()
    snapshot = open_snapshot(repo, ws.snapshots_dir)
    chunker = chunker or make_chunker()
    embedder = default_embedder(ws)
    name = index_name(snapshot, chunker, embedder.name, ignore, include)
    store = CodebaseIndex(index_uri or ws.index_dir, name, chunker, embedder, ignore, include)
    report = for_label(progress, f"index {Path(snapshot.root).name}")
    if store.exists() and not rebuild:
        return store.update(snapshot.root, report)
    return store.build(snapshot.root, report)


def query(
    repo: str,
    question: str,
    retriever: str = "dense",
    n: int = 10,
    chunker: Chunker | None = None,
    workspace: Workspace | None = None,
    index_uri: Path | None = None,
    progress: Progress | None = None,
    *,
    ignore: Sequence[str] = (),
    include: Sequence[str] = (),
    **params: object,
) -> list[tuple[Chunk, float]]:
    """``rbench query``: the top ``n`` chunks of one retriever for one question.

    ``ignore`` and ``include`` choose the files searched, as in :func:`index`.

    An empty question or ``n`` below 1 raises :class:`ConfigError` before the
    repository is opened; a repository with nothing to index raises
    :class:`~retrieval_bench.errors.SnapshotError` (no empty result list that
    looks like "nothing matched").
    """
    if not question.strip():
        raise ConfigError("the question is empty: pass the text to search for")
    if n < 1:
        raise ConfigError(f"n must be 1 or more (got {n}): the number of chunks to return")
    ws = workspace or Workspace.default()
    snapshot = open_snapshot(repo, ws.snapshots_dir)
    with_vectors = needs_vectors([StageSpec(name=retriever)])
    corpus, store = build_corpus(
        snapshot,
        chunker or make_chunker(),
        ws,
        with_vectors=with_vectors,
        progress=for_label(progress, f"index {Path(snapshot.root).name}"),
        index_uri=index_uri,
        ignore=ignore,
        include=include,
    )
    if getattr(registry.get("retrievers", retriever), "uses_snapshot", False):
        params = {**params, "snapshot": snapshot}  # e.g. history: the commit it reads
    searcher = registry.create("retrievers", retriever, **params)
    searcher.index(corpus, store if searcher.uses_vector_index else None)
    run_ = searcher.search({"q": question}, n)
    return [(_hit(corpus, c), s) for c, s in run_.ranked("q")]


def _hit(corpus: Corpus, doc_id: str) -> Chunk:
    """The chunk ``doc_id`` names; for a file-level id (``file:<path>``, as ``bm25-files``
    and ``history`` return, or ``entity:<path>:<name>``) a chunk standing for the whole
    file: its chunks' span, ``kind`` ``file``, the entity's name as its symbol."""
    found = corpus.by_id.get(doc_id)
    if found is not None:
        return found
    path = file_path(doc_id)
    chunks = corpus.chunks_of(path) if path is not None else ()
    if path is None or not chunks:
        raise KeyError(f"{doc_id!r} names no chunk or file of the corpus")
    entity = entity_of(doc_id)
    return Chunk(
        id=doc_id, path=path, start_line=min(c.start_line for c in chunks),
        end_line=max(c.end_line for c in chunks), language=chunks[0].language, kind="file",
        symbol=entity.rpartition(":")[2] if entity else None, text="",
        n_tokens=sum(c.n_tokens for c in chunks),
    )  # fmt: skip


def compare(
    runs: list[str],
    workspace: Workspace | None = None,
    *,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    extra_metrics: Sequence[str] = (),
    stages: Sequence[str] | None = None,
    subset: str = "all",
    test: str = "randomisation",
    alpha: float = 0.05,
    n_resamples: int | None = None,
    seed: int = 0,
    allow_different_data: bool = False,
) -> Comparison:
    """``rbench compare``: paired per-query comparison of stored runs (``RUN`` or
    ``RUN:STAGE``); the options are :func:`retrieval_bench.harness.compare.runs.compare_runs`'s
    (runs whose dataset fingerprints differ raise ``DifferentDataError`` unless
    ``allow_different_data``; ``n_resamples`` None: its default).
    :func:`retrieval_bench.harness.compare.runs.gate` finds regressions."""
    from retrieval_bench.harness.compare.runs import DEFAULT_RESAMPLES, compare_runs
    from retrieval_bench.store.db import ResultsDB

    ws = workspace or Workspace.default()
    return compare_runs(
        ResultsDB(ws.db_path), runs, baseline=baseline, metrics=metrics,
        extra_metrics=extra_metrics, stages=stages, subset=subset, test=test, alpha=alpha,
        n_resamples=DEFAULT_RESAMPLES if n_resamples is None else n_resamples, seed=seed,
        results_dir=ws.results_dir, allow_different_data=allow_different_data,
    )  # fmt: skip


def evaluate(
    predictions: str | Path,
    metrics: list[str] | None = None,
    workspace: Workspace | None = None,
    *,
    config: str | None = None,
    name: str | None = None,
    store_run: bool = True,
    consistency: int = 0,
) -> EvalOutcome:
    """``rbench eval``: score a predictions JSONL with any metric set (default: the
    text metrics; ``config``: a file with ``answer_metrics:``). Returns the
    outcome (``.result.aggregates[metric].mean``, ``.run_id``)."""
    from retrieval_bench.harness.eval.predictions import evaluate_predictions

    ws = workspace or Workspace.default()
    return evaluate_predictions(
        predictions, ws, metrics=metrics, config=config, name=name, store_run=store_run,
        consistency=consistency,
    )  # fmt: skip
