"""Test doubles for the index stage: a counting bag-of-words embedder and a line chunker.

They stand in for all-MiniLM-L6-v2 and the tree-sitter chunkers so unit tests stay
fast, offline and deterministic (docs/architecture.md#testing-conventions); the real ones are
exercised in tests/integration/test_index_lancedb.py.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from retrieval_bench.contracts.chunker import chunk_id
from retrieval_bench.files import SourceFile
from retrieval_bench.index.embed import normalize_rows
from retrieval_bench.types import Chunk

_WORD = re.compile(r"[A-Za-z]+")


class CountingEmbedder:
    """Hashes each lower-cased word into one of ``dim`` buckets; records every text embedded.

    Texts sharing words get similar vectors, so ranking tests have an expected order.
    """

    def __init__(self, dim: int = 64, name: str = "fake-bow"):
        self.name = name
        self._dim = dim
        self.calls = 0
        self.seen: list[str] = []

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.seen.extend(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % self._dim
                out[row, bucket] += 1.0
        return normalize_rows(out)


class LineChunker:
    """Fixed windows of ``lines`` lines: the smallest chunker the index needs."""

    name = "lines"
    tokenizer_name = "whitespace"

    def __init__(self, lines: int = 4):
        self.lines = lines

    def config(self) -> dict[str, object]:
        return {"lines": self.lines}

    def chunk_file(self, source: SourceFile) -> list[Chunk]:
        lines = source.text.splitlines()
        out = []
        for start in range(0, len(lines), self.lines):
            part = lines[start : start + self.lines]
            text = "\n".join(part)
            if not text.strip():
                continue
            s, e = start + 1, start + len(part)
            out.append(
                Chunk(
                    id=chunk_id(source.path, s, e, text),
                    path=source.path,
                    start_line=s,
                    end_line=e,
                    language="python" if source.path.endswith(".py") else "text",
                    kind="window",
                    symbol=None if start else source.path.rsplit("/", 1)[-1],
                    text=text,
                    n_tokens=len(text.split()),
                )
            )
        return out
