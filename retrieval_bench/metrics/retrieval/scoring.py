"""Per-stage retrieval metrics at file, chunk and line level
(docs/metrics.md#retrieval-metrics).

Gold is expressed in files and optional line spans, never in chunk ids, so
every stage's chunk :class:`~retrieval_bench.types.Run` is mapped onto files
(and lines) before scoring; different chunkers are thereby scored against the
same gold.

File level (every example)
    The ranked chunks of a query become ranked files: a file's rank is the
    rank of its best chunk (first occurrence kept, later chunks of the same
    file dropped). A ``file:<path>`` id (a file-level run: an external system's
    files) is that file even when the corpus lacks it, and stands for all its
    chunks in the budget and span measures. At cut-off k (k *files*):

    - ``P@k`` = gold files in the top k / k (trec_eval ``P_k``; a list
      shorter than k is not excused), ``R@k`` = gold in top k / |gold|
      (``recall_k``), ``F1@k`` = 2PR/(P+R), 0 when P+R = 0 (the harmonic
      mean; PR/(P+R) without the factor 2 was a typo in the first design),
    - ``Acc@k`` = 1 when *all* gold files are in the top k, ``Hit@k`` = 1 when
      any is (``success_k``), ``nDCG@k`` binary gain (``ndcg_cut_k``),
    - ``MRR`` = 1 / rank of the first gold file (``recip_rank``, full list),
      ``MAP`` (``map``).

    At a token budget B (label ``8k`` for 8000): chunks are taken in rank
    order while the running total of ``Chunk.n_tokens`` stays <= B; the first
    chunk that would exceed B *stops* the walk (no skipping over it to fit a
    smaller later chunk — the context a reader would actually assemble). The
    files covered are the retrieved set: ``P@8k`` = |covered ∩ gold| /
    |covered| (0 when nothing fits), ``R@8k`` = |covered ∩ gold| / |gold|,
    ``F1@8k``. Chunk ids unknown to the corpus are skipped (they use no budget
    and map to no file); their number is reported.

Chunk and line level (examples with ``gold_spans``)
    A chunk is relevant when it overlaps a gold span (same path, line ranges
    intersect); the ideal ranking holds every corpus chunk that does. The
    ranking measures above are then computed on chunks with the prefix
    ``chunk_`` (``chunk_P@k``, ``chunk_nDCG@k``, ``chunk_MRR`` ...). Line
    level: retrieved lines = union of ``[start_line, end_line]`` of the top k
    chunks per path (an unknown chunk id still takes its rank, as in the
    ``chunk_`` measures), gold lines = union of the spans; ``line_P@k``,
    ``line_R@k``, ``line_F1@k``, and the same at each budget (``line_F1@8k``).

Attribution ("lost at stage X")
    ``Lost@k`` counts the gold files the stage's *input* had that the stage's
    top k *files* (the same list ``R@k`` reads) do not have; the files
    themselves are in :attr:`StageMetrics.lost`. A retriever's input is the
    snapshot (the gold files present in the corpus); any other stage's input
    is the union of the files of its input runs' whole candidate lists (a
    fusion: every retriever; a reranker: the stage it reranks). So a lost
    file is never in the stage's top k, and for a retriever
    ``Lost@k = |gold in corpus| - hits@k``. Gold files absent from the corpus
    are never lost: they are reported as missing gold.

Queries of ``examples`` absent from the run score 0 on everything (not
skipped) and are listed in :attr:`StageMetrics.missing`. Examples without gold
files also score 0 (as in trec_eval); filter them beforehand if that is not
wanted — selecting subsets (e.g. ``leaks_path``) is the caller's job.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import attrgetter

import numpy as np

from retrieval_bench.corpus import Corpus
from retrieval_bench.measures import budget_label
from retrieval_bench.metrics.retrieval.conventions import Conventions
from retrieval_bench.metrics.retrieval.entity_scores import UNMAPPED, entity_measures
from retrieval_bench.metrics.retrieval.ranking import FloatArray, judge, ranking_metrics
from retrieval_bench.metrics.retrieval.spans import line_prf, span_qrels
from retrieval_bench.runs.file_ids import entity_of, file_path
from retrieval_bench.runs.lifting import ranked_files, ranked_ids
from retrieval_bench.types import Chunk, Example, Run

__all__ = [
    "UNMAPPED",
    "StageMetrics",
    "budget_label",
    "evaluate_stage",
    "f1_score",
    "files_within_budget",
    "input_files",
    "lost_at_stage",
    "set_prf",
]


@dataclass
class StageMetrics:
    """Scores of one stage's run over a set of examples."""

    stage: str
    per_query: dict[str, dict[str, float]]
    """query id → metric name → value. Span metrics only for span examples."""
    means: dict[str, float]
    """metric → mean over the queries that have it (see :attr:`counts`); NaN over none."""
    counts: dict[str, int]
    """metric → number of queries averaged."""
    missing: list[str] = field(default_factory=list)
    """Example ids with no entry in the run (scored 0, not skipped)."""
    no_gold: list[str] = field(default_factory=list)
    """Example ids without gold files (score 0 at file level)."""
    unknown_chunks: int = 0
    """Retrieved chunk ids absent from the corpus (skipped when mapping to files)."""
    lost: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    """query id → k → gold files the stage's input had that its top k files lack
    (only queries and cut-offs that lost some)."""

    @property
    def n_queries(self) -> int:
        return len(self.per_query)

    @property
    def n_missing(self) -> int:
        return len(self.missing)


