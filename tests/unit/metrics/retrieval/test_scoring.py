"""Hand-computed cases for every retrieval metric (docs/metrics.md#retrieval-metrics),
ranx/pyserini style."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.corpus import Corpus
from retrieval_bench.metrics.retrieval import ranking as rk
from retrieval_bench.metrics.retrieval.scoring import (
    budget_label,
    evaluate_stage,
    f1_score,
    files_within_budget,
    lost_at_stage,
    set_prf,
)
from retrieval_bench.metrics.retrieval.spans import line_prf, merge_intervals, overlap, span_qrels
from retrieval_bench.runs.lifting import files_run, ranked_files
from retrieval_bench.types import Chunk, Example, Run, Span

L2_3 = 1 / math.log2(3)  # discount at rank 2
L2_5 = 1 / math.log2(5)  # discount at rank 4


def _chunk(cid: str, path: str, start: int, end: int, n_tokens: int) -> Chunk:
    return Chunk(cid, path, start, end, "python", "function", None, "", n_tokens)


@pytest.fixture()
def corpus() -> Corpus:
    return Corpus(
        root=Path("."),
        chunks=[
            _chunk("a1", "a.py", 1, 10, 100),
            _chunk("a2", "a.py", 11, 20, 100),
            _chunk("b1", "b.py", 1, 30, 300),
            _chunk("c1", "c.py", 1, 5, 50),
            _chunk("d1", "d.py", 1, 40, 500),
        ],
    )


# --------------------------------------------------------------------------- ranking.py


def _one(ranking: list[str], qrels: dict[str, int]) -> rk.Judged:
    return rk.judge([ranking], [qrels])


class TestRankingByHand:
    """Ranked d1..d5, relevant {d2, d4, d6}; d6 is never retrieved."""

    j = _one(["d1", "d2", "d3", "d4", "d5"], {"d2": 1, "d4": 1, "d6": 1, "d1": 0})

    def test_precision(self) -> None:
        assert rk.precision(self.j, 1)[0] == 0.0
        assert rk.precision(self.j, 3)[0] == pytest.approx(1 / 3)
        assert rk.precision(self.j, 5)[0] == pytest.approx(2 / 5)
        assert rk.precision(self.j, 10)[0] == pytest.approx(2 / 10)  # k > list length

    def test_recall(self) -> None:
        assert rk.recall(self.j, 3)[0] == pytest.approx(1 / 3)
        assert rk.recall(self.j, 5)[0] == pytest.approx(2 / 3)
        assert rk.recall(self.j)[0] == pytest.approx(2 / 3)

    def test_reciprocal_rank(self) -> None:
        assert rk.reciprocal_rank(self.j)[0] == 0.5
        assert rk.reciprocal_rank(self.j, 1)[0] == 0.0
        assert rk.reciprocal_rank(self.j, 2)[0] == 0.5

    def test_average_precision(self) -> None:
        assert rk.average_precision(self.j)[0] == pytest.approx((1 / 2 + 2 / 4) / 3)
        assert rk.average_precision(self.j, 3)[0] == pytest.approx((1 / 2) / 3)

    def test_ndcg(self) -> None:
        ideal5 = 1 + L2_3 + 1 / math.log2(4)
        assert rk.ndcg(self.j, 5)[0] == pytest.approx((L2_3 + L2_5) / ideal5)
        assert rk.ndcg(self.j, 1)[0] == 0.0
        assert rk.ndcg(self.j, 2)[0] == pytest.approx(L2_3 / (1 + L2_3))

    def test_success_and_all_found(self) -> None:
        assert rk.success(self.j, 1)[0] == 0.0
        assert rk.success(self.j, 2)[0] == 1.0
        assert rk.all_found(self.j, 5)[0] == 0.0  # d6 missing
        done = _one(["x", "a"], {"a": 1})
        assert rk.all_found(done, 1)[0] == 0.0
        assert rk.all_found(done, 2)[0] == 1.0

    def test_graded_ndcg(self) -> None:
        j = _one(["a", "b", "c"], {"a": 1, "b": 0, "c": 3})
        dcg = 1 + 3 / math.log2(4)
        assert rk.ndcg(j, 3)[0] == pytest.approx(dcg / (3 + L2_3))

    def test_bad_cutoff(self) -> None:
        for k in (0, -1):
            with pytest.raises(ValueError, match="positive integer"):
                rk.precision(self.j, k)


def test_ranking_empty_inputs() -> None:
    j = rk.judge([[], ["a"]], [{"a": 1}, {}])
    for arr in rk.ranking_metrics(j, (1, 5)).values():
        assert arr.tolist() == [0.0, 0.0]
    none = rk.judge([], [])
    assert all(len(a) == 0 for a in rk.ranking_metrics(none).values())


def test_judge_run_scores_missing_queries_zero() -> None:
    qids, j = rk.judge_run(Run("r", {"q1": {"a": 1.0}}), {"q1": {"a": 1}, "q2": {"a": 1}})
    assert qids == ["q1", "q2"]
    assert rk.reciprocal_rank(j).tolist() == [1.0, 0.0]


def test_judge_scores_equals_judge_of_ranked_ids_with_ties() -> None:
    rng = np.random.default_rng(11)
    scores = [
        {f"d{i}": float(rng.integers(0, 4)) for i in range(int(rng.integers(0, 30)))}
        for _ in range(40)
    ]
    qrels = [{f"d{i}": int(rng.integers(0, 3)) for i in range(0, 40, 3)} for _ in range(40)]
    a = rk.judge_scores(scores, qrels)
    b = rk.judge([rk.ranked_ids(s) for s in scores], qrels)
    for field in ("qidx", "rank", "gain", "relevant", "n_rel", "ideal_gain"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    with pytest.raises(ValueError):
        rk.judge_scores(scores, qrels[:-1])


def test_ranking_metrics_names() -> None:
    names = set(rk.ranking_metrics(_one(["a"], {"a": 1}), (5,), prefix="chunk_"))
    assert names == {f"chunk_{m}@5" for m in ("P", "R", "Hit", "Acc", "nDCG")} | {
        "chunk_MRR",
        "chunk_MAP",
    }


# --------------------------------------------------------------------------- helpers


def test_f1_and_set_prf() -> None:
    assert f1_score(0.0, 0.0) == 0.0
    assert f1_score(1 / 3, 1 / 2) == pytest.approx(0.4)  # 2PR/(P+R), not PR/(P+R)
    assert set_prf(["a", "b"], ["b", "c", "d"]) == pytest.approx((0.5, 1 / 3, 0.4))
    assert set_prf([], ["a"]) == (0.0, 0.0, 0.0)
    assert set_prf(["a"], []) == (0.0, 0.0, 0.0)


def test_budget_label() -> None:
    assert [budget_label(b) for b in (8000, 13000, 27000, 8192)] == ["8k", "13k", "27k", "8.192k"]
    with pytest.raises(ValueError):
        budget_label(0)


def test_ranked_files_dedupes_keeping_best_rank(corpus: Corpus) -> None:
    assert ranked_files(["a2", "b1", "a1", "zz", "c1"], corpus) == ["a.py", "b.py", "c.py"]


def test_budget_stops_at_first_overflow(corpus: Corpus) -> None:
    # a2 100, b1 300 (400), a1 100 (500 > 450: stop). c1 (50) would fit but is not taken.
    order = ["a2", "b1", "a1", "c1", "d1"]
    assert files_within_budget(order, corpus, 450) == ["a.py", "b.py"]
    assert files_within_budget(order, corpus, 400) == ["a.py", "b.py"]  # exactly full
    assert files_within_budget(order, corpus, 99) == []
    assert files_within_budget(["zz", *order], corpus, 100) == ["a.py"]  # unknown skipped


def test_lost_at_stage() -> None:
    # input had x, g1, g2; the stage's top files keep g2: g1 is lost, g3 was never there
    assert lost_at_stage({"x", "g1", "g2"}, ["g2", "y"], ["g1", "g2", "g3"]) == ["g1"]
    assert lost_at_stage(set(), ["g1"], ["g1"]) == []
    assert lost_at_stage({"g2", "g1"}, [], ["g2", "g1", "g2"]) == ["g2", "g1"]  # gold order


def test_files_run(corpus: Corpus) -> None:
    fr = files_run(Run("dense", {"q": {"a2": 0.9, "b1": 0.8, "a1": 0.95}}), corpus)
    assert fr.name == "dense:files"
    assert fr.scores == {"q": {"a.py": 0.95, "b.py": 0.8}}


def test_intervals() -> None:
    assert merge_intervals([(5, 9), (1, 3), (4, 4), (20, 22), (21, 25)]) == [(1, 9), (20, 25)]
    assert overlap([(1, 9), (20, 25)], [(5, 21)]) == 5 + 2
    assert overlap([], [(1, 2)]) == 0


def test_line_prf(corpus: Corpus) -> None:
    a1, a2, b1 = corpus.get(["a1", "a2", "b1"])
    spans = [Span("a.py", 12, 15), Span("a.py", 14, 16)]  # overlapping spans: 5 lines
    assert line_prf([a1], spans) == (0.0, 0.0, 0.0)
    p, r, f = line_prf([a1, a2], spans)
    assert (p, r) == pytest.approx((5 / 20, 1.0))
    assert f == pytest.approx(2 * 0.25 / 1.25)
    p, r, _ = line_prf([a2, a2, b1], spans)  # duplicate chunk lines counted once
    assert (p, r) == pytest.approx((5 / 40, 1.0))
    assert line_prf([], spans) == (0.0, 0.0, 0.0)


def test_span_qrels(corpus: Corpus) -> None:
    assert span_qrels([Span("a.py", 10, 11)], corpus) == {"a1": 1, "a2": 1}
    assert span_qrels([Span("b.py", 31, 40), Span("zz.py", 1, 2)], corpus) == {}


# --------------------------------------------------------------------------- evaluate_stage


@pytest.fixture()
def examples() -> list[Example]:
    return [
        Example("q1", "where is b?", ("b.py", "d.py")),
        Example("q2", "span", ("a.py",), gold_spans=(Span("a.py", 12, 15),)),
        Example("q3", "missing from run", ("c.py",)),
        Example("q4", "no gold", ()),
    ]


@pytest.fixture()
def run() -> Run:
    return Run(
        "dense",
        {
            "q1": {"a2": 0.9, "b1": 0.8, "a1": 0.7, "c1": 0.6, "d1": 0.5, "ghost": 0.65},
            "q2": {"a1": 0.9, "a2": 0.8},
            "q4": {"a1": 1.0},
        },
    )


def test_evaluate_stage_file_level(run: Run, examples: list[Example], corpus: Corpus) -> None:
    sm = evaluate_stage(run, examples, corpus, ks=(1, 3, 5), budgets=(450, 1000))
    q1 = sm.per_query["q1"]  # files: a, b, c, d ; gold b, d
    assert q1["P@1"] == 0.0
    assert q1["P@3"] == pytest.approx(1 / 3)
    assert q1["R@3"] == pytest.approx(1 / 2)
    assert q1["F1@3"] == pytest.approx(0.4)
    assert q1["Acc@3"] == 0.0
    assert q1["Hit@3"] == 1.0
    assert q1["P@5"] == pytest.approx(2 / 5)
    assert q1["R@5"] == 1.0
    assert q1["F1@5"] == pytest.approx(2 * 0.4 / 1.4)
    assert q1["Acc@5"] == 1.0
    assert q1["MRR"] == 0.5
    assert q1["MAP"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert q1["nDCG@3"] == pytest.approx(L2_3 / (1 + L2_3))
    assert q1["nDCG@5"] == pytest.approx((L2_3 + L2_5) / (1 + L2_3))
    # budgets: 450 → a2, b1 (a1 overflows: stop) ; 1000 → a2, b1, a1, c1 (ghost skipped)
    assert (q1["P@0.45k"], q1["R@0.45k"], q1["F1@0.45k"]) == pytest.approx((0.5, 0.5, 0.5))
    assert (q1["P@1k"], q1["R@1k"]) == pytest.approx((1 / 3, 1 / 2))
    assert sm.unknown_chunks == 1
    assert "line_F1@3" not in q1  # no spans


def test_evaluate_stage_missing_and_no_gold(
    run: Run, examples: list[Example], corpus: Corpus
) -> None:
    sm = evaluate_stage(run, examples, corpus, ks=(1, 3), budgets=(8000,))
    assert sm.missing == ["q3"] and sm.n_missing == 1
    assert sm.no_gold == ["q4"]
    assert sm.n_queries == 4
    for q in ("q3", "q4"):
        assert {v for m, v in sm.per_query[q].items() if not m.startswith("Lost@")} == {0.0}
    # an unanswered query lost its gold (a retriever's input is the corpus); no gold, no loss
    assert (sm.per_query["q3"]["Lost@1"], sm.per_query["q4"]["Lost@1"]) == (1.0, 0.0)
    # means include the zero-scored queries
    assert sm.counts["MRR"] == 4
    assert sm.means["MRR"] == pytest.approx((0.5 + 1.0 + 0 + 0) / 4)
    assert sm.counts["chunk_MRR"] == 1 and sm.means["chunk_MRR"] == 0.5
    assert sm.stage == "dense"


def test_evaluate_stage_span_level(run: Run, examples: list[Example], corpus: Corpus) -> None:
    sm = evaluate_stage(run, examples, corpus, ks=(1, 3), budgets=(150, 8000))
    q2 = sm.per_query["q2"]  # chunks a1 (1-10), a2 (11-20); gold lines 12-15 → a2 relevant
    assert q2["chunk_P@1"] == 0.0
    assert q2["chunk_R@3"] == 1.0
    assert q2["chunk_MRR"] == 0.5
    assert q2["chunk_nDCG@3"] == pytest.approx(L2_3)
    assert (q2["line_P@1"], q2["line_R@1"], q2["line_F1@1"]) == (0.0, 0.0, 0.0)
    assert (q2["line_P@3"], q2["line_R@3"]) == pytest.approx((4 / 20, 1.0))
    assert q2["line_F1@3"] == pytest.approx(2 * 0.2 / 1.2)
    assert q2["line_R@0.15k"] == 0.0  # only a1 fits 150 tokens
    assert q2["line_R@8k"] == 1.0
    assert q2["MRR"] == 1.0  # file level: a.py first
    assert "chunk_MRR" not in sm.per_query["q1"]


def test_evaluate_stage_lost(corpus: Corpus) -> None:
    examples = [Example("q", "", ("b.py", "d.py", "c.py"))]
    parent = Run("fused", {"q": {"b1": 0.9, "d1": 0.8, "a1": 0.7, "c1": 0.6}})
    child = Run("rerank", {"q": {"a1": 0.9, "d1": 0.8, "b1": 0.1}})
    sm = evaluate_stage(child, examples, corpus, ks=(2, 4), budgets=(), inputs=[parent])
    # the input had b, d, c; the top 2 files (a, d) lack b and c, the top 4 (a, d, b) lack c
    assert sm.lost["q"] == {2: ["b.py", "c.py"], 4: ["c.py"]}
    assert sm.per_query["q"]["Lost@2"] == 2.0
    assert sm.per_query["q"]["Lost@4"] == 1.0
    # a retriever (no inputs) is fed by the corpus: every gold file it does not rank is lost
    alone = evaluate_stage(child, examples, corpus, ks=(2,), budgets=())
    assert alone.lost["q"] == {2: ["b.py", "c.py"]}
    # two inputs: their union; nobody had c.py, so nothing of it is lost
    p1, p2 = Run("p1", {"q": {"b1": 1.0}}), Run("p2", {"q": {"d1": 1.0}})
    fused = evaluate_stage(Run("f", {"q": {"d1": 1.0}}), examples, corpus, ks=(1,), inputs=[p1, p2])
    assert fused.lost["q"] == {1: ["b.py"]}


def test_lost_counts_files_not_chunks(corpus: Corpus) -> None:
    """A file ranked 2nd by its best chunk is in the top 2 files even when that
    chunk is 3rd: it is not lost (the top-k *chunks* used to be read instead)."""
    examples = [Example("q", "", ("b.py",))]
    run = Run("r", {"q": {"a1": 0.9, "a2": 0.8, "b1": 0.7}})
    sm = evaluate_stage(run, examples, corpus, ks=(2,), budgets=(), inputs=[run])
    assert sm.per_query["q"]["R@2"] == 1.0
    assert sm.per_query["q"]["Lost@2"] == 0.0 and "q" not in sm.lost


def test_missing_gold_is_never_lost(corpus: Corpus) -> None:
    examples = [Example("q", "", ("gone.py", "b.py"))]
    sm = evaluate_stage(Run("r", {"q": {"a1": 1.0}}), examples, corpus, ks=(1,), budgets=())
    assert sm.lost["q"] == {1: ["b.py"]}


def test_evaluate_stage_empty_run_and_no_examples(examples: list[Example], corpus: Corpus) -> None:
    sm = evaluate_stage(Run("empty"), examples, corpus, ks=(1,), budgets=(8000,))
    assert sm.n_missing == 4
    scores = [v for q in sm.per_query.values() for m, v in q.items() if not m.startswith("Lost@")]
    assert set(scores) == {0.0}
    none = evaluate_stage(Run("empty"), [], corpus)
    assert none.n_queries == 0
    assert all(math.isnan(v) for v in none.means.values())


def test_evaluate_stage_rejects_bad_input(
    run: Run, examples: list[Example], corpus: Corpus
) -> None:
    with pytest.raises(ValueError, match="duplicate"):
        evaluate_stage(run, [examples[0], examples[0]], corpus)
    with pytest.raises(ValueError, match="positive"):
        evaluate_stage(run, examples, corpus, ks=(0,))
    with pytest.raises(ValueError, match="budget"):
        evaluate_stage(run, examples, corpus, budgets=(-5,))


def test_file_metrics_equal_ranking_on_file_lists(corpus: Corpus) -> None:
    """File-level numbers are the trec_eval measures of the file ranking."""
    rng = np.random.default_rng(3)
    ids = [c.id for c in corpus.chunks]
    paths = corpus.paths
    runs: dict[str, dict[str, float]] = {}
    exs = []
    for i in range(50):
        chosen = rng.permutation(ids)[: rng.integers(0, len(ids) + 1)]
        runs[f"q{i}"] = {c: float(s) for c, s in zip(chosen, rng.random(len(chosen)), strict=True)}
        gold = tuple(rng.permutation(paths)[: rng.integers(1, 3)])
        exs.append(Example(f"q{i}", "", gold))
    sm = evaluate_stage(Run("r", runs), exs, corpus, ks=(1, 2, 3))
    fr = files_run(Run("r", runs), corpus)
    qids, j = rk.judge_run(fr, {e.id: dict.fromkeys(e.gold_files, 1) for e in exs})
    for k in (1, 2, 3):
        ours = [sm.per_query[q][f"nDCG@{k}"] for q in qids]
        assert ours == pytest.approx(rk.ndcg(j, k).tolist(), abs=1e-12)
    assert [sm.per_query[q]["MRR"] for q in qids] == pytest.approx(rk.reciprocal_rank(j).tolist())


def test_unknown_chunk_takes_a_rank_at_chunk_and_line_level(corpus: Corpus) -> None:
    ex = [Example("q", "", ("a.py",), gold_spans=(Span("a.py", 12, 15),))]
    run = Run("r", {"q": {"ghost": 0.9, "a2": 0.8}})
    q = evaluate_stage(run, ex, corpus, ks=(1, 2), budgets=(100,)).per_query["q"]
    assert (q["chunk_P@1"], q["line_R@1"], q["P@1"]) == (0.0, 0.0, 1.0)  # files skip it
    assert (q["chunk_R@2"], q["line_R@2"], q["line_R@0.1k"]) == (1.0, 1.0, 1.0)


def test_metric_names(corpus: Corpus) -> None:
    ex = [Example("s", "", ("a.py",), gold_spans=(Span("a.py", 1, 2),))]
    sm = evaluate_stage(Run("r"), ex, corpus, ks=(5,), budgets=(8000,), inputs=[Run("p")])
    assert list(sm.per_query["s"]) == [
        *("P@5", "R@5", "Hit@5", "Acc@5", "nDCG@5", "MRR", "MAP", "F1@5"),
        *("P@8k", "R@8k", "F1@8k", "Lost@5"),
        *("chunk_P@5", "chunk_R@5", "chunk_Hit@5", "chunk_Acc@5", "chunk_nDCG@5"),
        *("chunk_MRR", "chunk_MAP"),
        *("line_P@5", "line_R@5", "line_F1@5", "line_P@8k", "line_R@8k", "line_F1@8k"),
    ]
