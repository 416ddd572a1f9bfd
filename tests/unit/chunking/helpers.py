"""Shared helpers for the chunking tests: run a chunker on inline text and
check the invariants every chunk must satisfy (docs/stages.md#chunkers)."""

from __future__ import annotations

from retrieval_bench.chunking.text import split_lines
from retrieval_bench.chunking.tokenizer import get_tokenizer
from retrieval_bench.contracts import registry
from retrieval_bench.contracts.chunker import chunk_id
from retrieval_bench.files import SourceFile
from retrieval_bench.types import CHUNK_KINDS, Chunk


def source(path: str, text: str) -> SourceFile:
    return SourceFile(path, text, "0" * 64)


def ast_chunks(path: str, text: str, budget: int = 512, **params: object) -> list[Chunk]:
    chunker = registry.create("chunkers", "ast", budget=budget, **params)
    return chunker.chunk_file(source(path, text))


def spans(chunks: list[Chunk]) -> list[tuple[str, str | None, int, int]]:
    """(kind, symbol, start, end) in line order, for exact structure checks."""
    rows = [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]
    return sorted(rows, key=lambda r: (r[2], -r[3], r[0]))


def uncovered_lines(text: str, chunks: list[Chunk]) -> list[int]:
    """1-based non-blank lines that no chunk spans."""
    covered: set[int] = set()
    for c in chunks:
        covered.update(range(c.start_line, c.end_line + 1))
    lines = split_lines(text)
    return [i + 1 for i, line in enumerate(lines) if line.strip() and i + 1 not in covered]


def check_invariants(
    text: str, chunks: list[Chunk], budget: int | None, tokenizer: str | None = None
) -> None:
    """Coverage, exact token counts, budget, ids and spans of every chunk."""
    tok = get_tokenizer(tokenizer) if tokenizer else get_tokenizer()
    n_lines = len(split_lines(text))
    assert uncovered_lines(text, chunks) == []
    for c in chunks:
        assert c.kind in CHUNK_KINDS
        assert 1 <= c.start_line <= c.end_line <= n_lines, c
        assert c.text.strip(), c
        assert c.n_tokens == tok.count(c.text), c
        if budget is not None:
            assert c.n_tokens <= budget, c
        assert c.id == chunk_id(c.path, c.start_line, c.end_line, c.text)
