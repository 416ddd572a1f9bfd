"""The fusion contract: many runs in, one run out; plus helpers for fusions.

Subclass :class:`Fusion` and implement :meth:`~Fusion.fuse` (see
docs/extending.md); :func:`query_ids` and :func:`resolve_weights` do what
most fusions need.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from retrieval_bench.contracts.stage import Ranks, Stage, untrained_default
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.types import Example, Run


class Fusion(Stage):
    """Base of every fusion rung.

    Flags: ``needs_llm`` (the constructor takes ``llm``) and ``trainable``
    (:meth:`fit` is called before :meth:`fuse`; the harness then also runs
    every retriever over the dataset's ``train_split`` to give it training
    runs).
    """

    trainable: ClassVar[bool] = False
    needs_queries: ClassVar[bool] = False
    """The harness sets :attr:`queries` (question id → text) before :meth:`fuse`
    (the ``ltr`` fusion's question features)."""
    queries: Mapping[str, str]
    needs_corpus: ClassVar[bool] = False
    """The harness sets :attr:`corpus` (the dataset's chunked snapshot) before
    :meth:`fuse` (the ``function-ranker`` fusion reads the candidate files' text)."""
    corpus: Corpus
    lifts_inputs: ClassVar[bool] = True
    """When one input ranks files, the harness lifts every input to files first
    (docs/stages.md#external); a fusion that reads chunk order itself says False."""

    @classmethod
    def ranks_for(cls, params: Mapping[str, Any], inputs: Sequence[Ranks | None]) -> Ranks | None:
        """:attr:`ranks`, else files when the harness lifts the inputs (one of them
        ranks files, or ``level: file``) and chunks when every input ranks chunks; a
        fusion that reads chunk order itself (``lifts_inputs`` False) says what it returns."""
        if cls.ranks is not None or not cls.lifts_inputs:
            return cls.ranks
        if params.get("level") == "file" or "files" in inputs:
            return "files"
        return "chunks" if inputs and all(r == "chunks" for r in inputs) else None

    @abstractmethod
    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Combine the retrievers' runs (each named by its stage label) into one run
        of at most ``k`` chunks per query."""

    @untrained_default
    def fit(self, runs: Sequence[Run], examples: Sequence[Example], corpus: Corpus) -> object:
        """Learn from the retrievers' runs over the labelled ``examples`` of the
        train split (a ``trainable`` fusion implements this)."""
        raise NotImplementedError(f"{type(self).__name__} is not trainable")


def query_ids(runs: Sequence[Run]) -> list[str]:
    """Union of the runs' query ids, in order of first appearance."""
    return list(dict.fromkeys(q for run in runs for q in run.query_ids()))


def resolve_weights(
    runs: Sequence[Run], weights: Mapping[str, float] | None, fusion: str
) -> list[float]:
    """One weight per run, looked up by run name; unnamed runs weigh 1.0.

    A weight naming no run is an error (most often a typo in the config).
    """
    if not weights:
        return [1.0] * len(runs)
    names = {run.name for run in runs}
    unknown = sorted(set(weights) - names)
    if unknown:
        raise ConfigError(
            f"{fusion}: weights name unknown runs {unknown}; runs are {sorted(names)}"
        )
    negative = sorted(n for n, w in weights.items() if w < 0)
    if negative:
        raise ConfigError(f"{fusion}: weights must be >= 0; negative for {negative}")
    return [float(weights.get(run.name, 1.0)) for run in runs]
