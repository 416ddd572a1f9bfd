"""The fusion protocol (SPEC §1.4): many runs in, one run out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from retrieval_bench.types import Run


class Fusion(Protocol):
    name: str

    def fuse(self, runs: Sequence[Run], k: int) -> Run:
        """Combine per-retriever runs into one run of at most ``k`` per query."""
        ...
