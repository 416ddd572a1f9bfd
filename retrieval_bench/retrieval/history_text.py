"""BM25 similarity of a question to the commit messages of a snapshot's history
(docs/stages.md#history).

A commit's *message* is its subject and body as the git-history miner cleans them
(:func:`~retrieval_bench.datasets.gitmine.clean_message`: a GitHub merge's title taken
from its body, trailers such as ``Signed-off-by:`` removed), tokenised with the
project's :class:`~retrieval_bench.retrieval.code_tokens.CodeTokenizer`. The score is
``bm25``'s default (``lucene``) BM25 (docs/stages.md#bm25)::

    sim(q, c) = Σ_{t ∈ q} idf(t) · tf(t, c) / (tf(t, c) + k1 · (1 - b + b · |c| / avgdl))
    idf(t)    = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))

(query repeats count), where N, n(t) (messages holding t) and avgdl are those of the
snapshot's own history, never of later commits, so not even the term statistics
leak the future.

:class:`MessageIndex` holds the term counts of every message of a
:class:`~retrieval_bench.retrieval.history_log.RepoLog` once, as postings by term
(rebuilt when the log has grown); a snapshot only masks the rows of its history.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Mapping

import numpy as np

from retrieval_bench.datasets.gitmine import clean_message
from retrieval_bench.retrieval.code_tokens import CodeTokenizer
from retrieval_bench.retrieval.history_log import CommitRecord, RepoLog
from retrieval_bench.retrieval.history_view import SnapshotHistory


def message(record: CommitRecord) -> str:
    """The text a commit is compared by (module doc)."""
    return clean_message(record.subject, record.body)[1]


class MessageIndex:
    """Postings of the messages of one log's rows, for one tokenizer (module doc)."""

    def __init__(self, log: RepoLog, tokenizer: CodeTokenizer) -> None:
        self.log = log
        self.tokenizer = tokenizer
        self.vocab: dict[str, int] = {}
        self._counts: list[dict[int, int]] = []  # per row: term id → count
        self._lengths: list[int] = []
        self._built = -1  # rows the postings cover
        self._lock = threading.Lock()
        self.starts = np.zeros(1, dtype=np.int64)
        self.post_rows = np.zeros(0, dtype=np.int64)
        self.post_tf = np.zeros(0, dtype=np.float64)
        self.lengths = np.zeros(0, dtype=np.float64)

    def refresh(self) -> None:
        """Count the messages of rows added to the log since, and rebuild the postings."""
        with self._lock:
            records = self.log.records
            if self._built == len(records):
                return
            vocab = self.vocab
            for rec in records[len(self._counts) :]:
                counts = self.tokenizer.term_counts(message(rec))
                ids = {vocab.setdefault(t, len(vocab)): n for t, n in counts.items()}
                self._counts.append(ids)
                self._lengths.append(sum(counts.values()))
            n = sum(len(c) for c in self._counts)
            terms = np.fromiter((t for c in self._counts for t in c), np.int64, count=n)
            tfs = np.fromiter((f for c in self._counts for f in c.values()), np.float64, count=n)
            rows = np.repeat(np.arange(len(self._counts), dtype=np.int64),
                             [len(c) for c in self._counts])  # fmt: skip
            order = np.argsort(terms, kind="stable")
            self.post_rows, self.post_tf = rows[order], tfs[order]
            self.starts = np.searchsorted(terms[order], np.arange(len(vocab) + 1))
            self.lengths = np.asarray(self._lengths, dtype=np.float64)
            self._built = len(records)


class HistoryText:
    """BM25 over the messages of one snapshot's history (module doc)."""

    def __init__(
        self, history: SnapshotHistory, index: MessageIndex, k1: float = 1.5, b: float = 0.75
    ) -> None:
        index.refresh()
        self.history, self.index, self.k1, self.b = history, index, k1, b
        self.mask = np.zeros(len(index.lengths), dtype=bool)
        self.mask[history.rows] = True
        self.n_docs = len(history.rows)
        self.avgdl = float(index.lengths[history.rows].mean()) if self.n_docs else 0.0

    def similarities(self, query: str | Mapping[str, float]) -> dict[int, float]:
        """Age → sim(query, message) for every commit of the history sharing a term
        with ``query`` (module doc): the question's text, or a weighted bag of its
        tokens (token → weight, as ``bm25 query: issue`` scores it: a weight acts as
        that many repeats)."""
        index = self.index
        if not self.n_docs or self.avgdl <= 0:
            return {}
        if isinstance(query, str):
            bag: Mapping[str, float] = Counter(index.tokenizer.tokenize(query))
        else:
            bag = query
        wanted = {t: w for t, w in bag.items() if w > 0 and t in index.vocab}
        scores = np.zeros(len(self.mask), dtype=np.float64)
        k1, b, big_n = self.k1, self.b, self.n_docs
        for term, repeats in wanted.items():
            tid = index.vocab[term]
            lo, hi = index.starts[tid], index.starts[tid + 1]
            rows = index.post_rows[lo:hi]
            keep = self.mask[rows]
            n = int(keep.sum())
            if not n:
                continue
            rows, tf = rows[keep], index.post_tf[lo:hi][keep]
            idf = math.log(1 + (big_n - n + 0.5) / (n + 0.5))
            norm = k1 * (1 - b + b * index.lengths[rows] / self.avgdl)
            scores[rows] += repeats * idf * tf / (tf + norm)
        hit = np.flatnonzero(scores > 0)
        ages = self.history.age_of_row[hit]
        return dict(zip(ages.tolist(), scores[hit].tolist(), strict=True))
