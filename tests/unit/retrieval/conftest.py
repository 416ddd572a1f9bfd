"""Helpers for retriever tests: a line-window corpus over a real folder."""

from __future__ import annotations

from pathlib import Path

from retrieval_bench.contracts.chunker import chunk_id
from retrieval_bench.corpus import Corpus
from retrieval_bench.files import SourceFile, iter_source_files
from retrieval_bench.types import Chunk


def window_chunks(source: SourceFile, size: int, prefix: str = "") -> list[Chunk]:
    """Cut one file into consecutive windows of ``size`` lines."""
    lines = source.text.splitlines()
    chunks = []
    for start in range(0, len(lines), size):
        text = "\n".join(lines[start : start + size])
        end = min(start + size, len(lines))
        path = prefix + source.path
        chunks.append(
            Chunk(
                chunk_id(path, start + 1, end, text), path, start + 1, end, "", "window", None, text
            )
        )
    return chunks


def window_corpus(root: Path, size: int = 30) -> Corpus:
    """Every file the ignore rules keep under ``root``, in ``size``-line windows."""
    chunks = [c for sf in iter_source_files(root) for c in window_chunks(sf, size)]
    return Corpus(root, chunks)
