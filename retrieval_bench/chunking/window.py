"""The ``window`` chunker: fixed-size windows, in tokens or in lines, with
optional overlap (docs/stages.md#window; the "basic" chunking rung: split files into
equal-length pieces).

Token windows (default 256 tokens, overlap 0) may start or end mid-line; a
chunk's ``start_line``/``end_line`` are the lines its text touches. A window
never splits a WordPiece word, so it may hold slightly fewer tokens than
``size``. A window starting at the first token of a line keeps the line's
indentation. Line windows (``unit="lines"``, default 50 lines) hold whole
lines; windows of only blank lines are skipped. All chunks have kind
``window``.
"""

from __future__ import annotations

from typing import Any

from retrieval_bench.chunking.languages import language_for_path
from retrieval_bench.chunking.text import LineText, make_chunk
from retrieval_bench.chunking.tokenizer import (
    DEFAULT_TOKENIZER,
    get_tokenizer,
    is_safe_cut,
    token_windows,
)
from retrieval_bench.contracts.chunker import Chunker
from retrieval_bench.contracts.params import StageParams
from retrieval_bench.files import SourceFile
from retrieval_bench.types import Chunk

DEFAULT_SIZE = {"tokens": 256, "lines": 50}


class WindowChunker(Chunker):
    """``CHUNKERS.create("window", size=256, overlap=32, unit="tokens")``."""

    class Params(StageParams):
        size: int | None = None
        """Window size in ``unit``s; None: 256 tokens or 50 lines."""
        overlap: int = 0
        unit: str = "tokens"
        tokenizer: str = DEFAULT_TOKENIZER

    name = "window"
    params: WindowChunker.Params

    def __init__(self, params: WindowChunker.Params | None = None, /, **values: Any) -> None:
        p = self.params = self.Params.of(params, **values)
        if p.unit not in DEFAULT_SIZE:
            raise ValueError(f"unit must be one of {sorted(DEFAULT_SIZE)}, not {p.unit!r}")
        self.unit = p.unit
        self.size = int(p.size if p.size is not None else DEFAULT_SIZE[p.unit])
        self.overlap = int(p.overlap)
        if self.size < 1:
            raise ValueError("size must be at least 1")
        if not 0 <= self.overlap < self.size:
            raise ValueError("overlap must be >= 0 and smaller than size")
        self.tokenizer_name = p.tokenizer
        self.tokenizer = get_tokenizer(p.tokenizer)

    def config(self) -> dict[str, object]:
        return {
            "size": self.size,
            "overlap": self.overlap,
            "unit": self.unit,
            "tokenizer": self.tokenizer_name,
        }

    def chunk_file(self, source: SourceFile) -> list[Chunk]:
        if not source.text.strip():
            return []
        doc = LineText(source.text, self.tokenizer)
        language = language_for_path(source.path)
        if self.unit == "lines":
            return self._line_windows(source.path, language, doc)
        return self._token_windows(source.path, language, doc)

    def _token_windows(self, path: str, language: str, doc: LineText) -> list[Chunk]:
        text, offsets = doc.text, doc.offsets
        chunks = []
        for i, j in token_windows(text, offsets, self.size, self.overlap):
            start, end = offsets[i][0], offsets[j - 1][1]
            row = doc.row_of(start)
            line_start = int(doc.line_starts[row])
            if not text[line_start:start].strip():
                start = line_start  # keep the indentation of a line started whole
            chunk_text = text[start:end]
            exact = is_safe_cut(text, offsets, i) and is_safe_cut(text, offsets, j)
            n = j - i if exact else self.tokenizer.count(chunk_text)
            last = doc.row_of(end - 1)
            chunks.append(make_chunk(path, language, "window", None, row, last, chunk_text, n))
        return chunks

    def _line_windows(self, path: str, language: str, doc: LineText) -> list[Chunk]:
        step = self.size - self.overlap
        spans = []
        first = 0
        while first < doc.n_lines:
            last = min(first + self.size, doc.n_lines) - 1
            if any(not doc.is_blank(r) for r in range(first, last + 1)):
                spans.append((first, last))
            if last == doc.n_lines - 1:
                break
            first += step
        return [
            make_chunk(path, language, "window", None, a, b, doc.join(a, b), doc.tokens(a, b))
            for a, b in spans
        ]
