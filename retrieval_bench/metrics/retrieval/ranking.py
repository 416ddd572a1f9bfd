"""Ranking metrics over judged ranked lists, vectorised with numpy
(docs/metrics.md#file-level-every-example).

Every function here reproduces one ``trec_eval`` measure (as exposed by
``pytrec_eval``, PyPI ``pytrec-eval-terrier``) and is checked against it to
1e-9 in ``tests/unit/metrics/retrieval/test_pytrec_agreement.py``:

=====================  ========================  ==========================================
function               trec_eval measure         definition (rank r is 1-based)
=====================  ========================  ==========================================
``precision(j, k)``    ``P_k``                   relevant in top k / k (k, not the list length)
``recall(j, k)``       ``recall_k``              relevant in top k / number relevant in qrels
``success(j, k)``      ``success_k``             1 if any relevant in top k else 0
``reciprocal_rank``    ``recip_rank``            1 / rank of the first relevant, 0 if none
``average_precision``  ``map`` (``map_cut_k``)   sum over relevant retrieved of P@r / num relevant
``ndcg(j, k)``         ``ndcg_cut_k``            DCG@k / ideal DCG@k, gain = max(rel, 0),
                                                 discount log2(r + 1), ideal from the qrels
=====================  ========================  ==========================================

"Relevant" means ``rel >= relevance_level`` (trec_eval's ``-l``, default 1);
nDCG ignores the level and uses the graded gain, with negative judgements
counting as 0, exactly as trec_eval does. Documents missing from the qrels are
non-relevant. A query with no relevant documents scores 0 on every measure.

Ties: trec_eval orders equal scores by *descending* docno, while
:meth:`retrieval_bench.types.Run.ranked` (and :func:`ranked_ids`) orders them
by *ascending* id. The two agree whenever scores are tie-free; with ties our
numbers follow ``Run.ranked``, which is the order every stage hands on.

Layout: the ranked lists of all queries are judged once into a flat
(CSR-like) :class:`Judged` — one entry per retrieved document with its query
index, rank and gain — so each measure is a handful of numpy passes over all
queries at once, whatever the list lengths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import numpy.typing as npt

from retrieval_bench.runs.lifting import ranked_ids
from retrieval_bench.types import Run

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Qrels = Mapping[str, Mapping[str, int]]
"""``{query_id: {doc_id: relevance}}`` as in trec_eval qrels files."""


@dataclass(frozen=True)
class Judged:
    """Ranked lists of ``n_queries`` queries judged against qrels, flattened.

    Entry ``e`` is the document at rank ``rank[e]`` of query ``qidx[e]``;
    entries are grouped by query and ordered by rank inside each group.
    ``ideal_*`` hold, per query, the positive qrels gains sorted descending
    (the ideal ranking for nDCG).
    """

    n_queries: int
    qidx: IntArray
    rank: IntArray
    gain: FloatArray
    """max(rel, 0) of each retrieved document (0 when unjudged)."""
    relevant: BoolArray
    """rel >= relevance_level."""
    n_rel: IntArray
    """Per query, number of qrels documents with rel >= relevance_level."""
    ideal_qidx: IntArray
    ideal_rank: IntArray
    ideal_gain: FloatArray

    @property
    def n_retrieved(self) -> IntArray:
        return np.bincount(self.qidx, minlength=self.n_queries).astype(np.int64)


def _csr(lengths: list[int]) -> tuple[IntArray, IntArray]:
    """Query index and 1-based rank for consecutive groups of ``lengths``."""
    n = len(lengths)
    lens = np.asarray(lengths, dtype=np.int64)
    qidx = np.repeat(np.arange(n, dtype=np.int64), lens)
    starts = np.cumsum(lens) - lens
    rank = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(starts, lens) + 1
    return qidx, rank


def _build(
    raw: FloatArray, lengths: list[int], qrels: Sequence[Mapping[str, int]], level: int
) -> Judged:
    """Assemble a :class:`Judged` from rank-ordered raw judgements and list lengths."""
    ideal: list[int] = []
    ideal_lengths: list[int] = []
    n_rel: list[int] = []
    for rels in qrels:
        positive = sorted((v for v in rels.values() if v > 0), reverse=True)
        ideal.extend(positive)
        ideal_lengths.append(len(positive))
        n_rel.append(sum(1 for v in rels.values() if v >= level))
    qidx, rank = _csr(lengths)
    iqidx, irank = _csr(ideal_lengths)
    return Judged(
        n_queries=len(lengths),
        qidx=qidx,
        rank=rank,
        gain=np.maximum(raw, 0.0),
        relevant=raw >= level,
        n_rel=np.asarray(n_rel, dtype=np.int64),
        ideal_qidx=iqidx,
        ideal_rank=irank,
        ideal_gain=np.asarray(ideal, dtype=np.float64),
    )


def judge(
    rankings: Iterable[Sequence[str]],
    qrels: Iterable[Mapping[str, int]],
    relevance_level: int = 1,
) -> Judged:
    """Judge ranked id lists (best first) against per-query qrels, pairwise.

    ``rankings`` and ``qrels`` are parallel: the i-th list is judged against
    the i-th qrels dict. Lists should not repeat an id (trec_eval run files
    cannot); a repeated id counts at each of its positions.
    """
    raw: list[int] = []
    lengths: list[int] = []
    qrels_list: list[Mapping[str, int]] = []
    for ids, rels in zip(rankings, qrels, strict=True):
        raw.extend(map(rels.get, ids, repeat(0)))
        lengths.append(len(ids))
        qrels_list.append(rels)
    return _build(np.asarray(raw, dtype=np.float64), lengths, qrels_list, relevance_level)


def judge_scores(
    scores: Sequence[Mapping[str, float]],
    qrels: Sequence[Mapping[str, int]],
    relevance_level: int = 1,
) -> Judged:
    """Judge scored (unranked) results, ranking them exactly as :func:`ranked_ids`.

    Equivalent to ``judge([ranked_ids(s) for s in scores], qrels)`` but sorts
    all queries at once in numpy (score descending, stable); only queries
    with tied scores go through :func:`ranked_ids` for the id tie-break.
    """
    if len(scores) != len(qrels):
        raise ValueError("scores and qrels must have one entry per query")
    flat: list[float] = []
    raw: list[int] = []
    lengths: list[int] = []
    for d, rels in zip(scores, qrels, strict=True):
        flat.extend(d.values())
        raw.extend(map(rels.get, d, repeat(0)))
        lengths.append(len(d))
    qidx, _ = _csr(lengths)
    values = np.asarray(flat, dtype=np.float64)
    order = np.lexsort((-values, qidx))
    raw_sorted = np.asarray(raw, dtype=np.float64)[order]
    v = values[order]
    tied = (v[1:] == v[:-1]) & (qidx[1:] == qidx[:-1])
    if tied.any():
        starts = np.cumsum(lengths) - np.asarray(lengths)
        for q in np.unique(qidx[1:][tied]).tolist():
            rels = qrels[q]
            s = int(starts[q])
            raw_sorted[s : s + lengths[q]] = [rels.get(c, 0) for c in ranked_ids(scores[q])]
    return _build(raw_sorted, lengths, qrels, relevance_level)


def judge_run(
    run: Run,
    qrels: Qrels,
    query_ids: Sequence[str] | None = None,
    relevance_level: int = 1,
) -> tuple[list[str], Judged]:
    """Judge a :class:`Run` (ranked as ``Run.ranked``) against qrels.

    ``query_ids`` defaults to the queries of ``qrels`` (as trec_eval, which
    skips run queries without judgements); a query absent from the run gets an
    empty list and therefore scores 0.
    """
    qids = list(qrels) if query_ids is None else list(query_ids)
    no_scores: dict[str, float] = {}
    no_rels: dict[str, int] = {}
    return qids, judge_scores(
        [run.scores.get(q, no_scores) for q in qids],
        [qrels.get(q, no_rels) for q in qids],
        relevance_level,
    )


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"cut-off k must be a positive integer, got {k!r}")


def hits(j: Judged, k: int | None = None) -> IntArray:
    """Number of relevant documents in the top k (all retrieved if k is None)."""
    sel = j.relevant if k is None else j.relevant & (j.rank <= k)
    return np.bincount(j.qidx[sel], minlength=j.n_queries).astype(np.int64)


def _safe_div(num: FloatArray | IntArray, den: FloatArray | IntArray) -> FloatArray:
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=np.asarray(den) > 0)
    return out


def precision(j: Judged, k: int) -> FloatArray:
    """trec_eval ``P_k``: relevant in the top k divided by k (short lists are not excused)."""
    _check_k(k)
    return hits(j, k) / float(k)


def recall(j: Judged, k: int | None = None) -> FloatArray:
    """trec_eval ``recall_k``: relevant in the top k / relevant in qrels (0 if none)."""
    if k is not None:
        _check_k(k)
    return _safe_div(hits(j, k), j.n_rel)


def success(j: Judged, k: int) -> FloatArray:
    """trec_eval ``success_k``: 1 if at least one relevant document is in the top k."""
    _check_k(k)
    return (hits(j, k) > 0).astype(np.float64)


def all_found(j: Judged, k: int) -> FloatArray:
    """1 if every relevant document is in the top k (and there is at least one)."""
    _check_k(k)
    return ((hits(j, k) == j.n_rel) & (j.n_rel > 0)).astype(np.float64)


def reciprocal_rank(j: Judged, k: int | None = None) -> FloatArray:
    """trec_eval ``recip_rank`` (full list) or MRR@k: 1 / rank of the first relevant."""
    sel = j.relevant if k is None else j.relevant & (j.rank <= _positive(k))
    q, r = j.qidx[sel], j.rank[sel]
    out = np.zeros(j.n_queries, dtype=np.float64)
    if len(q):
        first = np.empty(len(q), dtype=bool)
        first[0] = True
        np.not_equal(q[1:], q[:-1], out=first[1:])
        out[q[first]] = 1.0 / r[first]
    return out


def _positive(k: int) -> int:
    _check_k(k)
    return k


def average_precision(j: Judged, k: int | None = None) -> FloatArray:
    """trec_eval ``map`` (``map_cut_k`` with k): mean of P@r over relevant ranks r.

    Divided by the number of relevant documents in the qrels, so relevant
    documents never retrieved contribute 0.
    """
    rel = j.relevant if k is None else j.relevant & (j.rank <= _positive(k))
    cum = np.cumsum(rel, dtype=np.int64)
    # relevant count before each entry's query starts = cum at (entry - rank)
    before = np.concatenate(([0], cum))[np.arange(len(rel)) - j.rank + 1]
    prec_at = (cum - before) / j.rank
    sums = np.bincount(j.qidx[rel], weights=prec_at[rel], minlength=j.n_queries)
    return _safe_div(sums, j.n_rel)


def _dcg(qidx: IntArray, rank: IntArray, gain: FloatArray, n: int, k: int) -> FloatArray:
    sel = rank <= k
    weights = gain[sel] / np.log2(rank[sel] + 1.0)
    return np.bincount(qidx[sel], weights=weights, minlength=n).astype(np.float64)


def ndcg(j: Judged, k: int) -> FloatArray:
    """trec_eval ``ndcg_cut_k``: sum_{r<=k} gain_r / log2(r + 1), over the ideal.

    The ideal DCG ranks the qrels' positive gains descending, cut at k.
    """
    _check_k(k)
    dcg = _dcg(j.qidx, j.rank, j.gain, j.n_queries, k)
    idcg = _dcg(j.ideal_qidx, j.ideal_rank, j.ideal_gain, j.n_queries, k)
    return _safe_div(dcg, idcg)


def ranking_metrics(
    j: Judged, ks: Sequence[int] = (1, 3, 5, 10), prefix: str = ""
) -> dict[str, FloatArray]:
    """Every measure above, named ``{prefix}P@k``, ``R@k``, ``Hit@k``, ``Acc@k``,
    ``nDCG@k``, ``MRR`` and ``MAP`` — one array of per-query values each."""
    out: dict[str, FloatArray] = {}
    for k in ks:
        out[f"{prefix}P@{k}"] = precision(j, k)
        out[f"{prefix}R@{k}"] = recall(j, k)
        out[f"{prefix}Hit@{k}"] = success(j, k)
        out[f"{prefix}Acc@{k}"] = all_found(j, k)
        out[f"{prefix}nDCG@{k}"] = ndcg(j, k)
    out[f"{prefix}MRR"] = reciprocal_rank(j)
    out[f"{prefix}MAP"] = average_precision(j)
    return out
