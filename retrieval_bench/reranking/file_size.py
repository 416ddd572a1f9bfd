"""``file-size``: the input's files scored by their length, a size prior for the
``ltr`` fusion (docs/stages.md#learning-to-rank).

``fit-ltr`` learns from stored runs, so a property of a candidate file reaches
the learned ranker as the run of a stage. This one re-scores each query's input
files (a chunk run is lifted to files by its best chunk, as ``code-graph`` does)
by ``log(1 + lines)``, the file's last chunked line, so the model can learn how a
change's likelihood grows with a file's size — a prior, not evidence about the
question. The best ``k`` are returned; equal sizes rank by id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.reranker import Reranker
from retrieval_bench.corpus import Corpus
from retrieval_bench.runs.file_ids import file_id, file_path
from retrieval_bench.runs.lifting import file_level_run
from retrieval_bench.types import Run


class FileSizeReranker(Reranker):
    """Input files scored by ``log(1 + lines)`` (module doc).

    Parameters:
        name: the output run's name.
    """

    name = "file-size"
    ranks = "files"

    def __init__(
        self, params: StageParams | None = None, /, *, name: str | None = None, **values: Any
    ) -> None:
        self.params = self.Params.of(params, **values)  # none: only {} is accepted
        if name is not None:
            self.name = name
        super().__init__()

    def config(self) -> dict[str, Any]:
        """No parameters determine the scores."""
        return {}

    def rerank(self, queries: Mapping[str, str], run: Run, corpus: Corpus, k: int) -> Run:
        """Each query's input files by size, the best ``k`` as file ids."""
        files = file_level_run(run, corpus)
        sizes: dict[str, float] = {}  # a file's size is the same for every query
        out: dict[str, dict[str, float]] = {}
        for qid in run.query_ids():
            out[qid] = {}
            for doc in files.scores.get(qid, {}):
                path = file_path(doc)
                if path:
                    if path not in sizes:
                        lines = max((c.end_line for c in corpus.chunks_of(path)), default=0)
                        sizes[path] = math.log1p(lines)
                    out[qid][file_id(path)] = sizes[path]
        return Run(self.name, out).truncated(max(k, 0))  # best first, ties by id
