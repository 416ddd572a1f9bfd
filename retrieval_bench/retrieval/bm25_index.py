"""Building the ``bm25`` index fast, with the very scores ``bm25s`` builds
(docs/stages.md#bm25, docs/architecture.md#caches).

A run over many snapshots of one repository builds one BM25 index per snapshot,
over chunks that are mostly the same texts as the snapshot before. Two pieces
make that cheap without changing a score:

* :class:`TokenMemo`: the tokens of each chunk text and path, per tokenizer
  configuration, memoised for the process as ids into one growing vocabulary,
  so each distinct text is tokenised once; a snapshot's vocabulary and token ids
  are then a few whole-array operations (the same first-occurrence order as
  before). Only for :class:`~retrieval_bench.retrieval.code_tokens.CodeTokenizer`
  (its configuration is the key); ``RBENCH_CHUNK_CACHE=0`` turns it off.
* :func:`build_model`: the eager score matrix of ``bm25s`` (one score per document
  and term) computed with whole-array numpy operations instead of a Python loop
  per document. It calls ``bm25s``'s own idf and term-frequency functions, on
  arrays, so every element goes through the same float operations: the same
  bits. Once per process and parameter set it checks that on a small corpus
  against ``bm25s``'s own build; if the two ever differ (another ``bm25s`` or
  numpy), or ``bm25s`` no longer has those functions, ``bm25s`` builds every
  index as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import bm25s
import numpy as np

from retrieval_bench.chunking.cache import chunk_cache_enabled
from retrieval_bench.retrieval.code_tokens import CodeTokenizer

log = logging.getLogger(__name__)

_MEMO_LIMIT = 4_000_000
"""Token ids (about 16 MB) or distinct tokens one memo holds before it starts afresh."""

IntArray = np.ndarray


class TokenMemo:
    """Token ids of texts for one tokenizer configuration (see module doc)."""

    def __init__(self, tokenizer: CodeTokenizer) -> None:
        self.tokenizer = tokenizer
        self.ids: dict[str, int] = {}
        self.words: list[str] = []
        self._texts: dict[str, IntArray] = {}
        self._held = 0
        self._lock = threading.Lock()  # one vocabulary: threads add to it one at a time

    def encode(self, text: str) -> IntArray:
        """The token ids of ``text`` (tokenised on first sight)."""
        found = self._texts.get(text)
        if found is not None:
            return found
        tokens = self.tokenizer(text)
        ids, words = self.ids, self.words
        for token in tokens:
            if token not in ids:
                ids[token] = len(words)
                words.append(token)
        arr = np.fromiter(map(ids.__getitem__, tokens), dtype=np.int32, count=len(tokens))
        self._texts[text] = arr
        self._held += len(arr)
        return arr

    def documents(
        self, texts: Sequence[str], paths: Sequence[str] | None
    ) -> tuple[dict[str, int], IntArray, IntArray]:
        """``(vocabulary, token ids, document lengths)`` of the documents ``text (+
        path)``: the vocabulary in first-occurrence order, the ids of all documents
        one after the other, as ``BM25Retriever.index_tokens`` makes them."""
        with self._lock:
            return self._documents(texts, paths)

    def _documents(
        self, texts: Sequence[str], paths: Sequence[str] | None
    ) -> tuple[dict[str, int], IntArray, IntArray]:
        if max(self._held, len(self.words)) > _MEMO_LIMIT:  # between calls: no id in use
            self.ids, self.words, self._texts, self._held = {}, [], {}, 0
        parts = [self.encode(t) for t in texts]
        if paths is not None:
            path_parts = [self.encode(p) for p in paths]
            parts = [a for pair in zip(parts, path_parts, strict=True) for a in pair]
            lengths = np.array([len(a) for a in parts], dtype=np.int64).reshape(-1, 2).sum(1)
        else:
            lengths = np.array([len(a) for a in parts], dtype=np.int64)
        flat = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
        # first occurrence of each id (O(n), no sort of the n ids), then the present ids
        # in that order: the local vocabulary
        first = np.full(len(self.words), len(flat), dtype=np.int64)
        np.minimum.at(first, flat, np.arange(len(flat), dtype=np.int64))
        present = np.flatnonzero(first < len(flat))
        order = present[np.argsort(first[present], kind="stable")]
        local = np.zeros(len(self.words), dtype=np.int64)
        local[order] = np.arange(len(order), dtype=np.int64)
        words = self.words
        vocab = {words[g]: i for i, g in enumerate(order.tolist())}
        return vocab, local[flat], lengths


_MEMOS: dict[tuple[Any, ...], TokenMemo] = {}


def memo_for(tokenizer: object) -> TokenMemo | None:
    """The process's memo for ``tokenizer``'s configuration; None for other tokenizers
    (their output cannot be keyed) or when ``RBENCH_CHUNK_CACHE`` is off."""
    if not isinstance(tokenizer, CodeTokenizer) or type(tokenizer) is not CodeTokenizer:
        return None
    if not chunk_cache_enabled():
        return None
    key = (tokenizer.stopwords, tokenizer.min_len, tokenizer.keep_identifier, tokenizer.digits)
    memo = _MEMOS.get(key)
    if memo is None:
        memo = _MEMOS[key] = TokenMemo(
            CodeTokenizer(
                tokenizer.stopwords, min_len=key[1], keep_identifier=key[2], digits=key[3]
            )
        )
    return memo


# ----------------------------------------------------------------------------- eager scores


class _Prebuilt(bm25s.BM25):
    """A ``bm25s.BM25`` whose ``index`` takes the scores :func:`_scores` computed
    (``build_index_from_ids`` is ``bm25s``'s documented override point)."""

    prebuilt: dict[str, Any]

    def build_index_from_ids(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.prebuilt


def _params(model: bm25s.BM25) -> tuple[Any, ...]:
    return (
        model.method,
        model.idf_method,
        model.dtype,
        model.int_dtype,
        model.k1,
        model.b,
        model.delta,
    )


def _scores(model: bm25s.BM25, flat: IntArray, lengths: IntArray, n_vocab: int) -> dict[str, Any]:
    """``bm25s``'s eager scores (``build_index_from_ids``) for documents whose token ids
    are ``flat`` split by ``lengths``; sets ``model.nonoccurrence_array`` as it does."""
    from bm25s.scoring import (
        _build_nonoccurrence_array,
        _select_idf_scorer,
        _select_tfc_scorer,
    )
    from scipy import sparse

    n_docs = len(lengths)
    avg_doc_len = np.array(lengths.tolist()).mean()  # as bm25s: a numpy float64
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    # the (term, document) pairs in CSC order (by term, then document), each with its
    # term frequency: a term × document count matrix, duplicates summed
    counts = sparse.csr_matrix(
        (np.ones(len(flat), dtype=np.int64), (flat, doc)), shape=(n_vocab, max(n_docs, 1))
    )
    counts.sum_duplicates()
    counts.sort_indices()
    df = np.diff(counts.indptr).astype(np.int64)
    term = np.repeat(np.arange(n_vocab, dtype=np.int64), df)
    doc_of, tf = counts.indices.astype(np.int64), counts.data
    idf_fn = _select_idf_scorer(model.idf_method)
    values, where = np.unique(df, return_inverse=True)
    idf_of = np.array([idf_fn(int(d), N=n_docs) if d else 0.0 for d in values.tolist()])
    idf = idf_of[where.reshape(-1)].astype(model.dtype)  # float64 → dtype, as bm25s stores it
    tfc_fn = _select_tfc_scorer(model.method)
    tfc = tfc_fn(
        tf_array=tf.astype(model.dtype),
        l_d=lengths[doc_of],
        l_avg=avg_doc_len,
        k1=model.k1,
        b=model.b,
        delta=model.delta,
    )
    data = idf[term] * tfc
    model.nonoccurrence_array = None
    if model.method in model.methods_requiring_nonoccurrence:
        model.nonoccurrence_array = _build_nonoccurrence_array(
            doc_frequencies={t: int(d) for t, d in enumerate(df.tolist())},
            n_docs=n_docs,
            compute_idf_fn=idf_fn,
            calculate_tfc_fn=tfc_fn,
            l_d=avg_doc_len,
            l_avg=avg_doc_len,
            k1=model.k1,
            b=model.b,
            delta=model.delta,
            dtype=model.dtype,
        )
        data -= model.nonoccurrence_array[term]
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return {
        "data": data.astype(model.dtype),
        "indices": doc_of.astype(model.int_dtype),
        "indptr": indptr,
        "num_docs": n_docs,
    }


def _fast(model: bm25s.BM25, flat: IntArray, lengths: IntArray, vocab: dict[Any, int]) -> Any:
    fast = _Prebuilt(
        k1=model.k1,
        b=model.b,
        delta=model.delta,
        method=model.method,
        idf_method=model.idf_method,
        dtype=model.dtype,
    )
    fast.prebuilt = _scores(fast, flat, lengths, len(vocab))
    fast.index(([], vocab), create_empty_token=False, show_progress=False)
    return fast


_VERIFIED: dict[tuple[Any, ...], bool] = {}


def _verified(model: bm25s.BM25) -> bool:
    """Whether :func:`_scores` gives ``bm25s``'s own index, bit for bit, for ``model``'s
    parameters on a small corpus with repeats, rare and common terms and an empty
    document (checked once per process and parameter set)."""
    key = _params(model)
    if key not in _VERIFIED:
        rng = np.random.default_rng(7)
        docs = [rng.zipf(1.6, size=int(n)) % 97 for n in rng.integers(0, 60, size=120)]
        docs.append(np.zeros(0, dtype=np.int64))
        vocab = {f"t{i}": i for i in range(97)}
        lists = [d.tolist() for d in docs]
        flat = np.concatenate(docs).astype(np.int64)
        lengths = np.array([len(d) for d in docs], dtype=np.int64)
        try:
            ref = bm25s.BM25(
                k1=model.k1,
                b=model.b,
                delta=model.delta,
                method=model.method,
                idf_method=model.idf_method,
                dtype=model.dtype,
            )
            ref.index((lists, dict(vocab)), create_empty_token=False, show_progress=False)
            ours = _fast(model, flat, lengths, dict(vocab))
            same = (
                all(
                    ref.scores[k].dtype == ours.scores[k].dtype
                    and np.array_equal(ref.scores[k], ours.scores[k])
                    for k in ("data", "indices", "indptr")
                )
                and ref.scores["num_docs"] == ours.scores["num_docs"]
            )
            nonocc = (ref.nonoccurrence_array, ours.nonoccurrence_array)
            same = same and (
                nonocc[0] is None
                and nonocc[1] is None
                or nonocc[0] is not None
                and nonocc[1] is not None
                and np.array_equal(nonocc[0], nonocc[1])
            )
        except Exception as exc:  # another bm25s: its private functions moved
            log.debug("bm25: whole-array index build unavailable: %s", exc)
            same = False
        if not same:
            log.debug("bm25: whole-array index differs from bm25s's build: bm25s builds")
        _VERIFIED[key] = same
    return _VERIFIED[key]


def build_model(
    model: bm25s.BM25, flat: IntArray, lengths: IntArray, vocab: dict[str, int]
) -> bm25s.BM25:
    """``model`` indexed over the documents ``flat`` (token ids into ``vocab``, one
    document after the other, ``lengths`` each): the whole-array build when it is
    verified for these parameters, else ``bm25s``'s own."""
    if _verified(model):
        return _fast(model, flat, lengths, vocab)
    doc_ids = [d.tolist() for d in np.split(flat, np.cumsum(lengths)[:-1])] if len(lengths) else []
    model.index((doc_ids, vocab), create_empty_token=False, show_progress=False)
    return model
