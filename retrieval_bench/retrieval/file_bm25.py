"""``bm25-files``: BM25 that ranks *files*, returning ``file:<path>`` ids
(docs/stages.md#from-chunks-to-files).

The gold of code localisation is a file, and every metric is computed per file
(docs/metrics.md); a chunk ranking reaches it through its best chunk. Two ways
to rank files directly, chosen by ``doc``:

* ``doc: file`` — one BM25 document per file: the file's text (read from the
  snapshot's working tree; the file's chunk texts joined in line order when the
  tree is not there) followed by its path's tokens, with the same code-aware
  tokens as ``bm25``. Term statistics (idf, document length) are then those of
  files, as in the BM25 baselines of the code-localisation papers (SWE-bench:
  Jimenez et al., ICLR 2024, §5 "BM25 retrieval" over whole files; SweRank:
  Reddy et al. 2025, Table 1).
* ``doc: chunks`` — ``bm25`` over the corpus chunks, then the scores of each
  file's chunks aggregated (``aggregate``): ``max`` (a file is as good as its
  best chunk: what the harness does for any chunk run), ``sum`` (all matching
  chunks count: favours long files with many hits), or ``mean`` — the top-m
  mean ``(1/m) · Σ_{i ≤ m} s_(i)`` over the file's m best chunk scores (fewer
  count as 0), which is ``max`` at m = 1 and tends to ``sum``/m as m grows.
  These are the CombMAX / CombSUM / a truncated CombSUM of Fox & Shaw 1994
  (TREC-2), applied across the passages of one document as in passage-level
  evidence for document ranking (Callan, SIGIR 1994, "Passage-level evidence in
  document retrieval").

Both take ``bm25``'s ``query: issue`` options (docs/stages.md#reading-an-issue);
``path_boost`` adds ``λ · w_p · max score`` to each file the issue names.

``test_weight`` multiplies the score of every test file (:func:`is_test_path`:
a ``test``/``tests``/``testing`` folder, ``test_*.py``, ``*_test.py``,
``conftest.py``); 1 keeps them as they are, 0 drops them. It is a prior on what
is being looked for, not on relevance: the gold of issue localisation is the
code a fix changes, and benchmarks built from fixes leave tests out of it
(SWE-bench's gold patch excludes the test patch; the devsets' gold is ``src/``),
as localisation systems that skip test files assume (Agentless: Xia et al.
2024). Files are ranked by score, ties by path; at most ``k`` per query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.files import read_source_file
from retrieval_bench.retrieval.bm25 import BM25Retriever
from retrieval_bench.runs.file_ids import file_id
from retrieval_bench.types import Run

DOCS = ("file", "chunks")
AGGREGATES = ("max", "sum", "mean")
_TEST_PATH_RE = re.compile(
    r"(?:^|/)(?:tests?|testing)/|(?:^|/)test_[^/]*$|_tests?\.py$|(?:^|/)conftest\.py$"
)


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test file (module doc)."""
    return bool(_TEST_PATH_RE.search(path))


def file_text(corpus: Corpus, path: str) -> str:
    """The text of ``path``: from the working tree, else its chunks in line order
    (:func:`file_source`)."""
    return file_source(corpus, path)[0]


def file_source(corpus: Corpus, path: str) -> tuple[str, str | None]:
    """``(text, sha256 of the file's bytes or None)`` of ``path``, read once per corpus.

    Read as text mode reads it (UTF-8, invalid bytes replaced, ``\r\n`` and ``\r``
    made ``\n``), through the walker's reader, which reads a read-only file of a
    repository tree once per process (:func:`~retrieval_bench.files.read_source_file`);
    the whole-file stages and the code graph share what was read
    (:meth:`~retrieval_bench.corpus.Corpus.derived`). The sha256 is None when the
    text did not come from the walker's reader (a file it skips, or no working tree)."""
    known: dict[str, tuple[str, str | None]] = corpus.derived(("file-sources",), dict)
    found = known.get(path)
    if found is None:
        found = known[path] = _read_file(corpus, path)
    return found


def _read_file(corpus: Corpus, path: str) -> tuple[str, str | None]:
    source = corpus.sources.get(path) or read_source_file(Path(corpus.root), path)
    if source is not None:
        text = source.text
        text = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
        return text, source.sha256
    try:
        return (Path(corpus.root) / path).read_text(encoding="utf-8", errors="replace"), None
    except OSError:
        return "\n".join(c.text for c in corpus.chunks_of(path)), None


def aggregate_scores(
    pairs: Iterable[tuple[str, float]], how: str = "max", top_m: int = 3
) -> dict[str, float]:
    """Per-file score from ``(path, chunk score)`` pairs: ``max``, ``sum`` or the
    top-``top_m`` mean (module doc)."""
    if how not in AGGREGATES:
        raise ValueError(f"aggregate {how!r} is not one of {', '.join(AGGREGATES)}")
    per_file: dict[str, list[float]] = {}
    for path, score in pairs:
        per_file.setdefault(path, []).append(float(score))
    if how == "max":
        return {p: max(s) for p, s in per_file.items()}
    if how == "sum":
        return {p: sum(sorted(s)) for p, s in per_file.items()}
    return {p: sum(sorted(s, reverse=True)[:top_m]) / top_m for p, s in per_file.items()}


