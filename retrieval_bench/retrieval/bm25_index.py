"""Building the ``bm25`` index fast, with the very scores ``bm25s`` builds
(docs/stages.md#bm25, docs/architecture.md#caches).

A run over many snapshots of one repository builds one BM25 index per snapshot,
over chunks that are mostly the same texts as the snapshot before. Two pieces
make that cheap without changing a score:

* :class:`~retrieval_bench.retrieval.token_memo.TokenMemo`: the term counts of
  each file's texts, tokenised once per process and, with the workspace's
  term-count cache, once for every later run; a snapshot's vocabulary and counts
  are then a few whole-array operations (the same first-occurrence order as a
  fresh tokenisation).
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
from typing import Any

import bm25s
import numpy as np

from retrieval_bench.retrieval.token_memo import Documents

log = logging.getLogger(__name__)
IntArray = np.ndarray


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


def _scores(model: bm25s.BM25, documents: Documents) -> dict[str, Any]:
    """``bm25s``'s eager scores (``build_index_from_ids``) for ``documents``; sets
    ``model.nonoccurrence_array`` as it does."""
    from bm25s.scoring import (
        _build_nonoccurrence_array,
        _select_idf_scorer,
        _select_tfc_scorer,
    )
    from scipy import sparse

    lengths, n_vocab = documents.lengths, len(documents.vocab)
    n_docs = len(lengths)
    avg_doc_len = np.array(lengths.tolist()).mean()  # as bm25s: a numpy float64
    # the (term, document) pairs in CSC order (by term, then document), each with its
    # term frequency: a term × document count matrix, duplicates summed
    counts = sparse.csr_matrix(
        (documents.counts, (documents.terms, documents.docs)), shape=(n_vocab, max(n_docs, 1))
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


def _fast(model: bm25s.BM25, documents: Documents) -> Any:
    fast = _Prebuilt(
        k1=model.k1,
        b=model.b,
        delta=model.delta,
        method=model.method,
        idf_method=model.idf_method,
        dtype=model.dtype,
    )
    fast.prebuilt = _scores(fast, documents)
    fast.index(([], dict(documents.vocab)), create_empty_token=False, show_progress=False)
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
            ours = _fast(model, Documents.of_sequences(dict(vocab), flat, lengths))
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


def build_model(model: bm25s.BM25, documents: Documents) -> bm25s.BM25:
    """``model`` indexed over ``documents``: the whole-array build when it is verified
    for these parameters, else ``bm25s``'s own."""
    if _verified(model):
        return _fast(model, documents)
    model.index((documents.sequences(), documents.vocab), create_empty_token=False,
                show_progress=False)  # fmt: skip
    return model
