"""Differential test: our ranking metrics equal trec_eval (via pytrec_eval) to 1e-9.

Randomised, seeded, hypothesis-free: 200 queries per trial with varying list
lengths (including empty lists), qrels sizes (including queries with no
relevant documents), unjudged retrieved documents and relevant documents never
retrieved. Scores are distinct so trec_eval's tie-break (descending docno) and
ours (ascending id) cannot differ.
"""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_bench.metrics.retrieval import ranking as rk
from retrieval_bench.types import Run

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10, 20, 100)
TOL = 1e-9


def _random_case(
    seed: int, n_queries: int = 200, graded: bool = False
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    rng = np.random.default_rng(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for qi in range(n_queries):
        qid = f"q{qi}"
        pool = [f"src/mod{j}.py:{j * 7}-{j * 7 + 6}:{qi}" for j in range(int(rng.integers(1, 300)))]
        n_ret = int(rng.integers(0, min(len(pool), 150) + 1))
        order = rng.permutation(len(pool))
        retrieved = [pool[i] for i in order[:n_ret]]
        # distinct scores (permutation of a strided grid, with negatives)
        scores = rng.permutation(n_ret).astype(float) * 0.37 - 5.0
        run[qid] = {d: float(s) for d, s in zip(retrieved, scores, strict=True)}
        n_judged = int(rng.integers(0, min(len(pool), 40) + 1))
        judged = rng.choice(len(pool), size=n_judged, replace=False)
        levels = [0, 1, 2, 3] if graded else [0, 1]
        qrels[qid] = {pool[i]: int(rng.choice(levels)) for i in judged}
    return run, qrels


def _pytrec(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], level: int = 1):
    ks = ",".join(map(str, KS))
    measures = {f"P_{ks}", f"recall_{ks}", f"ndcg_cut_{ks}", f"success_{ks}", "recip_rank"}
    measures |= {"map", f"map_cut_{ks}"}
    ev = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level)
    return ev.evaluate(run)


def _ours(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], level: int = 1):
    qids, j = rk.judge_run(Run("r", run), qrels, relevance_level=level)
    out: dict[str, np.ndarray] = {
        "recip_rank": rk.reciprocal_rank(j),
        "map": rk.average_precision(j),
    }
    for k in KS:
        out[f"P_{k}"] = rk.precision(j, k)
        out[f"recall_{k}"] = rk.recall(j, k)
        out[f"ndcg_cut_{k}"] = rk.ndcg(j, k)
        out[f"success_{k}"] = rk.success(j, k)
        out[f"map_cut_{k}"] = rk.average_precision(j, k)
    return qids, out


def _compare(run, qrels, level: int = 1) -> int:
    ref = _pytrec(run, qrels, level)
    qids, ours = _ours(run, qrels, level)
    checked = 0
    for i, q in enumerate(qids):
        if q not in ref:
            # trec_eval skips queries without judgements or results; we score them 0
            assert not run.get(q) or not qrels[q]
            assert all(values[i] == 0.0 for values in ours.values())
            continue
        for measure, values in ours.items():
            assert values[i] == pytest.approx(ref[q][measure], abs=TOL), (q, measure)
            checked += 1
    return checked


@pytest.mark.parametrize("seed", range(5))
def test_binary_qrels_agree_with_trec_eval(seed: int) -> None:
    run, qrels = _random_case(seed)
    assert _compare(run, qrels) > 200 * 20


@pytest.mark.parametrize("seed", range(3))
def test_graded_qrels_agree_with_trec_eval(seed: int) -> None:
    run, qrels = _random_case(100 + seed, graded=True)
    assert _compare(run, qrels) > 0


@pytest.mark.parametrize("level", [2, 3])
def test_relevance_level_agrees_with_trec_eval(level: int) -> None:
    run, qrels = _random_case(200 + level, graded=True)
    assert _compare(run, qrels, level) > 0


def test_negative_judgements_count_as_zero_gain() -> None:
    run = {"q": {"a": 0.9, "c": 0.8, "b": 0.7, "d": 0.6, "z": 0.5, "e": 0.1}}
    qrels = {"q": {"a": 2, "b": 1, "c": 0, "d": -1, "e": 3}}
    assert _compare(run, qrels) == len(KS) * 5 + 2


def test_tie_break_differs_from_trec_eval_as_documented() -> None:
    """trec_eval ranks equal scores by descending docno; Run.ranked by ascending id."""
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    qrels = {"q": {"a": 1}}
    assert _pytrec(run, qrels)["q"]["recip_rank"] == pytest.approx(1 / 3)
    _, ours = _ours(run, qrels)
    assert ours["recip_rank"][0] == 1.0


def test_ranked_ids_matches_run_ranked() -> None:
    rng = np.random.default_rng(7)
    scores = {f"d{i}": float(rng.integers(0, 5)) for i in range(200)}  # many ties
    assert rk.ranked_ids(scores) == Run("r", {"q": scores}).ids("q")
