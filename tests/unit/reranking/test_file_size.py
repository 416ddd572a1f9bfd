"""``file-size``: the input's files scored log(1 + lines), a size prior for ``ltr``
(docs/stages.md#learning-to-rank)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.reranking.file_size import FileSizeReranker
from retrieval_bench.types import Run
from tests.unit.retrieval.test_code_graph_index import write_repo

FILES = {
    "a.py": "x = 1\n",
    "b.py": "".join(f"v{i} = {i}\n" for i in range(7)),
    "c.py": "y = 2\nz = 3\n",
}


def test_files_rank_by_their_length_and_chunk_runs_are_lifted(tmp_path: Path) -> None:
    corpus = write_repo(tmp_path, FILES)
    chunk_b = next(c.id for c in corpus.chunks_of("b.py"))
    run = Run("bm25", {"q": {"file:a.py": 3.0, chunk_b: 2.0, "file:c.py": 1.0}, "empty": {}})
    got = FileSizeReranker(name="size").rerank({"q": "", "empty": ""}, run, corpus, 2)
    assert got.name == "size"
    # b has 7 lines, c 2, a 1; k = 2 keeps the two longest; the input order does not count
    assert got.scores["q"] == {"file:b.py": math.log1p(7), "file:c.py": math.log1p(2)}
    assert got.scores["empty"] == {}


def test_registered_with_no_parameters() -> None:
    made = registry.create("rerankers", "file-size")
    assert isinstance(made, FileSizeReranker) and made.config() == {}
    with pytest.raises(
        ConfigError, match="unknown parameter 'top_n'; valid parameters: \\(none\\)"
    ):
        FileSizeReranker(top_n=3)
