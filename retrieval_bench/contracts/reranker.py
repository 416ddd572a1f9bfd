"""The reranker contract: a candidate run in, a re-scored run out.

Subclass :class:`Reranker` and implement :meth:`~Reranker.rerank` (see
docs/extending.md); :mod:`retrieval_bench.reranking.common` has the shared
candidate gathering and tie-breaking.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_bench.contracts.stage import Ranks, Stage
from retrieval_bench.corpus import Corpus
from retrieval_bench.types import Run


class Reranker(Stage):
    """Base of every reranker. Flag: ``needs_llm`` (the constructor takes ``llm``).

    The harness gives a reranker the run of its ``input:`` stage; rerankers are
    not trained.
    """

    @classmethod
    def ranks_for(cls, params: Mapping[str, Any], inputs: Sequence[Ranks | None]) -> Ranks | None:
        """:attr:`ranks`, else what its input ranks: a reranker re-scores its input's
        candidates (one that ranks files whatever it reads, such as ``code-graph``,
        says so)."""
        if cls.ranks is not None:
            return cls.ranks
        return inputs[0] if len(inputs) == 1 else None

    @abstractmethod
    def rerank(self, queries: Mapping[str, str], run: Run, corpus: Corpus, k: int) -> Run:
        """Re-score each query's candidates in ``run``; return the best ``k``.

        Scores are the reranker's own (e.g. P(Yes) for ``llm-logprob``), so a
        threshold can be swept over them. A query whose model calls fail keeps
        no candidates and is reported in :attr:`failures` (query id → reason).
        """
