"""Preparing a dataset for its stages: its questions (splits, limits, gold paths
remapped), its snapshot opened and chunked into a corpus, and the LanceDB index
when a stage consumes vectors (docs/architecture.md#how-a-benchmark-run-flows).

The stages then run over the prepared dataset in
:mod:`retrieval_bench.harness.run.graph_run`, and are scored in
:mod:`retrieval_bench.harness.run.snapshot_work`, against the same gold for every
stage.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from retrieval_bench.chunking.cache import (
    ChunkCache,
    ChunkStats,
    chunk_cache_enabled,
    chunk_tree_cached,
)
from retrieval_bench.chunking.facts_handover import expect_facts
from retrieval_bench.config import BenchmarkConfig, DatasetSpec, StageSpec
from retrieval_bench.contracts.chunker import Chunker, chunk_tree
from retrieval_bench.contracts.registry import CHUNKERS, RETRIEVERS
from retrieval_bench.corpus import Corpus
from retrieval_bench.datasets.jsonl import (
    LoadResult,
    RowError,
    check_gold,
    dataset_fingerprint,
    load_examples,
    merge_gold_functions,
    missing_gold_reasons,
)
from retrieval_bench.datasets.splits import with_hash_split
from retrieval_bench.errors import DatasetError, SnapshotError
from retrieval_bench.files import SourceFile, WalkReport, iter_source_files
from retrieval_bench.loads import own_seconds
from retrieval_bench.progress import Progress, for_label
from retrieval_bench.snapshot import Snapshot, devset_manifest_sha, open_snapshot
from retrieval_bench.snapshot.sources import is_tarball, open_tarball
from retrieval_bench.types import Example
from retrieval_bench.workspace import Workspace

log = logging.getLogger(__name__)
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class PreparedDataset:
    """A dataset bound to its snapshot and chunked corpus: a value (stages read it,
    none changes it; a changed dataset is a new one, ``dataclasses.replace``)."""

    spec: DatasetSpec
    snapshot: Snapshot
    examples: list[Example]
    row_errors: list[RowError]
    missing_gold: dict[str, list[str]]
    """Query id → gold files that are not in the chunked corpus (absent from the
    snapshot, or skipped by the walker); never counted as lost."""
    corpus: Corpus
    fingerprint: str
    codebase_index: Any = None
    timings: dict[str, float] = field(default_factory=dict)
    train_examples: list[Example] = field(default_factory=list)
    """Examples of ``spec.train_split``: what learned stages fit on."""
    missing_reasons: dict[str, str] = field(default_factory=dict)
    """Missing gold path → why (``not in the snapshot``, ``binary``, ``larger than …``)."""
    snapshot_groups: list[dict[str, Any]] = field(default_factory=list)
    """Per-question snapshots: one entry per snapshot group (source, kind, fingerprint,
    queries, chunks, timings); empty for a dataset with one snapshot."""
    snapshot_failures: list[dict[str, Any]] = field(default_factory=list)
    """Snapshot groups that could not be opened or chunked: source, reason, query ids."""
    failed_questions: dict[str, str] = field(default_factory=dict)
    """Question id → why it could not be run (its snapshot failed). Such a question
    stays in ``examples`` and scores 0 in every metric
    (docs/metrics.md#questions-that-could-not-be-run)."""
    remapped_gold: dict[str, str] = field(default_factory=dict)
    """``gold_paths: suffix``: gold path → the snapshot path it was matched to."""
    chunk_stats: dict[str, int] = field(default_factory=dict)
    """``files_chunked`` / ``files_reused``: files chunked afresh vs taken from the chunk
    cache (docs/architecture.md#caches; absent when the cache was not used); in a
    scored outcome's dataset, the retrievers' ``index_stats`` summed in
    (``texts_embedded``, ``texts_cached``, ``vectors_reused``:
    :func:`~retrieval_bench.harness.run.snapshot_work.with_index_stats`)."""


def make_chunker(name: str = "ast", **params: Any) -> Chunker:
    """The registered chunker ``name`` built with ``params`` (``api.make_chunker``)."""
    return CHUNKERS.create(name, **params)


def needs_vectors(specs: Sequence[StageSpec]) -> bool:
    """Whether some retriever of ``specs`` declares ``uses_vector_index`` (so the
    snapshot is indexed with embeddings and the index handed to it)."""
    return any(RETRIEVERS.type_of(s.name).uses_vector_index_for(s.params()) for s in specs)


def index_name(
    snapshot: Snapshot,
    chunker: Chunker,
    model: str,
    ignore: Sequence[str] = (),
    include: Sequence[str] = (),
) -> str:
    """One index per (repository, chunker config, model, extra ignore and include lists).

    A folder is a working tree that changes under us, so its index is keyed by
    its location and kept current with ``update``; git and PyPI snapshots are
    immutable, so they are keyed by their content fingerprint.
    """
    where = (
        str(Path(snapshot.root).resolve()) if snapshot.kind == "folder" else snapshot.fingerprint
    )
    key = json.dumps(
        {"snap": where, "chunker": chunker.name, "cfg": chunker.config(), "m": model}
        | ({"ignore": list(ignore)} if ignore else {})
        | ({"include": list(include)} if include else {}),
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"{_name_part(Path(snapshot.root).name)}-{digest}"


def _name_part(folder: str) -> str:
    """A folder name made safe for an index name (LanceDB table and manifest file
    names allow only ``[A-Za-z0-9_.-]``): accents are dropped (``wëird`` → ``weird``),
    every other run of disallowed characters becomes ``-``, and the result is at most
    40 characters (``repo`` when nothing is left). Names that were valid are kept as
    they are, so existing indexes stay found; the hash that follows in the index
    name keeps folders apart that fold to the same text."""
    if _SAFE_NAME.fullmatch(folder) and len(folder) <= 40:
        return folder
    folded = unicodedata.normalize("NFKD", folder).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", folded).strip("-.")[:40].rstrip("-.") or "repo"


def build_corpus(
    snapshot: Snapshot,
    chunker: Chunker,
    ws: Workspace,
    *,
    with_vectors: bool,
    progress: Callable[[int, int, str], None] | None = None,
    index_uri: Path | None = None,
    ignore: Sequence[str] = (),
    include: Sequence[str] = (),
    stats: ChunkStats | None = None,
) -> tuple[Corpus, Any]:
    """Chunk a snapshot; with vectors, through the (built or updated) LanceDB index.

    ``ignore`` adds gitignore-style patterns to the repository's own rules
    (e.g. translation catalogues that no question is about); ``include`` keeps only
    the files one of its globs matches (e.g. ``*.py``). Without vectors a
    file's chunks come from the chunk cache when it has them (counted in ``stats``).
    """
    rules = {"extra_ignore": tuple(ignore), "include": tuple(include)}
    if not with_vectors:
        report = WalkReport()
        sources: dict[str, SourceFile] = {}
        if chunk_cache_enabled():
            cache = ChunkCache.in_dir(ws.cache_dir / "chunks")
            try:
                made = chunk_tree_cached(
                    snapshot.root, chunker, cache, report, stats, sources, **rules
                )
                chunks = list(made)
            finally:
                cache.close()
        else:
            chunks = list(chunk_tree(snapshot.root, chunker, report, **rules))
        corpus = Corpus(
            snapshot.root, chunks, chunker.tokenizer_name, dict(report.skipped), sources
        )
        return _with_caches(_nonempty(corpus, snapshot), ws), None
    from retrieval_bench.index.embed import default_embedder
    from retrieval_bench.index.store import CodebaseIndex

    # an empty repository fails before the embedding model is loaded (the walk
    # stops at the first source file, so a non-empty one costs next to nothing)
    report = WalkReport()
    walk = iter_source_files(
        snapshot.root, report=report, extra_ignore=tuple(ignore), include=tuple(include)
    )
    if next(walk, None) is None:
        _nonempty(Corpus(snapshot.root, [], chunker.tokenizer_name, report.skipped), snapshot)
    embedder = default_embedder(ws)
    name = index_name(snapshot, chunker, embedder.name, ignore, include)
    index = CodebaseIndex(index_uri or ws.index_dir, name, chunker, embedder, ignore, include)
    if index.exists():
        index.update(snapshot.root, progress)
    else:
        index.build(snapshot.root, progress)
    return _with_caches(_nonempty(index.corpus(snapshot.root), snapshot), ws), index


def _with_caches(corpus: Corpus, ws: Workspace) -> Corpus:
    """``corpus`` with the workspace's per-file caches, when the caches are on."""
    corpus.cache_dir = ws.cache_dir if chunk_cache_enabled() else None
    return corpus


def _nonempty(corpus: Corpus, snapshot: Snapshot) -> Corpus:
    """``corpus``, or :class:`SnapshotError` when it has no chunk: nothing could be
    retrieved from it, so searching or scoring it would only print empty results.
    (An empty corpus took no embedding work, so failing here wastes nothing.)"""
    if corpus.chunks:
        return corpus
    why = "it has no files the ignore rules keep"
    if corpus.skipped:
        reasons: dict[str, int] = {}
        for reason in corpus.skipped.values():
            reasons[reason] = reasons.get(reason, 0) + 1
        listed = ", ".join(f"{r} ({n})" for r, n in sorted(reasons.items()))
        why = f"all {len(corpus.skipped)} files were skipped: {listed}"
    raise SnapshotError(f"no source files to index in {snapshot.source} ({why})")


def _split_counts(examples: Sequence[Example]) -> str:
    """``dev (40), test (60)``: the splits present and their sizes (``none`` = no split)."""
    counts: dict[str, int] = {}
    for e in examples:
        counts[e.split or "none"] = counts.get(e.split or "none", 0) + 1
    return ", ".join(f"{name} ({n})" for name, n in sorted(counts.items()))


def remap_gold_by_suffix(
    examples: Sequence[Example], paths: set[str]
) -> tuple[list[Example], dict[str, str]]:
    """Gold files absent from ``paths`` mapped to the one path ending with ``/<gold>``
    (none or several: left as they are, so they stay missing gold). Returns the
    examples and the mapping used (old path → new path)."""
    by_suffix: dict[str, list[str]] = {}
    wanted = {g for e in examples for g in [*e.gold_files, *(s.path for s in e.gold_spans)]}
    for gold in wanted - paths:
        by_suffix[gold] = [p for p in paths if p.endswith("/" + gold)]
    mapping = {gold: found[0] for gold, found in by_suffix.items() if len(found) == 1}
    if not mapping:
        return list(examples), {}
    out = [
        replace(
            e,
            gold_files=tuple(mapping.get(g, g) for g in e.gold_files),
            gold_spans=tuple(replace(s, path=mapping.get(s.path, s.path)) for s in e.gold_spans),
        )
        for e in examples
    ]
    return out, mapping


def select_questions(spec: DatasetSpec) -> tuple[LoadResult, list[Example], list[Example]]:
    """The dataset's questions: (everything loaded, the evaluated examples, the
    ``train_split`` examples), after ``split``, ``limit`` and ``train_limit``.

    A run with no question to evaluate has nothing to measure, so an empty file,
    a file whose every row is invalid, and a ``split`` or ``train_split`` that no
    row has raise :class:`DatasetError` naming the file and why; reading a JSONL
    file is cheap, so this is checked before any snapshot is opened or chunked.
    """
    loaded = load_examples(spec.questions)
    where = f"dataset {spec.name}: {spec.questions}"
    if not loaded.examples:
        if not loaded.errors:
            raise DatasetError(f"{where} has no questions (the file is empty)")
        first = loaded.errors[0]
        raise DatasetError(
            f"{where} has no valid questions: all {len(loaded.errors)} rows are invalid "
            f"(first: {first}); check them with rbench dataset inspect"
        )
    if spec.gold_functions is not None:
        loaded.examples = merge_gold_functions(loaded.examples, spec.gold_functions)
    if spec.hash_split is not None:
        loaded.examples = [with_hash_split(e, spec.hash_split) for e in loaded.examples]
    examples = [e for e in loaded.examples if spec.split is None or e.split == spec.split]
    train = [e for e in loaded.examples if spec.train_split and e.split == spec.train_split]
    chosen = (("split", spec.split, examples), ("train_split", spec.train_split, train))
    for key, value, picked in chosen:
        if value is not None and not picked:
            raise DatasetError(
                f"{where} has no questions with {key} {value!r}; "
                f"splits present: {_split_counts(loaded.examples)}"
            )
    if spec.limit:
        examples = examples[: spec.limit]
    if spec.train_limit:
        train = train[: spec.train_limit]
    return loaded, examples, train


def open_dataset_snapshot(spec: DatasetSpec, ws: Workspace) -> Snapshot:
    """The dataset's own ``snapshot:`` (folder, tarball, git or PyPI), opened."""
    if spec.snapshot is None:
        raise DatasetError(
            f"dataset {spec.name}: no snapshot: give snapshot: or a snapshot/repo+commit per row"
        )
    if is_tarball(spec.snapshot) and Path(spec.snapshot).is_file():
        return open_tarball(Path(spec.snapshot), ws.snapshots_dir, expected_sha256=spec.sha256)
    sha = spec.sha256
    if sha is None and "==" in spec.snapshot:
        name, _, version = spec.snapshot.removeprefix("pypi:").partition("==")
        sha = devset_manifest_sha(name, version)
    return open_snapshot(spec.snapshot, ws.snapshots_dir, expected_sha256=sha)


def prepare_dataset(
    spec: DatasetSpec,
    cfg: BenchmarkConfig,
    ws: Workspace,
    progress: Progress | None = None,
) -> PreparedDataset:
    """Load the questions, open the snapshot, chunk (and index when dense is used)."""
    loaded, examples, train = select_questions(spec)  # bad questions fail before any work
    t0 = time.perf_counter()
    snapshot = open_dataset_snapshot(spec, ws)
    timings = {"snapshot": time.perf_counter() - t0}
    return prepare_snapshot(
        spec, cfg, ws, snapshot, examples, train, loaded.errors, progress, timings
    )


def prepare_snapshot(
    spec: DatasetSpec,
    cfg: BenchmarkConfig,
    ws: Workspace,
    snapshot: Snapshot,
    examples: list[Example],
    train: list[Example],
    row_errors: list[RowError],
    progress: Progress | None = None,
    timings: dict[str, float] | None = None,
    *,
    per_question_snapshots: bool = False,
) -> PreparedDataset:
    """Chunk (and index when dense is used) an opened snapshot for ``examples``.

    ``per_question_snapshots``: one of many snapshots of a repository. No
    LanceDB index is built (it would hold a full copy of every vector per
    snapshot); the snapshot is chunked through the content-addressed chunk
    cache and a dense retriever takes its vectors from the content-addressed
    embedding cache, so each distinct chunk text is stored once.
    """
    timings = dict(timings or {})
    t0 = time.perf_counter()
    label = spec.name if snapshot.source == spec.snapshot else f"{spec.name} {snapshot.source}"
    with_vectors = needs_vectors(cfg.retrievers) and not per_question_snapshots
    stats = ChunkStats()
    if any(stage.name == "code-graph" for stage in cfg.stage_specs()):
        expect_facts()  # the chunker's parse also gives the graph its facts
    corpus, codebase_index = build_corpus(
        snapshot,
        make_chunker(cfg.chunker.name, **cfg.chunker.params()),
        ws,
        with_vectors=with_vectors,
        ignore=spec.ignore,
        include=spec.include,
        progress=for_label(progress, f"index {label}") if progress else None,
        stats=stats,
    )
    # the embedding model's first load is not chunking or indexing work: on its own key
    timings["chunk_index"], loads = own_seconds(t0)
    timings.update({f"load:{name}": sec for name, sec in loads.items()})

    # a gold file the walker skipped (too large, binary, ...) cannot be retrieved
    # either: it is missing gold, with the walker's reason
    remapped: dict[str, str] = {}
    if spec.gold_paths == "suffix":
        examples, remapped = remap_gold_by_suffix(examples, set(corpus.paths))
    missing = check_gold(examples, set(corpus.paths))
    return PreparedDataset(
        spec=spec,
        snapshot=snapshot,
        examples=examples,
        row_errors=row_errors,
        missing_gold=missing,
        corpus=corpus,
        fingerprint=dataset_fingerprint(examples),
        codebase_index=codebase_index,
        timings=timings,
        train_examples=train,
        missing_reasons=missing_gold_reasons(missing, corpus.skipped, corpus.root),
        chunk_stats=stats.as_dict() if not with_vectors and chunk_cache_enabled() else {},
        remapped_gold=remapped,
    )
