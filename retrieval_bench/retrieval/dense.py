"""Dense retrieval: embed chunks and queries, rank by cosine similarity.

The "naive" embedding rung (docs/stages.md#dense): an off-the-shelf sentence-transformers model
(all-MiniLM-L6-v2, fully local). The chunk vectors are held in memory as one
float32 matrix with unit-norm rows, so a batch of queries is one matrix
product and ``argpartition`` picks the top k — exact search, which at the
sizes of a benchmark corpus (≤ ~100k chunks) costs milliseconds.

Chunk vectors come, in order of preference, from

1. a built :class:`~retrieval_bench.index.store.CodebaseIndex` passed as
   ``index(corpus, codebase_index=...)`` (same embedder name), or the indexes
   found under ``index_uri``; reuse is by chunk id, which is content-addressed;
2. the on-disk :class:`~retrieval_bench.index.embed.EmbeddingCache`
   (``cache_dir``: in a benchmark run the run's workspace's ``embeddings_uri``, given
   by the harness since the class declares ``uses_embedding_cache``; outside one,
   ``Workspace.default().embeddings_uri``), so a text is
   embedded once per model across runs and chunker variants
   (docs/architecture.md#caches);
3. the model, for whatever is left.

The "basic" rung, a learned linear *adapter* matrix applied to query vectors
(docs/stages.md#dense-adapted): ``adapter=`` names one saved by
:meth:`~retrieval_bench.retrieval.linear_adapter.LinearAdapter.save`, and
:meth:`DenseRetriever.transform_queries` applies it; the ``dense-adapted``
retriever (:mod:`retrieval_bench.retrieval.adapter`) learns one from a
training split.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.index.embed import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
)
from retrieval_bench.index.embedders import make_embedder, query_windows, token_budget
from retrieval_bench.index.trained_model import embedding_format, read_manifest
from retrieval_bench.retrieval.linear_adapter import LinearAdapter, load_adapter
from retrieval_bench.types import Run
from retrieval_bench.workspace import Workspace

if TYPE_CHECKING:  # the LanceDB index module imports LanceDB and pyarrow (0.9 s)
    from retrieval_bench.index.store import CodebaseIndex


def _vectors_of(table: Any) -> np.ndarray:
    """:func:`retrieval_bench.index.store.vectors_of`, imported when first needed."""
    from retrieval_bench.index.store import vectors_of

    return vectors_of(table)


def trained_model_name(path: Path) -> str:
    """The cache name of a model folder: its folder name, and for a folder written by
    ``rbench fit-dense`` its weights' fingerprint too, so two trainings saved under one
    name never share cached vectors (docs/stages.md#fit-dense)."""
    manifest = read_manifest(path)
    fingerprint = manifest.get("fingerprint") if manifest else None
    name = path.name or str(path)
    return f"{name}-{fingerprint[:12]}" if isinstance(fingerprint, str) else name


def _onnx_embedder(
    model: str | None,
    model_path: str | None,
    backend: str,
    cache_dir: str | None,
    threads: int | None,
) -> Embedder:
    """The ONNX Runtime embedder of a sentence-transformers model (the packaged
    MiniLM, or ``model_path``), exported into the workspace's ``cache/models``."""
    from retrieval_bench.index.embed import DEFAULT_MODEL_NAME, default_model_path
    from retrieval_bench.index.embedders import MODEL_ALIASES
    from retrieval_bench.index.onnx_backend import OnnxEmbedder

    if model is not None and MODEL_ALIASES.get(model.strip()) != DEFAULT_MODEL_NAME:
        raise ConfigError(f"dense: backend {backend!r} runs sentence-transformers models only")
    path = Path(model_path) if model_path else default_model_path()
    name = DEFAULT_MODEL_NAME if not model_path else trained_model_name(path)
    cache = Path(cache_dir).parent if cache_dir else Workspace.default().cache_dir
    return OnnxEmbedder(path, cache / "models", backend=backend, name=name, threads=threads)


_QUERY_BLOCK = 256  # queries scored per matrix product, bounding memory at m × n floats


class DenseRetriever(Retriever):
    """Exact cosine search over sentence-transformers embeddings of the corpus chunks."""

    class Params(StageParams):
        """``model`` names an embedder (``minilm``, the default, or ``e5-small``;
        :mod:`~retrieval_bench.index.embedders`); ``adapter`` is the path of a saved
        query adapter; ``device`` is ``cpu``, ``cuda``, ``cuda:N`` or ``auto``
        (default: ``$RBENCH_DEVICE``, else ``auto``); ``model_path``, ``batch_size``
        and ``threads`` configure the default :class:`SentenceTransformerEmbedder`.

        ``query_mode``: ``truncate`` embeds a query cut to the model's length;
        ``chunked`` embeds it in windows of whole lines that each fit and scores a
        chunk by the ``query_pool`` (``max`` or ``mean``) of its window similarities.

        ``backend``: ``torch`` (sentence-transformers), or ``onnx``/``onnx-int8`` (ONNX
        Runtime on an export of the same weights, :mod:`~retrieval_bench.index.onnx_backend`;
        sentence-transformers models only), whose vectors are cached apart."""

        model_path: str | None = None
        batch_size: int = 64
        threads: int | None = None
        index_uri: str | None = None
        cache_dir: str | None = None
        adapter: str | None = None
        device: str | None = None
        model: str | None = None
        query_mode: str = "truncate"
        query_pool: str = "max"
        backend: str = "torch"

    name = "dense"
    uses_vector_index = True
    uses_embedding_cache = True
    params: DenseRetriever.Params

    def __init__(
        self,
        params: DenseRetriever.Params | None = None,
        /,
        *,
        embedder: Embedder | None = None,
        **values: Any,
    ) -> None:
        """``params`` (or ``values``): :class:`DenseRetriever.Params`; ``embedder``
        overrides the model (tests, other backends)."""
        p = self.params = self.Params.of(params, **values)
        super().__init__()
        if p.query_mode not in ("truncate", "chunked") or p.query_pool not in ("max", "mean"):
            raise ConfigError(
                f"dense: query_mode {p.query_mode!r} / query_pool {p.query_pool!r}: "
                "choose truncate|chunked and max|mean"
            )
        if embedder is None and p.backend != "torch":
            embedder = _onnx_embedder(p.model, p.model_path, p.backend, p.cache_dir, p.threads)
        if embedder is None and p.model is not None:
            if p.model_path is not None:
                raise ConfigError("dense: give model (a named embedder) or model_path, not both")
            embedder = make_embedder(
                p.model, device=p.device, batch_size=p.batch_size, threads=p.threads
            )
        self.format = embedding_format(p.model_path)
        """What a ``fit-dense`` model folder asks for: a query prefix, the path before a
        chunk's text (docs/stages.md#fit-dense); plain for any other model."""
        if embedder is None and p.model_path is not None:
            manifest = read_manifest(p.model_path)
            if manifest is not None and manifest.get("onnx_only"):
                raise ConfigError(
                    f"dense: model folder {p.model_path} ships only its int8 ONNX export; "
                    "use backend: onnx-int8"
                )
        self.embedder: Embedder = embedder or SentenceTransformerEmbedder(
            p.model_path,
            device=p.device,
            batch_size=p.batch_size,
            threads=p.threads,
            name=trained_model_name(Path(p.model_path)) if p.model_path else None,
        )
        self.query_mode = p.query_mode
        self.query_pool = p.query_pool
        self.index_uri = Path(p.index_uri) if p.index_uri else None
        self.cache_dir = Path(p.cache_dir) if p.cache_dir else None
        self._cached: CachedEmbedder | None = None
        self._ids: list[str] = []
        self._id_rank = np.zeros(0, dtype=np.int64)
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self.reused = 0
        """Chunk vectors taken from a CodebaseIndex during the last ``index`` call."""
        self.adapter: LinearAdapter | None = None
        """Learned query adapter applied by :meth:`transform_queries` (None: identity)."""
        if p.adapter:
            self.adapter = load_adapter(p.adapter, self.embedder.name)

    @classmethod
    def uses_vector_index_for(cls, params: Mapping[str, Any]) -> bool:
        """An ONNX backend's vectors are not the LanceDB index's (PyTorch's), nor are a
        ``fit-dense`` model's, which embeds a chunk with its path."""
        backend: object = params.get("backend", "torch")
        model_path: object = params.get("model_path")
        if isinstance(model_path, str) and not embedding_format(model_path).plain:
            return False
        return backend == "torch"

    @property
    def cached_embedder(self) -> CachedEmbedder:
        """The embedder behind the on-disk cache (opened on first use)."""
        if self._cached is None:
            folder = self.cache_dir or Workspace.default().embeddings_uri
            self._cached = CachedEmbedder(self.embedder, EmbeddingCache.in_dir(folder))
        return self._cached

    def index(self, corpus: Corpus, codebase_index: CodebaseIndex | None = None) -> None:
        """Hold one unit-norm vector per corpus chunk, reusing stored vectors where possible.

        Sets :attr:`index_stats`: distinct texts embedded by the model vs served by
        the embedding cache, and vectors reused from a CodebaseIndex.
        """
        chunks = corpus.chunks
        known = self._stored_vectors(codebase_index, {c.id for c in chunks})
        self.reused = len(known)
        todo = [c for c in chunks if c.id not in known]
        embedded = cached = 0
        if todo:
            self.cached_embedder.reset_counters()
            fresh = self.cached_embedder.embed([self.format.document(c.path, c.text) for c in todo])
            known.update(zip((c.id for c in todo), fresh, strict=True))
            embedded, cached = self.cached_embedder.misses, self.cached_embedder.hits
        self.index_stats = {
            "texts_embedded": embedded,
            "texts_cached": cached,
            "vectors_reused": self.reused,
        }
        self._ids = [c.id for c in chunks]
        self._id_rank = np.argsort(np.argsort(np.array(self._ids, dtype=object), kind="stable"))
        if chunks:
            self._matrix = np.stack([known[c.id] for c in chunks]).astype(np.float32, copy=False)
        else:
            self._matrix = np.zeros((0, 0), dtype=np.float32)

    def _stored_vectors(
        self, codebase_index: CodebaseIndex | None, wanted: set[str]
    ) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        sources: list[tuple[list[str], np.ndarray]] = []
        if codebase_index is not None and codebase_index.embedder.name == self.embedder.name:
            manifest = codebase_index.manifest()
            if manifest is not None and manifest["embedder"]["name"] == self.embedder.name:
                sources.append(codebase_index.vectors())
        if self.index_uri is not None and self.index_uri.is_dir():
            sources.append(_vectors_under(self.index_uri, self.embedder.name))
        for ids, matrix in sources:
            for cid, vec in zip(ids, matrix, strict=True):
                if cid in wanted:
                    found.setdefault(cid, vec)
        return found

    def transform_queries(self, vectors: np.ndarray) -> np.ndarray:
        """The learned query adapter (docs/stages.md#dense-adapted) on the vectors, or identity.

        An adapter ``W`` (d × d, trained on labelled pairs) returns the unit rows
        of ``vectors @ W.T``; chunk vectors are never mapped.
        """
        return vectors if self.adapter is None else self.adapter.transform(vectors)

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` chunk ids per query, scored by cosine similarity."""
        qids = list(queries)
        run = Run(self.name, {q: {} for q in qids})
        n = len(self._ids)
        if not qids or n == 0 or k <= 0:
            return run
        k = min(k, n)
        if self.query_mode == "chunked":
            for qid in qids:
                scores = self._chunked_scores(queries[qid])
                cols = self._top_k(scores, k)
                run.scores[qid] = {self._ids[c]: float(scores[c]) for c in cols}
            return run
        q = self.cached_embedder.embed_queries([self.format.query(queries[qid]) for qid in qids])
        q = self.transform_queries(np.asarray(q, dtype=np.float32))
        for start in range(0, len(qids), _QUERY_BLOCK):
            block = q[start : start + _QUERY_BLOCK] @ self._matrix.T
            for row, qid in enumerate(qids[start : start + _QUERY_BLOCK]):
                cols = self._top_k(block[row], k)
                run.scores[qid] = {self._ids[c]: float(block[row, c]) for c in cols}
        return run

    def _chunked_scores(self, query: str) -> np.ndarray:
        """One score per chunk: max or mean cosine over the query's windows."""
        budget = token_budget(self.embedder)
        if budget is None:
            raise ConfigError(f"dense: query_mode chunked: no token count for {self.embedder!r}")
        windows = query_windows(query, *budget)
        q = self.cached_embedder.embed_queries([self.format.query(w) for w in windows])
        sims = self.transform_queries(np.asarray(q, dtype=np.float32)) @ self._matrix.T
        pooled = sims.max(axis=0) if self.query_pool == "max" else sims.mean(axis=0)
        return np.asarray(pooled, dtype=np.float32)

    def _top_k(self, scores: np.ndarray, k: int) -> np.ndarray:
        """Columns of the ``k`` best scores; ties at the cut go to the smaller chunk id,
        as in :meth:`Run.ranked`, so the result never depends on partition order."""
        if k >= len(scores):
            return np.arange(len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        kth = scores[top].min()
        tied = np.flatnonzero(scores == kth)
        if len(tied) == np.count_nonzero(scores[top] == kth):
            return top
        above = np.flatnonzero(scores > kth)
        tied = tied[np.argsort(self._id_rank[tied], kind="stable")][: k - len(above)]
        return np.concatenate([above, tied])

    def __repr__(self) -> str:
        return f"DenseRetriever({self.embedder!r}, chunks={len(self._ids)})"


def _vectors_under(uri: str | Path, embedder_name: str) -> tuple[list[str], np.ndarray]:
    """Chunk ids and vectors of every index under ``uri`` built with ``embedder_name``.

    Used by the dense retriever to reuse vectors by (content-addressed) chunk id
    without knowing which chunker built which index.
    """
    folder = Path(uri)
    ids: list[str] = []
    parts: list[np.ndarray] = []
    db: Any = None
    for path in sorted(folder.glob("*.manifest.json")):
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            if manifest.get("embedder", {}).get("name") != embedder_name:
                continue
            if (
                db is None
            ):  # LanceDB (0.9 s to import) only here: a run without dense never loads it
                import lancedb

                db = lancedb.connect(str(folder))
            data = db.open_table(str(manifest["table"])).to_arrow().select(["id", "vector"])
        except (OSError, ValueError, KeyError, AttributeError, RuntimeError):
            # an unreadable or half-written manifest, a damaged table (LanceDB's
            # RuntimeError, index/damage.py): skip it, never fail the run
            continue
        ids.extend(data.column("id").to_pylist())
        parts.append(_vectors_of(data))
    matrix = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
    return ids, matrix
