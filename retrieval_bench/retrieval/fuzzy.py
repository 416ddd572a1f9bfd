"""``fuzzy``: typo-tolerant full-text search over code tokens (docs/stages.md#fuzzy).

Meilisearch sits next to dense and exact search: a slightly fuzzy, very fast
engine that tolerates spelling mistakes. An embedded index is the default and a
Meilisearch server at a configured URL the scaled alternative
(docs/architecture.md#components-and-how-each-starts), so one retriever has two
backends:

``tantivy`` (default, no setup): an in-memory tantivy index. Each chunk is
tokenised with :class:`~retrieval_bench.retrieval.code_tokens.CodeTokenizer`
(the tokens of ``bm25``, plus its path's with ``include_path``) and the joined
tokens go into one ``body`` field with tantivy's ``whitespace`` tokenizer, so
our code-aware tokens are indexed as they are.

``meilisearch`` (a server at ``url``, :mod:`retrieval_bench.retrieval.meili`):
the same tokens are uploaded and Meilisearch's own typo tolerance is set to
the same :class:`TypoBudget`.

**Typo budget** (Meilisearch's ``minWordSizeForTypos``): a query term of fewer
than 5 characters must match exactly, one of 5–8 characters may be one edit
away, one of 9 or more two (insertion, deletion, substitution, or transposition
of adjacent characters). Both thresholds are configurable.

**Scoring in the tantivy backend.** tantivy's ``Query.fuzzy_term_query`` (what
``parse_query(..., fuzzy_fields=...)`` builds) gives every matching document
the *constant* score 1.0 (its automaton scorer has no BM25), so it can find a
typo'd term but cannot rank. We therefore run it on a second, small index of
the corpus *vocabulary* (one document per distinct token): a query term ``t``
is expanded to the indexed terms within its budget (at most ``max_expansions``,
nearest first, then most frequent), and the main index is searched with BM25
term queries for those expansions. Per query term the expansions form a
disjunction-max (a chunk containing ``parse`` and ``pasre`` counts once), and
an expansion ``e`` at edit distance ``d`` is boosted by::

    fuzzy_weight ** d · min(1, idf(ref) / idf(e))

where ``ref`` is ``t`` itself when it is indexed, else the most frequent
expansion at the smallest distance. So an expansion never weighs more than
``fuzzy_weight ** d`` times the word the user typed: a rare misspelling in the
corpus does not outrank the correctly spelled word, nor a rare near-miss the
likely intended word — the spirit of Meilisearch's ``typo`` ranking rule
(fewer typos first). Scores are tantivy's BM25 (k1 = 1.2, b = 0.75) with these
boosts; ties are broken by chunk id, and the top-k cut is widened until it
falls between two different scores, so results are deterministic. A query
with no usable term gets an empty list.

**First character.** Meilisearch counts a typo on a word's first character
as two typos. We go one step further by default and never fuzz the first
character: the vocabulary index keeps one field per first character, so the
Levenshtein automaton walks only the terms starting like ``t``, which makes a
lookup about 3x faster on a 90k-term vocabulary (one-typo queries rarely
miss their first letter). ``fuzzy_first_char=True`` searches all terms.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import tantivy
from pydantic import field_validator

from retrieval_bench.contracts.params import StageParams
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.retrieval.code_tokens import CodeTokenizer, DigitsMode
from retrieval_bench.retrieval.typo_budget import TypoBudget
from retrieval_bench.types import Run

if TYPE_CHECKING:
    from retrieval_bench.retrieval.meili import MeiliBackend

BACKENDS = ("tantivy", "meilisearch")
_WRITER_HEAP = 64_000_000
_VOCAB_LIMIT = 1_000  # most vocabulary terms one fuzzy lookup may return
_FIRST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def osa_distance(a: str, b: str) -> int:
    """Edit distance with adjacent transpositions (optimal string alignment), as
    tantivy's ``fuzzy_term_query(..., transposition_cost_one=True)`` counts it."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _idf(n_docs: int, df: int) -> float:
    """tantivy's (Lucene's) BM25 idf."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _vocab_field(term: str, first_char: bool) -> str:
    """The vocabulary field of a term: one per first character, or one for all."""
    return "v_all" if first_char else f"v_{term[0]}" if term[:1] in _FIRST_CHARS else "v_other"


def _new_index(fields: Iterable[str], tokenizer: str, ord_field: str) -> tantivy.Index:
    builder = tantivy.SchemaBuilder()
    for field in fields:
        builder.add_text_field(field, tokenizer_name=tokenizer, index_option="freq")
    builder.add_unsigned_field(ord_field, fast=True)
    return tantivy.Index(builder.build())


class TantivyBackend:
    """The embedded backend: BM25 over expanded fuzzy terms (see module doc)."""

    def __init__(
        self,
        budget: TypoBudget,
        fuzzy_weight: float = 0.5,
        max_expansions: int = 20,
        fuzzy_first_char: bool = False,
    ) -> None:
        self.budget = budget
        self.fuzzy_weight = fuzzy_weight
        self.max_expansions = max_expansions
        self.fuzzy_first_char = fuzzy_first_char
        self._chunk_ids: list[str] = []
        self._index: tantivy.Index | None = None
        self._searcher: tantivy.Searcher | None = None
        self._vocab: dict[str, int] = {}
        self._terms: list[str] = []
        self._vocab_index: tantivy.Index | None = None
        self._vocab_searcher: tantivy.Searcher | None = None
        self._clauses: dict[str, tantivy.Query | None] = {}

    @staticmethod
    def _fill(index: tantivy.Index, rows: Iterable[tuple[str, str, int]], ord_field: str) -> int:
        """Add ``(field, text, ordinal)`` documents in one commit; returns the count."""
        writer = index.writer(heap_size=_WRITER_HEAP, num_threads=1)  # one segment, stable
        n = 0
        for field, text, ordinal in rows:
            doc = tantivy.Document()
            doc.add_text(field, text)
            doc.add_unsigned(ord_field, ordinal)
            writer.add_document(doc)
            n += 1
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return n

    def build(self, chunk_ids: list[str], docs: Iterable[Sequence[str]]) -> None:
        """Index one token list per chunk id (same order), in memory."""
        vocab: dict[str, int] = {}

        def rows() -> Iterable[tuple[str, str, int]]:
            for ordinal, tokens in enumerate(docs):
                for token in tokens:
                    vocab.setdefault(token, len(vocab))
                yield "body", " ".join(tokens), ordinal

        index = _new_index(["body"], "whitespace", "ord")
        if (n := self._fill(index, rows(), "ord")) != len(chunk_ids):
            raise ValueError(f"{len(chunk_ids)} chunk ids but {n} documents")
        first = self.fuzzy_first_char
        fields = ["v_all"] if first else [f"v_{c}" for c in sorted(_FIRST_CHARS)] + ["v_other"]
        vocab_index = _new_index(fields, "raw", "tid")
        self._fill(vocab_index, ((_vocab_field(t, first), t, i) for t, i in vocab.items()), "tid")
        self._chunk_ids = list(chunk_ids)
        self._index, self._searcher = index, index.searcher()
        self._vocab, self._terms = vocab, list(vocab)
        self._vocab_index, self._vocab_searcher = vocab_index, vocab_index.searcher()
        self._clauses = {}

    def expansions(self, term: str) -> list[tuple[str, int]]:
        """Indexed terms within ``term``'s typo budget, as (term, distance), best first."""
        found: dict[str, int] = {term: 0} if term in self._vocab else {}
        searcher, budget = self._vocab_searcher, self.budget.distance(term)
        if budget and searcher is not None and self._vocab_index is not None:
            field = _vocab_field(term, self.fuzzy_first_char)
            schema = self._vocab_index.schema
            query = tantivy.Query.fuzzy_term_query(schema, field, term, budget, True)
            hits = searcher.search(query, _VOCAB_LIMIT, count=False).hits
            for tid in searcher.fast_field_values("tid", [addr for _, addr in hits]):
                other = self._terms[int(tid or 0)]
                if self.fuzzy_first_char or other[0] == term[0]:  # "v_other" mixes chars
                    found.setdefault(other, 1 if budget == 1 else osa_distance(term, other))
        if not found or self._searcher is None:
            return []
        df = {t: self._searcher.doc_freq("body", t) for t in found}
        ranked = sorted(found.items(), key=lambda td: (td[1], -df[td[0]], td[0]))
        return ranked[: self.max_expansions]

    def clause(self, term: str) -> tantivy.Query | None:
        """The query for one query term (memoised): a dis-max over boosted expansions."""
        if term in self._clauses:
            return self._clauses[term]
        searcher, index = self._searcher, self._index
        expanded = self.expansions(term)
        query: tantivy.Query | None = None
        if expanded and searcher is not None and index is not None:
            n_docs = searcher.num_docs
            ref = term if expanded[0][1] == 0 else expanded[0][0]  # exact, else most frequent
            ref_idf = _idf(n_docs, searcher.doc_freq("body", ref))
            parts = []
            for expansion, distance in expanded:
                idf = _idf(n_docs, searcher.doc_freq("body", expansion))
                boost = self.fuzzy_weight**distance * min(1.0, ref_idf / idf)
                q = tantivy.Query.term_query(index.schema, "body", expansion, index_option="freq")
                parts.append(q if boost == 1.0 else tantivy.Query.boost_query(q, boost))
            query = parts[0] if len(parts) == 1 else tantivy.Query.disjunction_max_query(parts)
        self._clauses[term] = query
        return query

    def search_tokens(self, tokens: Sequence[str], k: int) -> dict[str, float]:
        """Top-``k`` chunk ids with scores for one tokenised query."""
        searcher = self._searcher
        if searcher is None or k <= 0:
            return {}
        subqueries: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for term, count in Counter(tokens).items():  # query repeats count, as in bm25
            clause = self.clause(term)
            if clause is not None:
                q = clause if count == 1 else tantivy.Query.boost_query(clause, float(count))
                subqueries.append((tantivy.Occur.Should, q))
        if not subqueries:
            return {}
        query = tantivy.Query.boolean_query(subqueries)
        limit = k
        while True:  # widen until the k-th score is not tied with the last hit
            hits = searcher.search(query, limit, count=False).hits
            if len(hits) < limit or hits[-1][0] < hits[k - 1][0]:
                break
            limit *= 2
        ords = searcher.fast_field_values("ord", [addr for _, addr in hits])
        ids = self._chunk_ids
        ranked = sorted(
            ((ids[int(o or 0)], float(s)) for (s, _), o in zip(hits, ords, strict=True)),
            key=lambda kv: (-kv[1], kv[0]),
        )
        return dict(ranked[:k])