class FileBM25Retriever(Retriever):
    """BM25 ranking files (module doc).

    Parameters (:class:`Params`: ``bm25``'s, and):
        doc: "file" (one document per file) or "chunks" (chunk scores aggregated).
        aggregate: "max" | "sum" | "mean" (top-``top_m`` mean); ``doc: chunks`` only.
        top_m: m of the top-m mean.
        test_weight: multiplier of test files' scores (1 keeps, 0 drops them).

    ``bm25``'s parameters (k1, b, method, include_path, stopwords, min_len, digits,
    query: issue and its weights, ...) mean what they mean there, except that
    ``path_boost`` is added per file. Keyword ``name``: the run name.
    """

    class Params(BM25Retriever.Params):
        doc: str = "file"
        aggregate: str = "max"
        top_m: int = 3
        test_weight: float = 1.0

    params: FileBM25Retriever.Params
    ranks = "files"

    def __init__(
        self,
        params: FileBM25Retriever.Params | None = None,
        /,
        *,
        name: str = "bm25-files",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        doc, aggregate, top_m, test_weight = p.doc, p.aggregate, p.top_m, p.test_weight
        if doc not in DOCS:
            raise ConfigError(f"bm25-files: doc {doc!r} is not one of {', '.join(DOCS)}")
        if aggregate not in AGGREGATES:
            raise ConfigError(
                f"bm25-files: aggregate {aggregate!r} is not one of {', '.join(AGGREGATES)}"
            )
        if top_m < 1:
            raise ConfigError(f"bm25-files: top_m must be >= 1, not {top_m}")
        if not 0 <= test_weight <= 1:
            raise ConfigError(f"bm25-files: test_weight must be in [0, 1], not {test_weight}")
        super().__init__()
        self.name = name
        self.doc = doc
        self.aggregate = aggregate
        self.top_m = top_m
        self.path_boost = p.path_boost
        self.test_weight = test_weight
        inner = {k: getattr(p, k) for k in BM25Retriever.Params.model_fields}
        # the path bonus is added per file (file_scores), not to the inner documents
        self.bm25 = BM25Retriever(BM25Retriever.Params.of(inner, path_boost=0.0), name=name)
        self._paths: list[str] = []
        self._path_of_doc: list[str] = []

    def config(self) -> dict[str, Any]:
        """Parameters that determine the scores (for provenance)."""
        own = {"doc": self.doc, "aggregate": self.aggregate, "top_m": self.top_m}
        extra = {"path_boost": self.path_boost, "test_weight": self.test_weight}
        return {**self.bm25.config(), **own, **extra}

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        """Index one document per file (``doc: file``) or every chunk (``doc: chunks``)."""
        self._paths = corpus.paths
        if self.doc == "file":
            texts = [file_text(corpus, p) for p in self._paths]
            ids = [file_id(p) for p in self._paths]
            self.bm25.index_texts(ids, texts, self._paths, terms_cache=corpus.terms_dir)
        else:
            self.bm25.index(corpus)
            self._path_of_doc = [c.path for c in corpus.chunks]

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` files per query, as ``file:<path>`` ids."""
        return Run(self.name, {qid: self._files_one(text, k) for qid, text in queries.items()})

    def file_scores(self, text: str) -> dict[str, float]:
        """Per-file scores of one query: the file's own (``doc: file``) or its chunks'
        aggregate (``doc: chunks``), path bonus added, test files weighted."""
        scores, candidates = self.bm25.query_scores(text, boost=False)
        paths = self._paths if self.doc == "file" else self._path_of_doc
        pairs = zip(
            map(paths.__getitem__, candidates.tolist()), scores[candidates].tolist(), strict=True
        )
        files = aggregate_scores(
            pairs, self.aggregate if self.doc == "chunks" else "max", self.top_m
        )
        if self.path_boost > 0 and self.bm25.query == "issue":
            named = self.bm25.read_issue(text).paths
            top = max(files.values(), default=0.0) or 1.0
            for path, w in named.items():
                files[path] = files.get(path, 0.0) + self.path_boost * w * top
        if self.test_weight < 1:
            files = {
                p: s * self.test_weight if is_test_path(p) else s
                for p, s in files.items()
                if self.test_weight > 0 or not is_test_path(p)
            }
        return files

    def _files_one(self, text: str, k: int) -> dict[str, float]:
        if k <= 0:
            return {}
        files = self.file_scores(text)
        ranked = sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return {file_id(p): s for p, s in ranked}

    def __repr__(self) -> str:
        return (
            f"FileBM25Retriever(doc={self.doc!r}, aggregate={self.aggregate!r}, "
            f"files={len(self._paths)})"
        )
