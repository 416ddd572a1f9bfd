"""The reranker protocol (SPEC §1.5): a candidate run in, a re-scored run out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from retrieval_bench.corpus import Corpus
from retrieval_bench.types import Run


class Reranker(Protocol):
    name: str

    def rerank(self, queries: Mapping[str, str], run: Run, corpus: Corpus, k: int) -> Run:
        """Re-score each query's candidates in ``run``; return the best ``k``.

        Scores are the reranker's own (e.g. P(Yes) for ``llm-logprob``), so a
        threshold can be swept over them. A query whose model calls fail keeps
        no candidates and is reported in ``self.failures`` (query id → reason).
        """
        ...