def f1_score(p: float, r: float) -> float:
    """Harmonic mean 2PR/(P+R); 0 when P+R = 0."""
    return 2.0 * p * r / (p + r) if p + r > 0 else 0.0


def set_prf(retrieved: Collection[str], gold: Collection[str]) -> tuple[float, float, float]:
    """Set precision, recall and F1 of ``retrieved`` against ``gold`` (0 when empty)."""
    ret, g = set(retrieved), set(gold)
    inter = len(ret & g)
    p = inter / len(ret) if ret else 0.0
    r = inter / len(g) if g else 0.0
    return p, r, f1_score(p, r)


_PATH = attrgetter("path")
_TOKENS = attrgetter("n_tokens")


def _known(chunk_ids: Iterable[str], corpus: Corpus) -> list[Chunk]:
    """Chunks of ``chunk_ids`` in order, ids unknown to the corpus dropped; a
    ``file:<path>`` id stands for all chunks of that file, in line order."""
    return [corpus.by_id[i] for i in _expanded(chunk_ids, corpus) if i in corpus.by_id]


def _expanded(chunk_ids: Iterable[str], corpus: Corpus) -> list[str]:
    """``chunk_ids`` with each ``file:<path>`` id of a corpus file replaced by the
    ids of that file's chunks (line order); other ids unchanged."""
    out: list[str] = []
    for cid in chunk_ids:
        path = None if cid in corpus.by_id or entity_of(cid) else file_path(cid)
        chunks = corpus.chunks_of(path) if path is not None else ()
        out.extend([c.id for c in chunks] if chunks else [cid])
    return out


def _budget_cuts(chunks: Sequence[Chunk], budgets: Sequence[int]) -> list[int]:
    """How many leading chunks fit in each budget (stop at the first overflow)."""
    cum = list(accumulate(map(_TOKENS, chunks)))
    return [bisect.bisect_right(cum, b) for b in budgets]


def files_within_budget(chunk_ids: Iterable[str], corpus: Corpus, budget: int) -> list[str]:
    """Files covered by the leading chunks whose cumulative ``n_tokens`` fits ``budget``.

    The walk stops at the first chunk that would exceed the budget; unknown
    chunk ids are skipped. Files come in rank order, de-duplicated.
    """
    chunks = _known(chunk_ids, corpus)
    (cut,) = _budget_cuts(chunks, [budget])
    return list(dict.fromkeys(map(_PATH, chunks[:cut])))


