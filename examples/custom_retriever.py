"""A custom retriever: rank files by how many question words their path contains.

"Where are auth tokens verified?" finds ``src/shopapi/auth/tokens.py`` without
reading a line of code. It is a weak retriever alone, but a cheap, different
signal for a fusion. It shows the whole stage contract (docs/extending.md):

* subclass :class:`~retrieval_bench.contracts.retriever.Retriever` and implement
  ``index`` and ``search``; call ``super().__init__()``;
* declare the config parameters as a nested ``Params`` (typed, frozen; an
  unknown or mistyped key is a one-line error before any work): ``min_len`` here;
* register the class under a name with ``RETRIEVERS.register``;
* declare capabilities as class flags: this one needs no LLM, no vector index
  and no training, so it keeps the defaults;
* report per-query extras in ``self.artifacts`` (stored for the drill-down).

Use it from a config once this module is imported (or exposed through the
``retrieval_bench.retrievers`` entry-point group of your package)::

    retrievers:
      - {name: bm25}
      - {name: path-match, min_len: 3}
    fusions:
      - {name: rrf, weights: {path-match: 0.5}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.types import Run


@RETRIEVERS.register("path-match")
class PathMatchRetriever(Retriever):
    """Score of a chunk = number of distinct question words in its file's path."""

    name = "path-match"

    class Params(StageParams):
        min_len: int = Field(default=3, ge=1)
        """Shortest path word that counts."""

    def __init__(self, params: PathMatchRetriever.Params | None = None, /, **values: Any) -> None:
        super().__init__()
        self.params = self.Params.of(params, **values)
        self.tokenize = CodeTokenizer(min_len=self.params.min_len)
        self._path_words: dict[str, set[str]] = {}
        self._chunks: dict[str, list[str]] = {}

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        """Tokenise every path (``codebase_index`` is only for vector retrievers)."""
        self._path_words = {path: set(self.tokenize(path)) for path in corpus.paths}
        self._chunks = {path: [c.id for c in corpus.chunks_of(path)] for path in corpus.paths}

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        run = Run(self.name)
        self.artifacts = {}
        for qid, text in queries.items():
            words = set(self.tokenize(text))
            scores: dict[str, float] = {}
            matched: set[str] = set()
            for path, path_words in self._path_words.items():
                hits = words & path_words
                matched |= hits
                for chunk_id in self._chunks[path] if hits else ():
                    scores[chunk_id] = float(len(hits))
            best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            run.scores[qid] = dict(best)
            self.artifacts[qid] = {"matched_words": sorted(matched)}
        return run
