"""One dataset through the pipeline: snapshot → chunks/index → retrievers → fusions.

Every stage yields a :class:`StageResult`; a stage that raises is recorded as
failed for all its queries (with the reason) and the run goes on (SPEC §7).
Scoring happens later, in :mod:`retrieval_bench.harness.runner`, against the
same gold for every stage.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_bench import registry
from retrieval_bench.chunking.base import Chunker, chunk_tree
from retrieval_bench.config import BenchmarkConfig, DatasetSpec, StageSpec
from retrieval_bench.corpus import Corpus
from retrieval_bench.datasets.jsonl import (
    RowError,
    check_gold,
    dataset_fingerprint,
    load_examples,
)
from retrieval_bench.files import WalkReport
from retrieval_bench.snapshot import Snapshot, devset_manifest_sha, open_snapshot
from retrieval_bench.types import Example
from retrieval_bench.workspace import Workspace

log = logging.getLogger(__name__)
Progress = Callable[[str, float], None]


@dataclass
class PreparedDataset:
    """A dataset bound to its snapshot and chunked corpus."""

    spec: DatasetSpec
    snapshot: Snapshot
    examples: list[Example]
    row_errors: list[RowError]
    missing_gold: dict[str, list[str]]
    corpus: Corpus
    fingerprint: str
    codebase_index: Any = None
    timings: dict[str, float] = field(default_factory=dict)
    train_examples: list[Example] = field(default_factory=list)
    """Examples of ``spec.train_split``: what learned stages fit on."""


def make_chunker(spec: StageSpec) -> Chunker:
    chunker: Chunker = registry.create("chunkers", spec.name, **spec.params())
    return chunker


def _takes_codebase_index(factory: object) -> bool:
    """Retrievers whose ``index()`` accepts a ``codebase_index`` reuse the LanceDB vectors."""
    index = getattr(factory, "index", None)
    return index is not None and "codebase_index" in inspect.signature(index).parameters


def _needs_vectors(specs: Sequence[StageSpec]) -> bool:
    return any(_takes_codebase_index(registry.get("retrievers", s.name)) for s in specs)


def _index_name(
    snapshot: Snapshot, chunker: Chunker, model: str, ignore: Sequence[str] = ()
) -> str:
    """One index per (repository, chunker config, model).

    A folder is a working tree that changes under us, so its index is keyed by
    its location and kept current with ``update``; git and PyPI snapshots are
    immutable, so they are keyed by their content fingerprint.
    """
    where = (
        str(Path(snapshot.root).resolve()) if snapshot.kind == "folder" else snapshot.fingerprint
    )
    key = json.dumps(
        {"snap": where, "chunker": chunker.name, "cfg": chunker.config(), "m": model}
        | ({"ignore": list(ignore)} if ignore else {}),
        sort_keys=True,
        default=str,
    )
    return f"{Path(snapshot.root).name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def build_corpus(
    snapshot: Snapshot,
    chunker: Chunker,
    ws: Workspace,
    *,
    with_vectors: bool,
    progress: Callable[[float], None] | None = None,
    index_uri: Path | None = None,
    ignore: Sequence[str] = (),
) -> tuple[Corpus, Any]:
    """Chunk a snapshot; with vectors, through the (built or updated) LanceDB index.

    ``ignore`` adds gitignore-style patterns to the repository's own rules
    (e.g. translation catalogues that no question is about).
    """
    if not with_vectors:
        report = WalkReport()
        chunks = list(chunk_tree(snapshot.root, chunker, report, extra_ignore=tuple(ignore)))
        return Corpus(snapshot.root, chunks, chunker.tokenizer_name, dict(report.skipped)), None
    from retrieval_bench.index.embed import default_embedder
    from retrieval_bench.index.store import CodebaseIndex

    embedder = default_embedder(ws)
    name = _index_name(snapshot, chunker, embedder.name, ignore)
    index = CodebaseIndex(index_uri or ws.index_dir, name, chunker, embedder, ignore)
    if index.exists():
        index.update(snapshot.root, progress)
    else:
        index.build(snapshot.root, progress)
    return index.corpus(snapshot.root), index


def prepare_dataset(
    spec: DatasetSpec,
    cfg: BenchmarkConfig,
    ws: Workspace,
    progress: Progress | None = None,
) -> PreparedDataset:
    """Open the snapshot, load the questions, chunk (and index when dense is used)."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sha = spec.sha256
    if sha is None and "==" in spec.snapshot:
        name, _, version = spec.snapshot.removeprefix("pypi:").partition("==")
        sha = devset_manifest_sha(name, version)
    snapshot = open_snapshot(spec.snapshot, ws.snapshots_dir, expected_sha256=sha)
    timings["snapshot"] = time.perf_counter() - t0

    loaded = load_examples(spec.questions)
    examples = [e for e in loaded.examples if spec.split is None or e.split == spec.split]
    if spec.limit:
        examples = examples[: spec.limit]
    train = [e for e in loaded.examples if spec.train_split and e.split == spec.train_split]
    if spec.train_limit:
        train = train[: spec.train_limit]

    t0 = time.perf_counter()
    corpus, codebase_index = build_corpus(
        snapshot,
        make_chunker(cfg.chunker),
        ws,
        with_vectors=_needs_vectors(cfg.retrievers),
        ignore=spec.ignore,
        progress=(lambda x: progress(f"index {spec.name}", x)) if progress else None,
    )
    timings["chunk_index"] = time.perf_counter() - t0

    file_set = set(corpus.paths) | set(corpus.skipped)
    missing = check_gold(examples, file_set)
    return PreparedDataset(
        spec=spec,
        snapshot=snapshot,
        examples=examples,
        row_errors=loaded.errors,
        missing_gold=missing,
        corpus=corpus,
        fingerprint=dataset_fingerprint(examples),
        codebase_index=codebase_index,
        timings=timings,
        train_examples=train,
    )