class FuzzyRetriever(Retriever):
    """Typo-tolerant full-text search over code tokens (see module doc).

    Parameters (:class:`Params`):
        backend: ``"tantivy"`` (embedded) or ``"meilisearch"``; default:
            Meilisearch when ``url`` is given, tantivy otherwise.
        url, api_key: the Meilisearch server and its key.
        index_uid: Meilisearch index name; default ``rbench_<hash>`` of the
            chunk ids and tokenizer, so an unchanged corpus reuses its index.
        typo_budget: a :class:`TypoBudget`, ``{one_typo, two_typos}`` or ``[N, M]``
            (read by :meth:`TypoBudget.of`).
        include_path: index the tokens of each chunk's path too.
        fuzzy_weight: tantivy: score factor per edit of an expansion, in (0, 1].
        max_expansions: tantivy: indexed terms one query term may expand to.
        fuzzy_first_char: tantivy: let typos hit the first character too.
        batch_size, timeout_s: Meilisearch: documents per upload request;
            seconds to wait for one request or task.
        stopwords, min_len, digits: as for ``bm25`` (``CodeTokenizer``).

    Keywords besides: ``tokenizer`` (as for ``bm25``); ``name``, the run name.
    """

    class Params(StageParams):
        backend: str | None = None
        url: str | None = None
        api_key: str | None = None
        index_uid: str | None = None
        typo_budget: TypoBudget | None = None
        include_path: bool = True
        fuzzy_weight: float = 0.5
        max_expansions: int = 20
        fuzzy_first_char: bool = False
        batch_size: int = 1000
        timeout_s: float = 60.0
        stopwords: list[str] | None = None
        min_len: int = 2
        digits: DigitsMode = "keep"

        @field_validator("typo_budget", mode="before")
        @classmethod
        def _budget(cls, value: Any) -> TypoBudget:
            """Any form :meth:`TypoBudget.of` reads; its ConfigError, unchanged."""
            return TypoBudget.of(value)

    params: FuzzyRetriever.Params

    def __init__(
        self,
        params: FuzzyRetriever.Params | None = None,
        /,
        *,
        tokenizer: CodeTokenizer | None = None,
        name: str = "fuzzy",
        **values: Any,
    ) -> None:
        p = self.params = self.Params.of(params, **values)
        url, fuzzy_weight, max_expansions = p.url, p.fuzzy_weight, p.max_expansions
        backend = p.backend or ("meilisearch" if url else "tantivy")
        if backend not in BACKENDS:
            raise ConfigError(f"fuzzy: backend {backend!r} is not one of {', '.join(BACKENDS)}")
        if backend == "meilisearch" and not url:
            raise ConfigError("fuzzy: backend 'meilisearch' needs url (e.g. http://127.0.0.1:7700)")
        if backend == "tantivy" and url:
            raise ConfigError(f"fuzzy: url {url!r} is only used by backend 'meilisearch'")
        if not 0.0 < fuzzy_weight <= 1.0:
            raise ConfigError(f"fuzzy: fuzzy_weight {fuzzy_weight} must be in (0, 1]")
        if max_expansions < 1:
            raise ConfigError(f"fuzzy: max_expansions {max_expansions} must be at least 1")
        super().__init__()
        self.name = name
        self.backend = backend
        self.budget = TypoBudget.of(p.typo_budget)
        self.include_path = p.include_path
        self.tokenizer = tokenizer or CodeTokenizer(p.stopwords, min_len=p.min_len, digits=p.digits)
        self._tantivy: TantivyBackend | None = None
        self._meili: MeiliBackend | None = None
        if url is None:
            self._tantivy = TantivyBackend(
                self.budget, fuzzy_weight, max_expansions, p.fuzzy_first_char
            )
        else:
            from retrieval_bench.retrieval.meili import MeiliBackend  # imports the client

            self._meili = MeiliBackend(
                url,
                api_key=p.api_key,
                index_uid=p.index_uid,
                budget=self.budget,
                include_path=p.include_path,
                batch_size=p.batch_size,
                timeout_s=p.timeout_s,
            )

    def config(self) -> dict[str, Any]:
        """Parameters that determine the results (for result provenance)."""
        budget = {"one_typo": self.budget.one_typo, "two_typos": self.budget.two_typos}
        tokenizer = getattr(self.tokenizer, "name", type(self.tokenizer).__name__)
        cfg: dict[str, Any] = {"backend": self.backend, "typo_budget": budget}
        cfg |= {"include_path": self.include_path, "tokenizer": tokenizer}
        if (tb := self._tantivy) is not None:
            cfg |= {"fuzzy_weight": tb.fuzzy_weight, "max_expansions": tb.max_expansions}
            cfg |= {"fuzzy_first_char": tb.fuzzy_first_char}
        if self._meili is not None:
            cfg |= {"url": self._meili.url, "index_uid": self._meili.index_uid}
        return cfg

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        """Tokenise every chunk (+ its path) and (re)build the backend's index."""
        ids = [c.id for c in corpus.chunks]
        texts = [self.tokenizer(c.text) for c in corpus.chunks]
        paths = [self.tokenizer(c.path) if self.include_path else [] for c in corpus.chunks]
        if self._tantivy is not None:
            self._tantivy.build(ids, (t + p for t, p in zip(texts, paths, strict=True)))
        elif self._meili is not None:
            # Chunk ids hash content + path + span; with the tokenizer they fix the documents.
            digest = hashlib.blake2b(f"{self.config()['tokenizer']}|{self.include_path}".encode())
            for cid in ids:
                digest.update(cid.encode() + b"\0")
            self._meili.build(ids, texts, paths, fingerprint=digest.hexdigest()[:16])

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top-``k`` chunks per query (an empty list for a query with no usable term)."""
        tokens = {qid: self.tokenizer(text) for qid, text in queries.items()}
        if self._meili is not None:
            return Run(self.name, self._meili.search(tokens, k))
        assert self._tantivy is not None
        return Run(self.name, {qid: self._tantivy.search_tokens(t, k) for qid, t in tokens.items()})

    def __repr__(self) -> str:
        return f"FuzzyRetriever(backend={self.backend!r}, budget={self.budget})"
