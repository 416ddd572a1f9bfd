"""``cross-encoder``: rerank with a local sentence-transformers cross-encoder.

Reranking with local models (docs/stages.md#cross-encoder): a local model cannot answer
hundreds of parallel Yes/No calls the way a hosted LLM does, so a
sentence-transformers ``CrossEncoder`` reads each (question, snippet) pair
and outputs a relevance score in batched forward passes.

The model is a local folder given as ``model_path`` or by the environment
variable ``RBENCH_CROSS_ENCODER``; nothing is ever downloaded: ``HF_HUB_OFFLINE=1``
is set before sentence-transformers is imported
(docs/architecture.md#components-and-how-each-starts). No path →
:class:`~retrieval_bench.errors.ConfigError` saying how to set one.

Score = the model's output for the pair ``(query, "<path>\\n<snippet>")``.
For a one-label model sentence-transformers applies a sigmoid by default, so
scores lie in (0, 1) and a threshold can be swept over them. Equal scores
keep the input order; the ``threshold``, ``max_candidates`` and
``snippet_chars`` parameters mean what they mean for the LLM rerankers.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationInfo, field_validator

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.reranker import Reranker
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.loads import timed_load
from retrieval_bench.reranking.common import (
    gather_candidates,
    positive_ints,
    stable_scores,
    truncate_snippet,
)
from retrieval_bench.types import Chunk, Run

# Never download weights (docs/architecture.md#components-and-how-each-starts); must be
# set before huggingface_hub is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ENV = "RBENCH_CROSS_ENCODER"


@functools.lru_cache(maxsize=2)
def _load(path: str, device: str, max_length: int | None) -> Any:
    """One loaded model per (path, device, max_length) per process."""
    with timed_load("cross-encoder model"):  # kept out of the reranker's own seconds
        from sentence_transformers import CrossEncoder
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        return CrossEncoder(path, device=device, max_length=max_length, local_files_only=True)


class CrossEncoderReranker(Reranker):
    """Scores (query, snippet) pairs with a local ``CrossEncoder``.

    Parameters:
        model_path: local model folder; default ``$RBENCH_CROSS_ENCODER``.
        max_candidates: how many of each query's input candidates to score (50).
        snippet_chars: characters of each chunk shown to the model (2000).
        threshold: drop candidates scoring below it (None: keep all).
        batch_size: pairs per forward pass (32).
        device: torch device ("cpu").
        threads: torch CPU threads (default ``$RBENCH_THREADS``, else torch's).
        max_length: token limit of a pair (default: the model's).
        name: the name of the output run.
        model: an already loaded model with ``predict(pairs)`` (tests, other
            backends); replaces ``model_path``.

    After ``rerank``: ``failures`` (query id → reason), ``artifacts`` (query id
    → one record per candidate, best first) and ``unknown_chunks``.
    """

    name = "cross-encoder"

    class Params(StageParams):
        """The parameters (class doc)."""

        model_path: str | None = None
        max_candidates: int = 50
        snippet_chars: int = 2000
        threshold: float | None = None
        batch_size: int = 32
        device: str = "cpu"
        threads: int | None = None
        max_length: int | None = None

        @field_validator("model_path", mode="before")
        @classmethod
        def _path(cls, value: Any) -> Any:
            """A ``Path`` (from Python) is read as its text."""
            return os.fspath(value) if isinstance(value, os.PathLike) else value

        @field_validator(
            "max_candidates", "snippet_chars", "batch_size", "max_length", mode="before"
        )
        @classmethod
        def _positive(cls, value: Any, info: ValidationInfo) -> Any:
            if isinstance(value, int | float):  # on the value as given: True is no count
                try:
                    positive_ints("cross-encoder", **{str(info.field_name): cast("int", value)})
                except ConfigError as exc:
                    raise ValueError(str(exc)) from None
            return value

    params: CrossEncoderReranker.Params

    def __init__(
        self,
        params: CrossEncoderReranker.Params | None = None,
        /,
        *,
        name: str | None = None,
        model: Any = None,
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        self.model_path: Path | None = None
        if model is None:
            configured = p.model_path or os.environ.get(ENV, "").strip()
            if not configured:
                raise ConfigError(
                    "cross-encoder: no model configured; set `model_path` in the reranker "
                    f"params or {ENV}=/path/to/a/local/cross-encoder (never downloaded)"
                )
            self.model_path = Path(configured).expanduser()
            if not self.model_path.is_dir():
                raise ConfigError(
                    f"cross-encoder: model path {self.model_path} is not a folder; set "
                    f"`model_path` or {ENV} to a local sentence-transformers cross-encoder"
                )
        self._model = model
        self.max_candidates = p.max_candidates
        self.snippet_chars = p.snippet_chars
        self.threshold = p.threshold
        self.batch_size = p.batch_size
        self.device = p.device
        self.threads = p.threads
        self.max_length = p.max_length
        if name is not None:
            self.name = name
        super().__init__()
        self.failures: dict[str, str] = {}
        self.artifacts: dict[str, list[dict[str, Any]]] = {}
        self.unknown_chunks = 0

    @property
    def model(self) -> Any:
        """The loaded cross-encoder (loaded on first use)."""
        if self._model is None:
            assert self.model_path is not None
            try:
                self._model = _load(str(self.model_path.resolve()), self.device, self.max_length)
            except Exception as exc:  # any loader failure is a bad model folder
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise ConfigError(
                    f"cross-encoder: cannot load a model from {self.model_path}: {reason}"
                ) from exc
        return self._model

    def _apply_threads(self) -> None:
        from retrieval_bench.index.runtime import resolve_threads

        threads = resolve_threads(self.threads)
        if threads is not None:
            import torch

            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)

    def text_of(self, chunk: Chunk) -> str:
        """What the model reads for a chunk: its path, then its (truncated) text."""
        return f"{chunk.path}\n{truncate_snippet(chunk.text, self.snippet_chars)}"

    def rerank(self, queries: Mapping[str, str], run: Run, corpus: Corpus, k: int) -> Run:
        """Score each query's top ``max_candidates`` and keep the best ``k``
        (those scoring at least ``threshold`` when one is set)."""
        self.artifacts = {}
        out, todo, self.failures, self.unknown_chunks = gather_candidates(
            queries, run, corpus, self.max_candidates
        )
        pairs = [(query, self.text_of(c)) for _, query, chunks in todo for c in chunks]
        if not pairs:
            return Run(self.name, out)
        model = self.model
        self._apply_threads()
        raw = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        scores = [float(s) for s in raw]
        at = 0
        for qid, _, chunks in todo:
            ranked = sorted(
                ((rank, c, scores[at + rank]) for rank, c in enumerate(chunks)),
                key=lambda t: (-t[2], t[0]),
            )
            at += len(chunks)
            kept = [t for t in ranked if self.threshold is None or t[2] >= self.threshold]
            out[qid] = stable_scores([(c.id, s) for _, c, s in kept[:k]])
            self.artifacts[qid] = [
                {
                    "chunk_id": c.id,
                    "path": c.path,
                    "input_rank": rank + 1,
                    "score": s,
                    "kept": c.id in out[qid],
                }
                for rank, c, s in ranked
            ]
        return Run(self.name, out)
