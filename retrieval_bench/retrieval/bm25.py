"""``bm25``: lexical BM25 over code-aware tokens, backed by ``bm25s`` (docs/stages.md#bm25).

Each chunk is tokenised with :class:`~retrieval_bench.retrieval.code_tokens.CodeTokenizer`
(camelCase/snake_case split, whole identifiers kept), optionally followed by the
tokens of its file path (``include_path=True``: a question naming ``payment``
finds ``services/payment.py``). We build our own vocabulary and hand ``bm25s``
token *ids* (its ``(ids, vocab)`` input form), so the exact same tokens feed
both indexing and querying, and a query token the corpus never saw is simply
dropped. A query left with no known token gets an empty result list.

Scoring (``bm25s`` "eager" BM25: every (document, term) score is precomputed
into a sparse matrix; a query sums the rows of its tokens). For a query ``q``
and document ``d`` of length ``|d|`` in a corpus of ``N`` documents with
average length ``avgdl``, term frequency ``tf`` and document frequency ``n``::

    score(q, d) = Σ_{t ∈ q} idf(t) · tfc(tf(t, d), |d|)       (query repeats count)

    L = 1 - b + b·|d|/avgdl
    method      idf(t)                                tfc(tf)
    lucene      log(1 + (N - n + 0.5) / (n + 0.5))     tf / (tf + k1·L)
    robertson   log((N - n + 0.5) / (n + 0.5)), ≥ 0    tf / (tf + k1·L)
    atire       log(N / n)                             tf·(k1+1) / (tf + k1·L)
    bm25l       log((N + 1) / (n + 0.5))               (k1+1)(c+δ) / (k1+c+δ),  c = tf / L
    bm25+       log((N + 1) / n)                       tf·(k1+1) / (tf + k1·L) + δ

``idf_method`` may pick the idf column independently of the tfc column.

**IDF versus rank_bm25.** ``rank_bm25.BM25Okapi`` uses the Robertson–Spärck Jones
idf ``log((N - n + 0.5) / (n + 0.5))``, which is *negative* for terms in more
than half of the documents; it replaces each negative idf by ``ε · mean(idf)``
(ε = 0.25). ``bm25s`` "lucene" (our default, as in Lucene/Elasticsearch) uses
``log(1 + (N - n + 0.5) / (n + 0.5))``, always positive and smooth; "robertson"
clamps the inner ratio at 1, giving idf 0 instead of ε·mean. So rankings and
scores differ. The exact counterpart of ``BM25Okapi`` is
``method="atire", idf_method="robertson"`` (Okapi's tfc carries the ``(k1+1)``
factor that bm25s' "robertson"/"lucene" tfc omits), and only while no query term
has ``n > N/2``; ``bm25+`` with the same δ equals ``rank_bm25.BM25Plus``;
``rank_bm25.BM25L`` multiplies its term score by an extra ``tf`` (a known bug)
so it never matches. ``tests/unit/retrieval/test_bm25_reference.py`` checks all
of this on real code.

Candidates are the documents containing at least one query token; ties are
broken by ascending chunk id, as everywhere in the toolkit.

``query: issue`` (docs/stages.md#reading-an-issue) rebuilds the query from what
:mod:`~retrieval_bench.retrieval.issue_query` reads in it: a weighted bag (title,
body cut to ``body_tokens``, extracted symbols × ``symbol_weight``) scored as
``Σ_t w_t · score_t(d)``, the linear BM25 sum with real-valued query-term
weights; and, with ``path_boost`` λ > 0, the best document of each snapshot file
the issue names (weight w_p) gains ``λ · w_p · max_d score(d)``, so a file named
in a traceback ranks near the top whatever its wording.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.retrieval.bm25_index import build_model
from retrieval_bench.retrieval.code_tokens import CodeTokenizer, DigitsMode
from retrieval_bench.retrieval.issue_query import IssueQuery, IssueReader, issue_bag
from retrieval_bench.retrieval.token_memo import Documents, memo_for
from retrieval_bench.types import Chunk, Run

# bm25s sets its own logger to DEBUG at import; keep its build chatter out of our output.
logging.getLogger("bm25s").setLevel(logging.WARNING)

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
QUERIES = ("raw", "issue")


class BM25Retriever(Retriever):
    """BM25 over code tokens of each chunk (+ its path), via ``bm25s``.

    Parameters (:class:`Params`):
        k1, b: the usual BM25 saturation and length-normalisation constants.
        method: ``bm25s`` variant, one of :data:`METHODS` (default "lucene").
        idf_method: idf variant if different from ``method`` (see module doc).
        delta: δ of bm25l/bm25+ (ignored by the others).
        include_path: append the tokens of the chunk's path to its text tokens.
        stopwords, min_len, digits: tokenizer settings (see ``CodeTokenizer``);
            ignored when ``tokenizer`` is given.
        dtype: score precision of the index ("float32" default, "float64").
        query: "raw" (the question's tokens) or "issue" (the rebuilt issue query;
            module doc); the weights below apply to "issue" only.
        title_weight, body_weight, body_tokens, symbol_weight, symbol_parts: the bag of
            :func:`~retrieval_bench.retrieval.issue_query.issue_bag`.
        path_boost: λ of the named-file bonus (0 = off).

    Keywords besides: ``tokenizer``, a ready :class:`CodeTokenizer` (or any
    ``str -> list[str]``); ``name``, the run name (to tell several configured bm25
    runs apart).
    """

    class Params(StageParams):
        k1: float = 1.5
        b: float = 0.75
        method: str = "lucene"
        idf_method: str | None = None
        delta: float = 0.5
        include_path: bool = True
        stopwords: list[str] | None = None
        min_len: int = 2
        digits: DigitsMode = "keep"
        dtype: str = "float32"
        query: str = "raw"
        title_weight: float = 1.0
        body_weight: float = 1.0
        body_tokens: int | None = None
        symbol_weight: float = 2.0
        symbol_parts: bool = False
        path_boost: float = 0.0

    params: BM25Retriever.Params

    def __init__(
        self,
        params: BM25Retriever.Params | None = None,
        /,
        *,
        tokenizer: CodeTokenizer | None = None,
        name: str = "bm25",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        method, idf_method, dtype, query = p.method, p.idf_method, p.dtype, p.query
        for label, value in (("method", method), ("idf_method", idf_method)):
            if value is not None and value not in METHODS:
                raise ConfigError(f"bm25: {label} {value!r} is not one of {', '.join(METHODS)}")
        if dtype not in ("float32", "float64"):
            raise ConfigError(f"bm25: dtype {dtype!r} must be 'float32' or 'float64'")
        if query not in QUERIES:
            raise ConfigError(f"bm25: query {query!r} is not one of {', '.join(QUERIES)}")
        weights = (p.title_weight, p.body_weight, p.symbol_weight, p.path_boost, p.body_tokens or 0)
        if min(weights) < 0:
            raise ConfigError("bm25: query weights, body_tokens and path_boost must be >= 0")
        super().__init__()
        self.name = name
        self.k1 = p.k1
        self.b = p.b
        self.method = method
        self.idf_method = idf_method or method
        self.delta = p.delta
        self.include_path = p.include_path
        self.dtype = dtype
        self.tokenizer = tokenizer or CodeTokenizer(p.stopwords, min_len=p.min_len, digits=p.digits)
        self.query = query
        self.issue_options: dict[str, Any] = {
            "title_weight": p.title_weight,
            "body_weight": p.body_weight,
            "body_tokens": p.body_tokens,
            "symbol_weight": p.symbol_weight,
            "symbol_parts": p.symbol_parts,
        }
        self.path_boost = p.path_boost
        self._chunk_ids: list[str] = []
        self._vocab: dict[str, int] = {}
        self._model: bm25s.BM25 | None = None
        self._docs_of_path: dict[str, list[int]] = {}
        self._reader: IssueReader | None = None

    def config(self) -> dict[str, Any]:
        """Parameters that determine the scores (for result provenance)."""
        return {
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "idf_method": self.idf_method,
            "delta": self.delta,
            "include_path": self.include_path,
            "dtype": self.dtype,
            "tokenizer": getattr(self.tokenizer, "name", type(self.tokenizer).__name__),
            "bm25s": bm25s.__version__,
            "query": self.query,
            **(
                {**self.issue_options, "path_boost": self.path_boost}
                if self.query == "issue"
                else {}
            ),
        }

    # -- tokenisation (public so reference tests feed rank_bm25 the same tokens)

    def doc_tokens(self, chunk: Chunk) -> list[str]:
        """The tokens a chunk is indexed under."""
        tokens = self.tokenizer(chunk.text)
        if self.include_path:
            tokens.extend(self.tokenizer(chunk.path))
        return tokens

    def query_tokens(self, text: str) -> list[str]:
        """The tokens of a query that occur in the indexed vocabulary."""
        return [t for t in self.tokenizer(text) if t in self._vocab]

    # -- Retriever contract

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        """Tokenise every chunk and build the ``bm25s`` index (in memory); each distinct
        text is tokenised once per process (:mod:`~retrieval_bench.retrieval.token_memo`),
        and stages that index the same corpus with the same analyser and parameters
        share one index (:meth:`~retrieval_bench.corpus.Corpus.derived`): only their
        queries differ."""
        key = self.index_key()
        if key is None:
            self._index_chunks(corpus)
            return
        built = corpus.derived(key, lambda: self._index_chunks(corpus))
        self._chunk_ids, self._vocab, self._model, self._docs_of_path = built
        self._reader = IssueReader(self._docs_of_path) if self.query == "issue" else None

    def index_key(self) -> tuple[Any, ...] | None:
        """What the chunk index depends on besides the corpus, or None when the
        tokenizer cannot be keyed (a tokenizer object of the caller's)."""
        if memo_for(self.tokenizer) is None:
            return None
        tok = self.tokenizer
        return (
            "bm25-chunks",
            (tok.stopwords, tok.min_len, tok.keep_identifier, tok.digits),
            self.k1, self.b, self.method, self.idf_method, self.delta,
            self.include_path, self.dtype,
        )  # fmt: skip

    def _index_chunks(
        self, corpus: Corpus
    ) -> tuple[list[str], dict[str, int], bm25s.BM25 | None, dict[str, list[int]]]:
        chunks = corpus.chunks
        self.index_texts(
            [c.id for c in chunks],
            [c.text for c in chunks],
            [c.path for c in chunks],
            terms_cache=corpus.terms_dir,
        )
        return self._chunk_ids, self._vocab, self._model, self._docs_of_path

    def index_texts(
        self,
        doc_ids: list[str],
        texts: list[str],
        paths: list[str],
        terms_cache: str | Path | None = None,
    ) -> None:
        """Index documents given as text and file path (a chunk, or a whole file for
        ``bm25-files``); the path's tokens are appended with ``include_path``. The
        term counts of each file's texts are read from the term-count cache in
        ``terms_cache`` when an earlier index met them
        (:mod:`~retrieval_bench.retrieval.term_store`)."""
        memo = memo_for(self.tokenizer, terms_cache)
        if memo is None:
            tok = self.tokenizer
            docs = [
                tok(t) + (tok(p) if self.include_path else [])
                for t, p in zip(texts, paths, strict=True)
            ]
            self.index_tokens(doc_ids, docs)
        else:
            self._build(list(doc_ids), memo.documents(texts, paths, self.include_path))
        self._docs_of_path = {}
        for i, path in enumerate(paths):
            self._docs_of_path.setdefault(path, []).append(i)
        self._reader = IssueReader(self._docs_of_path) if self.query == "issue" else None

    def index_tokens(self, chunk_ids: list[str], docs: Iterable[list[str]]) -> None:
        """Build the index from pre-tokenised documents (one per id, same order)."""
        token_lists = docs if isinstance(docs, list) else list(docs)
        # Ids in order of first occurrence; dict.fromkeys/map keep the loops in C.
        vocab = {t: i for i, t in enumerate(dict.fromkeys(chain.from_iterable(token_lists)))}
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
        flat = np.fromiter(
            map(vocab.__getitem__, chain.from_iterable(token_lists)),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
        self._build(list(chunk_ids), Documents.of_sequences(vocab, flat, lengths))

    def _build(self, chunk_ids: list[str], documents: Documents) -> None:
        if len(documents.lengths) != len(chunk_ids):
            raise ValueError(f"{len(chunk_ids)} chunk ids but {len(documents.lengths)} documents")
        self._chunk_ids = chunk_ids
        self._vocab = vocab = documents.vocab
        self._model = None
        self._docs_of_path, self._reader = {}, None
        if not vocab:  # empty corpus, or no chunk has a single token
            return
        model = bm25s.BM25(
            k1=self.k1,
            b=self.b,
            delta=self.delta,
            method=self.method,
            idf_method=self.idf_method,
            dtype=self.dtype,
        )
        self._model = build_model(model, documents)

    def scores(self, text: str) -> np.ndarray:
        """Scores of every indexed chunk for one query (zeros if no token is known)."""
        if self._model is None:
            return np.zeros(len(self._chunk_ids))
        ids = [self._vocab[t] for t in self.tokenizer(text) if t in self._vocab]
        if not ids:
            return np.zeros(len(self._chunk_ids))
        return np.asarray(self._model.get_scores_from_ids(ids))

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` chunks per query among those containing a query token."""
        return Run(self.name, {qid: self._search_one(text, k) for qid, text in queries.items()})

    def read_issue(self, text: str) -> IssueQuery:
        """``text`` read as an issue against the indexed snapshot's files."""
        return (self._reader or IssueReader(self._docs_of_path)).read(text)

    def query_scores(self, text: str, boost: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(scores of every document, indices of the candidates)`` for one query: the
        raw or issue query (module doc); ``boost=False`` leaves out the path bonus."""
        model = self._model
        if model is None:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        if self.query == "raw":
            ids = [self._vocab[t] for t in self.tokenizer(text) if t in self._vocab]
            if not ids:
                return np.zeros(0), np.zeros(0, dtype=np.int64)
            scores = np.asarray(model.get_scores_from_ids(ids))
            return scores, self._postings(set(ids))
        issue = self.read_issue(text)
        bag = issue_bag(issue, self.tokenizer, **self.issue_options)
        weights = {self._vocab[t]: w for t, w in bag.items() if t in self._vocab and w > 0}
        scores = self.weighted_scores(weights)
        candidates = self._postings(set(weights))
        if boost and self.path_boost > 0 and issue.paths:
            top = float(scores[candidates].max()) if len(candidates) else 0.0
            extra = []
            for path, w in issue.paths.items():
                docs = self._docs_of_path.get(path)
                if docs:
                    best = max(docs, key=lambda i: (scores[i], -i))
                    scores[best] += self.path_boost * w * (top or 1.0)
                    extra.append(best)
            candidates = np.union1d(candidates, np.asarray(extra, dtype=np.int64))
        return scores, candidates

    def weighted_scores(self, weights: Mapping[int, float]) -> np.ndarray:
        """``Σ_t w_t · score_t(d)`` for every document (token ids → weights), in float64."""
        assert self._model is not None
        data, indices, indptr = (self._model.scores[k] for k in ("data", "indices", "indptr"))
        scores = np.zeros(len(self._chunk_ids), dtype=np.float64)
        for t, w in weights.items():
            a, b = indptr[t], indptr[t + 1]
            scores[indices[a:b]] += w * data[a:b].astype(np.float64)
        nonoccurrence = self._model.nonoccurrence_array
        if nonoccurrence is not None:  # bm25l/bm25+: every document gets the absent-term score
            scores += sum(w * float(nonoccurrence[t]) for t, w in weights.items())
        return scores

    def _postings(self, token_ids: Iterable[int]) -> np.ndarray:
        assert self._model is not None
        indptr, indices = self._model.scores["indptr"], self._model.scores["indices"]
        postings = [indices[indptr[t] : indptr[t + 1]] for t in token_ids]
        if not postings:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(postings)).astype(np.int64)

    def _search_one(self, text: str, k: int) -> dict[str, float]:
        if self._model is None or k <= 0:
            return {}
        scores, candidates = self.query_scores(text)
        if not len(candidates):
            return {}
        cand_scores = scores[candidates]
        if len(candidates) > k:
            # Keep everything tied with the k-th best, then break ties by chunk id.
            kth = np.partition(cand_scores, len(cand_scores) - k)[len(cand_scores) - k]
            keep = cand_scores >= kth
            candidates, cand_scores = candidates[keep], cand_scores[keep]
        chunk_ids = self._chunk_ids
        ranked = sorted(
            ((chunk_ids[int(i)], float(s)) for i, s in zip(candidates, cand_scores, strict=True)),
            key=lambda kv: (-kv[1], kv[0]),
        )
        return dict(ranked[:k])

    def __repr__(self) -> str:
        return (
            f"BM25Retriever(method={self.method!r}, k1={self.k1}, b={self.b}, "
            f"docs={len(self._chunk_ids)})"
        )