def lost_at_stage(
    input_files: Collection[str], stage_top_files: Collection[str], gold_files: Sequence[str]
) -> list[str]:
    """Gold files the stage's input had and its top files do not (in gold order).

    ``input_files`` is everything the stage could have ranked (the corpus for a
    retriever, the union of its input runs' candidate files otherwise), uncut;
    ``stage_top_files`` is the stage's own top-k file list. The one definition
    of "lost" (module docstring); the harness and the reports read it from
    :func:`evaluate_stage`.
    """
    kept = set(stage_top_files)
    return [f for f in dict.fromkeys(gold_files) if f in input_files and f not in kept]


def input_files(inputs: Sequence[Run] | None, query_id: str, corpus: Corpus) -> set[str]:
    """The files a stage could rank for one query: the corpus when ``inputs`` is
    None (a retriever), else the union of the input runs' whole file lists."""
    if inputs is None:
        return set(corpus.paths)
    files: set[str] = set()
    for run in inputs:
        files.update(ranked_files(ranked_ids(run.scores.get(query_id, {})), corpus))
    return files


def _check_cutoffs(ks: Sequence[int], budgets: Sequence[int]) -> None:
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"cut-offs must be positive integers, got {k!r}")
    for b in budgets:
        budget_label(b)


def evaluate_stage(
    run: Run,
    examples: Sequence[Example],
    corpus: Corpus,
    ks: Sequence[int] = (1, 3, 5, 10),
    budgets: Sequence[int] = (8000,),
    inputs: Sequence[Run] | None = None,
    stage: str | None = None,
    conventions: Conventions = "rbench",
) -> StageMetrics:
    """Score one stage's ``run`` on ``examples`` (module docstring has the definitions).

    ``inputs`` are the runs that fed this stage (None: a retriever, fed by the
    whole corpus); they define ``Lost@k`` and :attr:`StageMetrics.lost`.
    ``conventions`` are the module and function levels' rules
    (:mod:`~retrieval_bench.metrics.retrieval.conventions`; the harness passes the
    config's). Pure: reads its inputs only.
    """
    _check_cutoffs(ks, budgets)
    ids = [ex.id for ex in examples]
    if len(set(ids)) != len(ids):
        raise ValueError("examples contain duplicate ids")
    empty: dict[str, float] = {}
    by_id = corpus.by_id
    n = len(examples)

    rankings: list[list[str]] = []
    chunk_lists: list[list[Chunk]] = []
    file_lists: list[list[str]] = []
    cut_rows: list[list[int]] = []
    unknown = 0
    for ex in examples:
        cids = ranked_ids(run.scores.get(ex.id, empty))
        chunks = [c for c in map(by_id.get, cids) if c is not None]
        files = list(dict.fromkeys(map(_PATH, chunks)))
        if len(chunks) < len(cids):  # unknown ids, or file:<path> ids (a file-level run)
            unknown += sum(1 for c in cids if c not in by_id and file_path(c) is None)
            files = ranked_files(cids, corpus)
            cids = _expanded(cids, corpus)
            chunks = [c for c in map(by_id.get, cids) if c is not None]
        rankings.append(cids)
        chunk_lists.append(chunks)
        file_lists.append(files)
        cut_rows.append(_budget_cuts(chunks, budgets))

    # file level: the ranking measures on file lists, plus F1
    file_judged = judge(file_lists, [dict.fromkeys(ex.gold_files, 1) for ex in examples])
    arrays: dict[str, FloatArray] = ranking_metrics(file_judged, ks)
    for k in ks:
        p, r = arrays[f"P@{k}"], arrays[f"R@{k}"]
        arrays[f"F1@{k}"] = _f1_array(p, r)

    # token budgets: set P/R/F1 of the covered files
    cuts = {b: [row[j] for row in cut_rows] for j, b in enumerate(budgets)}
    for b in budgets:
        lab = budget_label(b)
        prf = np.array(
            [
                set_prf(list(map(_PATH, chunks[:cut])), ex.gold_files)
                for ex, chunks, cut in zip(examples, chunk_lists, cuts[b], strict=True)
            ],
            dtype=np.float64,
        ).reshape(n, 3)
        arrays[f"P@{lab}"], arrays[f"R@{lab}"], arrays[f"F1@{lab}"] = prf.T

    # lost at this stage: what its input had and its top k files do not
    lost: dict[str, dict[int, list[str]]] = {}
    for k in ks:
        arrays[f"Lost@{k}"] = np.zeros(n, dtype=np.float64)
    corpus_files = set(corpus.paths) if inputs is None else None
    for i, ex in enumerate(examples):
        if not ex.gold_files:
            continue
        had = corpus_files if corpus_files is not None else input_files(inputs, ex.id, corpus)
        lost_k = {k: lost_at_stage(had, file_lists[i][:k], ex.gold_files) for k in ks}
        lost_k = {k: files for k, files in lost_k.items() if files}
        if lost_k:
            lost[ex.id] = lost_k
            for k, files in lost_k.items():
                arrays[f"Lost@{k}"][i] = len(files)

    per_query: dict[str, dict[str, float]] = {q: {} for q in ids}
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    _collect(per_query, sums, counts, ids, arrays)

    # chunk and line level, only for examples with gold spans
    span_idx = [i for i, ex in enumerate(examples) if ex.gold_spans]
    if span_idx:
        span_ids = [ids[i] for i in span_idx]
        sj = judge(
            [rankings[i] for i in span_idx],
            [span_qrels(examples[i].gold_spans, corpus) for i in span_idx],
        )
        span_arrays = ranking_metrics(sj, ks, prefix="chunk_")
        # top k ranks (an unknown id uses a rank, as in chunk_*), or what fits a budget
        tops: list[tuple[str, list[list[Chunk]]]] = [
            (str(k), [_known(rankings[i][:k], corpus) for i in span_idx]) for k in ks
        ]
        tops += [
            (budget_label(b), [chunk_lists[i][: cuts[b][i]] for i in span_idx]) for b in budgets
        ]
        for lab, top in tops:
            prf = np.array(
                [
                    line_prf(chunks, examples[i].gold_spans)
                    for i, chunks in zip(span_idx, top, strict=True)
                ],
                dtype=np.float64,
            ).reshape(len(span_idx), 3)
            for j, m in enumerate(("P", "R", "F1")):
                span_arrays[f"line_{m}@{lab}"] = prf[:, j]
        _collect(per_query, sums, counts, span_ids, span_arrays)

    # module and function level, only for examples with gold functions
    for group, arrays in entity_measures(examples, rankings, corpus, ks, conventions):
        _collect(per_query, sums, counts, group, arrays)

    return StageMetrics(
        stage=stage or run.name,
        per_query=per_query,
        means={m: sums[m] / counts[m] if counts[m] else float("nan") for m in sums},
        counts=counts,
        missing=[q for q in ids if q not in run.scores],
        no_gold=[ex.id for ex in examples if not ex.gold_files],
        unknown_chunks=unknown,
        lost=lost,
    )


def _f1_array(p: FloatArray, r: FloatArray) -> FloatArray:
    den = p + r
    out = np.zeros(len(p), dtype=np.float64)
    np.divide(2.0 * p * r, den, out=out, where=den > 0)
    return out


def _collect(
    per_query: dict[str, dict[str, float]],
    sums: dict[str, float],
    counts: dict[str, int],
    ids: Sequence[str],
    arrays: dict[str, FloatArray],
) -> None:
    """Spread metric arrays (aligned with ``ids``) into per-query dicts and totals."""
    for name, values in arrays.items():
        sums[name] = float(values.sum()) if len(values) else 0.0
        counts[name] = len(values)
        for q, v in zip(ids, values.tolist(), strict=True):
            per_query[q][name] = v
