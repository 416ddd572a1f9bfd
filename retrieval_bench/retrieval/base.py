"""The retriever protocol (SPEC §1.3): each returns a ranked, scored Run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from retrieval_bench.corpus import Corpus
from retrieval_bench.types import Run


class Retriever(Protocol):
    name: str

    def index(self, corpus: Corpus) -> None:
        """Prepare to search ``corpus`` (may reuse a persisted index)."""
        ...

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` chunk ids with scores for each ``{query_id: text}``."""
        ...
