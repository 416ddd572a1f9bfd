"""BM25 against the ``rank_bm25`` reference on real code
(reference checks: docs/architecture.md#testing-conventions, docs/stages.md#bm25).

Corpus: this repository's own package plus ``fixtures/repos``, cut into
30-line windows, tokenised once by our retriever and fed to both libraries.

Findings (asserted below):

* ``BM25Retriever(method="atire", idf_method="robertson")`` is
  ``rank_bm25.BM25Okapi`` exactly (same k1, b) while no query term occurs in
  more than half of the chunks: scores agree to ~1e-15, rankings identical.
* bm25s ``method="robertson"`` is Okapi divided by ``(k1 + 1)`` (its tf part
  omits the factor): same rankings, scaled scores.
* ``method="bm25+"`` equals ``rank_bm25.BM25Plus`` with the same δ.
* Where they differ: a term in more than half of the chunks gets idf
  ``ε·mean(idf)`` in rank_bm25 but 0 in bm25s-robertson (the gap is exactly
  that term's ε·mean·tf-part); the default ``lucene`` idf
  ``log(1 + (N-n+.5)/(n+.5))`` re-weights every term, so scores are not
  proportional and rankings move; ``rank_bm25.BM25L`` multiplies each term
  score by an extra ``tf`` (and gives 0 to chunks without the term), which
  bm25s' ``bm25l`` does not.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import rank_bm25

from retrieval_bench.corpus import Corpus
from retrieval_bench.files import iter_source_files
from retrieval_bench.retrieval.bm25 import BM25Retriever
from tests.unit.retrieval.conftest import window_chunks

REPO = Path(__file__).resolve().parents[3]
QUERIES = {
    "q1": "parse json line from the log file",
    "q2": "HTTP server request handler middleware",
    "q3": "chunk tokenizer identifier camelCase",
    "q4": "payment order total price currency",
    "q5": "ignore rules gitignore pathspec",
    "q6": "registry register factory plugin entry points",
    "q7": "user authentication token permissions",
    "q8": "render table writer csv output",
}
K = 20


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    chunks = []
    for sub in ("retrieval_bench", "fixtures/repos"):
        root = REPO / sub
        if root.is_dir():
            for source in iter_source_files(root):
                chunks.extend(window_chunks(source, 30, prefix=sub + "/"))
    assert len(chunks) > 100, "the reference corpus should be a real codebase"
    return Corpus(REPO, chunks)


def _index(corpus: Corpus, **params: object) -> tuple[BM25Retriever, list[list[str]]]:
    retriever = BM25Retriever(dtype="float64", **params)  # type: ignore[arg-type]
    retriever.index(corpus)
    return retriever, [retriever.doc_tokens(c) for c in corpus.chunks]


def _doc_freq(docs: list[list[str]]) -> dict[str, int]:
    df: dict[str, int] = {}
    for doc in docs:
        for t in set(doc):
            df[t] = df.get(t, 0) + 1
    return df


def _ref_top(ids: list[str], scores: np.ndarray, mask: np.ndarray, k: int) -> list[str]:
    """Reference ranking: candidates by score (to 1e-9), ties by chunk id."""
    ranked = sorted((-round(float(scores[i]), 9), ids[i]) for i in np.flatnonzero(mask))
    return [cid for _, cid in ranked[:k]]


def _contains_any(docs: list[list[str]], tokens: list[str]) -> np.ndarray:
    wanted = set(tokens)
    return np.array([bool(wanted.intersection(d)) for d in docs])


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.4)])
def test_atire_with_robertson_idf_equals_bm25okapi(corpus: Corpus, k1: float, b: float) -> None:
    ours, docs = _index(corpus, method="atire", idf_method="robertson", k1=k1, b=b)
    ref = rank_bm25.BM25Okapi(docs, k1=k1, b=b)
    df, n = _doc_freq(docs), len(docs)
    ids = [c.id for c in corpus.chunks]
    position = {cid: i for i, cid in enumerate(ids)}
    run = ours.search(QUERIES, K)
    for qid, text in QUERIES.items():
        q = ours.tokenizer(text)
        assert all(df.get(t, 0) <= n / 2 for t in q), "precondition: no negative idf"
        expected = ref.get_scores(q)
        got = ours.scores(text)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
        assert float(np.max(np.abs(got - expected))) < 1e-12
        top = _ref_top(ids, expected, _contains_any(docs, q), K)
        assert run.ids(qid) == top
        for cid, score in run.ranked(qid):
            assert score == pytest.approx(expected[position[cid]], abs=1e-6)


def test_robertson_is_okapi_over_k1_plus_1(corpus: Corpus) -> None:
    ours, docs = _index(corpus, method="robertson")
    ref = rank_bm25.BM25Okapi(docs)
    for text in QUERIES.values():
        np.testing.assert_allclose(
            ours.scores(text) * (1.5 + 1), ref.get_scores(ours.tokenizer(text)), atol=1e-9
        )


def test_bm25plus_equals_rank_bm25_bm25plus(corpus: Corpus) -> None:
    ours, docs = _index(corpus, method="bm25+", delta=0.5)
    ref = rank_bm25.BM25Plus(docs, delta=0.5)
    ids = [c.id for c in corpus.chunks]
    run = ours.search(QUERIES, K)
    for qid, text in QUERIES.items():
        q = ours.tokenizer(text)
        expected = ref.get_scores(q)
        np.testing.assert_allclose(ours.scores(text), expected, rtol=0, atol=1e-9)
        assert run.ids(qid) == _ref_top(ids, expected, _contains_any(docs, q), K)


def test_negative_idf_is_where_okapi_and_robertson_part(corpus: Corpus) -> None:
    """Every chunk's path says ``retrieval_bench``: that term's idf goes negative."""
    sub = Corpus(REPO, [c for c in corpus.chunks if c.path.startswith("retrieval_bench/")])
    ours, docs = _index(sub, method="atire", idf_method="robertson")
    ref = rank_bm25.BM25Okapi(docs)
    text = "retrieval bench corpus chunk"
    q = ours.tokenizer(text)
    df, n = _doc_freq(docs), len(docs)
    common = [t for t in q if df.get(t, 0) > n / 2]
    assert common == ["retrieval", "bench"]
    got, expected = ours.scores(text), ref.get_scores(q)
    assert float(np.max(np.abs(got - expected))) > 0.01  # they really differ …
    # … by exactly the ε·mean(idf) floor that rank_bm25 gives those terms (bm25s: 0).
    eps_idf = ref.epsilon * ref.average_idf
    lengths = np.array([len(d) for d in docs])
    norm = ref.k1 * (1 - ref.b + ref.b * lengths / ref.avgdl)
    gap = np.zeros(n)
    for t in common:
        tf = np.array([d.count(t) for d in docs])
        gap += eps_idf * tf * (ref.k1 + 1) / (tf + norm)
    np.testing.assert_allclose(expected - got, gap, atol=1e-9)


def test_default_lucene_matches_hand_formula_not_okapi(corpus: Corpus) -> None:
    ours, docs = _index(corpus)  # method="lucene", k1=1.5, b=0.75
    df, n = _doc_freq(docs), len(docs)
    lengths = np.array([len(d) for d in docs])
    avgdl = lengths.mean()
    okapi = rank_bm25.BM25Okapi(docs)
    moved = 0
    for text in QUERIES.values():
        q = ours.tokenizer(text)
        hand = np.zeros(n)
        for t in q:
            if t not in df:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            tf = np.array([d.count(t) for d in docs])
            hand += idf * tf / (tf + 1.5 * (1 - 0.75 + 0.75 * lengths / avgdl))
        np.testing.assert_allclose(ours.scores(text), hand, rtol=0, atol=1e-9)
        ref = okapi.get_scores(q)
        both = (hand > 0) & (ref > 0)
        ratio = ref[both] / hand[both]
        if len({t for t in q if t in df}) > 1:
            assert ratio.max() - ratio.min() > 1e-3, "lucene and okapi are not proportional"
        top_ours = list(np.argsort(-hand, kind="stable")[:10])
        top_ref = list(np.argsort(-ref, kind="stable")[:10])
        moved += top_ours != top_ref
    print(f"lucene vs BM25Okapi: top-10 differs for {moved}/{len(QUERIES)} queries")


def test_rank_bm25_bm25l_multiplies_by_tf(corpus: Corpus) -> None:
    ours, docs = _index(corpus, method="bm25l", delta=0.5)
    ref = rank_bm25.BM25L(docs, delta=0.5)
    t = "registry"
    got, expected = ours.scores(t), ref.get_scores([t])
    tf = np.array([d.count(t) for d in docs])
    has = tf > 0
    assert has.any() and (~has).any()
    np.testing.assert_allclose(expected[has], tf[has] * got[has], rtol=1e-12)
    assert np.all(expected[~has] == 0) and np.all(got[~has] > 0)


def test_float32_default_close_to_float64(corpus: Corpus) -> None:
    f64, _ = _index(corpus)
    f32 = BM25Retriever()
    f32.index(corpus)
    for text in QUERIES.values():
        np.testing.assert_allclose(f32.scores(text), f64.scores(text), rtol=1e-5, atol=1e-5)
