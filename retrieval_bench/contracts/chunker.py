"""The chunker contract and the shared chunk-id rule (see docs/architecture.md)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path

from retrieval_bench.contracts.params import Configurable
from retrieval_bench.files import SourceFile, WalkReport, iter_source_files
from retrieval_bench.types import Chunk


class Chunker(Configurable, ABC):
    """Turns one source file into chunks. Must never raise on bad source text.

    ``name`` and :meth:`config` are part of the LanceDB index key; chunk
    sizes are counted with the tokenizer named ``tokenizer_name`` (a name
    :func:`retrieval_bench.chunking.tokenizer.get_tokenizer` knows).
    """

    name: str
    tokenizer_name: str

    @abstractmethod
    def chunk_file(self, source: SourceFile) -> list[Chunk]:
        """The chunks of one file (built with :func:`retrieval_bench.chunking.text.make_chunk`)."""

    @abstractmethod
    def config(self) -> dict[str, object]:
        """Parameters that determine the output (part of the index key)."""


def chunk_id(path: str, start_line: int, end_line: int, text: str) -> str:
    """Stable id: content hash + path + span (docs/architecture.md#core-types)."""
    h = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]
    return f"{path}:{start_line}-{end_line}:{h}"


def chunk_tree(
    root: Path, chunker: Chunker, report: WalkReport | None = None, **walk_options: object
) -> Iterator[Chunk]:
    """Chunk every text file of a working tree that the ignore rules keep."""
    for source in iter_source_files(root, report=report, **walk_options):  # type: ignore[arg-type]
        yield from chunker.chunk_file(source)
