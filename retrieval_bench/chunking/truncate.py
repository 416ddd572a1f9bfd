"""The ``truncate`` chunker: the first M tokens of each file (docs/stages.md#truncate;
the "naive" chunking rung).

One chunk per file, kind ``file``. A file within the limit is kept whole (the
same text as the ``ast`` chunker's whole-file chunk, so the content-addressed
embedding cache can share it); a longer file is cut after its
M-th token — at a word boundary, never inside a WordPiece word — and
``end_line`` is the line holding the last kept token.
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


class TruncateChunker(Chunker):
    """``CHUNKERS.create("truncate", max_tokens=512)``."""

    class Params(StageParams):
        max_tokens: int = 512
        tokenizer: str = DEFAULT_TOKENIZER

    name = "truncate"
    params: TruncateChunker.Params

    def __init__(self, params: TruncateChunker.Params | None = None, /, **values: Any) -> None:
        p = self.params = self.Params.of(params, **values)
        if p.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        self.max_tokens = int(p.max_tokens)
        self.tokenizer_name = p.tokenizer
        self.tokenizer = get_tokenizer(p.tokenizer)

    def config(self) -> dict[str, object]:
        return {"max_tokens": self.max_tokens, "tokenizer": self.tokenizer_name}

    def chunk_file(self, source: SourceFile) -> list[Chunk]:
        text = source.text
        if not text.strip():
            return []
        doc = LineText(text, self.tokenizer)
        language = language_for_path(source.path)
        if doc.total_tokens <= self.max_tokens:
            last, n = doc.n_lines - 1, doc.total_tokens
        else:
            _, j = token_windows(text, doc.offsets, self.max_tokens)[0]
            end = doc.offsets[j - 1][1]
            text = text[:end]
            exact = is_safe_cut(source.text, doc.offsets, j)
            last, n = doc.row_of(end - 1), j if exact else self.tokenizer.count(text)
        return [make_chunk(source.path, language, "file", None, 0, last, text, n)]
