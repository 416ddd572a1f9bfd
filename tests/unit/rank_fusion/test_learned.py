"""learned fusion: features, labels, fitting on synthetic runs, save/load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.retrieval.scoring import evaluate_stage
from retrieval_bench.rank_fusion.learned import (
    NOT_FITTED,
    LearnedFusion,
    candidate_features,
    feature_names,
    relevance_label,
)
from retrieval_bench.types import Chunk, Example, Run, Span

N_FILES = 40


def make_corpus(n_files: int = N_FILES) -> Corpus:
    """``n_files`` files of two chunks each: ``f07#0`` (lines 1-10), ``f07#1`` (11-20)."""
    chunks = [
        Chunk(
            f"f{i:02d}#{j}",
            f"f{i:02d}.py",
            10 * j + 1,
            10 * j + 10,
            "python",
            "function",
            None,
            "x",
            10,
        )
        for i in range(n_files)
        for j in range(2)
    ]
    return Corpus(root=Path("."), chunks=chunks)


def synthetic(seed: int, n_queries: int, prefix: str) -> tuple[list[Run], list[Example]]:
    """An informative source ('good': gold chunk in its top 3 80% of the time) and noise."""
    rng = np.random.default_rng(seed)
    all_ids = [f"f{i:02d}#{j}" for i in range(N_FILES) for j in range(2)]
    good: dict[str, dict[str, float]] = {}
    noise: dict[str, dict[str, float]] = {}
    examples = []
    for n in range(n_queries):
        q = f"{prefix}{n}"
        gold = int(rng.integers(N_FILES))
        examples.append(Example(q, "question", (f"f{gold:02d}.py",)))
        others = [c for c in all_ids if not c.startswith(f"f{gold:02d}#")]
        ids = [str(c) for c in rng.choice(others, size=10, replace=False)]
        if rng.random() < 0.8:
            ids.insert(int(rng.integers(3)), f"f{gold:02d}#{int(rng.integers(2))}")
        good[q] = {cid: 10.0 - r + float(rng.random()) * 0.5 for r, cid in enumerate(ids[:10])}
        nids = [str(c) for c in rng.choice(all_ids, size=10, replace=False)]
        noise[q] = {cid: float(rng.random()) * 30 for cid in nids}
    return [Run("good", good), Run("noise", noise)], examples


CORPUS = make_corpus()
TRAIN_RUNS, TRAIN = synthetic(1, 80, "tr")
TEST_RUNS, TEST = synthetic(2, 80, "te")


def fitted(runs: list[Run] = TRAIN_RUNS) -> LearnedFusion:
    model = LearnedFusion()
    model.fit(runs, TRAIN, CORPUS)
    return model


def test_features_hand_computed() -> None:
    a = Run("a", {"q": {"c1": 3.0, "c2": 1.0, "c3": 2.0}})
    b = Run("b", {"q": {"c2": 5.0}})
    cands, x = candidate_features({"a": a, "b": b}, ["a", "b", "gone"], "q")
    assert cands == ["c1", "c2", "c3"]
    assert feature_names(["a", "b", "gone"])[:4] == ["a:score", "a:rr", "a:present", "b:score"]
    expected = [
        # a: minmax, 1/rank, present | b | gone | n_sources
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        [0.0, 1 / 3, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 2.0],
        [0.5, 0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
    ]
    np.testing.assert_allclose(x, expected, atol=1e-12)
    assert candidate_features({"a": a}, ["a"], "other")[0] == []


def test_labels_file_level_and_span_level() -> None:
    file_ex = Example("q", "?", ("f01.py",))
    assert relevance_label(file_ex, "f01#0", CORPUS) == relevance_label(file_ex, "f01#1", CORPUS)
    assert relevance_label(file_ex, "f01#0", CORPUS) == 1.0
    assert relevance_label(file_ex, "f02#0", CORPUS) == 0.0
    assert relevance_label(file_ex, "unknown", CORPUS) == 0.0
    span_ex = Example("q", "?", ("f01.py",), gold_spans=(Span("f01.py", 12, 14),))
    assert relevance_label(span_ex, "f01#0", CORPUS) == 0.0  # lines 1-10
    assert relevance_label(span_ex, "f01#1", CORPUS) == 1.0  # lines 11-20


def test_informative_source_gets_the_larger_coefficient() -> None:
    model = fitted()
    coefs = model.coefficients()
    assert list(coefs) == model.feature_names
    assert coefs["good:score"] > 0
    assert coefs["good:score"] > 5 * abs(coefs["noise:score"])
    weights = model.source_weights()
    assert weights["good"] > weights["noise"]
    assert model.n_train == sum(
        len({c for r in TRAIN_RUNS for c in r.scores[q]}) for q in TRAIN_RUNS[0].query_ids()
    )


def test_fused_recall_at_least_the_best_single_source() -> None:
    model = fitted()
    fused = model.fuse(TEST_RUNS, k=20)
    assert fused.name == "learned"
    assert all(len(fused.scores[q]) <= 20 for q in fused.query_ids())
    for k in (1, 3, 5):
        metric = f"R@{k}"
        got = evaluate_stage(fused, TEST, CORPUS, ks=(k,), budgets=()).means[metric]
        singles = [
            evaluate_stage(r, TEST, CORPUS, ks=(k,), budgets=()).means[metric] for r in TEST_RUNS
        ]
        assert got >= max(singles), (metric, got, singles)


def test_scores_are_probabilities() -> None:
    fused = fitted().fuse(TEST_RUNS, k=5)
    values = [s for q in fused.query_ids() for s in fused.scores[q].values()]
    assert values and all(0.0 < s < 1.0 for s in values)


def test_deterministic_and_order_free() -> None:
    one, two = fitted(), fitted()
    assert one.coefficients() == two.coefficients()
    assert one.intercept == two.intercept
    swapped = fitted(list(reversed(TRAIN_RUNS)))
    assert swapped.coefficients() == pytest.approx(one.coefficients(), abs=1e-9)
    assert one.fuse(TEST_RUNS, 10).scores == one.fuse(list(reversed(TEST_RUNS)), 10).scores


def test_save_load_round_trip_gives_identical_scores() -> None:
    model = fitted()
    data = json.loads(json.dumps(model.to_dict()))
    loaded = LearnedFusion.from_dict(data)
    assert loaded.feature_names == model.feature_names
    assert loaded.coefficients() == model.coefficients()
    assert loaded.fuse(TEST_RUNS, 10).scores == model.fuse(TEST_RUNS, 10).scores


def test_missing_source_warns_and_counts_zero() -> None:
    model = fitted()
    with pytest.warns(UserWarning, match="noise"):
        run = model.fuse([TEST_RUNS[0]], 10)
    q = TEST[0].id
    cands, x = candidate_features({"good": TEST_RUNS[0]}, ["good", "noise"], q)
    assert run.scores[q] == dict(
        sorted(zip(cands, model.predict(x).tolist(), strict=True), key=lambda kv: (-kv[1], kv[0]))[
            :10
        ]
    )
    with pytest.warns(UserWarning, match="extra"):
        model.fuse([*TEST_RUNS, Run("extra", {q: {"f00#0": 1.0}})], 10)


def test_fuse_before_fit_is_a_config_error() -> None:
    model = registry.create("fusions", "learned")
    assert isinstance(model, LearnedFusion) and not model.fitted
    with pytest.raises(ConfigError, match="train_split") as err:
        model.fuse(TEST_RUNS, 10)
    assert str(err.value) == NOT_FITTED
    with pytest.raises(ConfigError, match="train_split"):
        model.coefficients()


def test_bad_training_data_and_inputs() -> None:
    with pytest.raises(ConfigError, match="relevant"):
        LearnedFusion().fit(TRAIN_RUNS, [Example(e.id, "?", ("nope.py",)) for e in TRAIN], CORPUS)
    with pytest.raises(ConfigError, match="distinct"):
        LearnedFusion().fit([TRAIN_RUNS[0], TRAIN_RUNS[0]], TRAIN, CORPUS)
    with pytest.raises(ConfigError, match="at least one"):
        LearnedFusion().fit([], TRAIN, CORPUS)
    with pytest.raises(ConfigError, match="C must be"):
        LearnedFusion(C=0)
    with pytest.raises(ConfigError) as err:
        LearnedFusion.Params.of({"C": -1.5})
    assert str(err.value) == "C: learned: C must be > 0, not -1.5"
    with pytest.raises(ConfigError, match="unknown parameter 'c'"):
        LearnedFusion(c=1.0)


def test_params_build_the_same_model() -> None:
    typed = LearnedFusion(LearnedFusion.Params(C=2, max_iter=50))
    made = registry.FUSIONS.create("learned", {"C": 2, "max_iter": 50})
    assert isinstance(made, LearnedFusion) and made.params == typed.params
    assert (typed.C, typed.max_iter, typed.random_state) == (2, 50, 0)
    typed.fit(TRAIN_RUNS, TRAIN, CORPUS)
    made.fit(TRAIN_RUNS, TRAIN, CORPUS)
    assert made.coefficients() == typed.coefficients()
    # an int C stays an int in the saved model, as it was given
    assert json.dumps(typed.to_dict()["params"]) == '{"C": 2, "max_iter": 50, "random_state": 0}'


def test_from_dict_rejects_malformed() -> None:
    data = fitted().to_dict()
    with pytest.raises(ConfigError, match="format"):
        LearnedFusion.from_dict({**data, "format": "other"})
    with pytest.raises(ConfigError, match="malformed"):
        LearnedFusion.from_dict({k: v for k, v in data.items() if k != "coef"})
    with pytest.raises(ConfigError, match="malformed"):
        LearnedFusion.from_dict({**data, "coef": data["coef"][:-1]})
    with pytest.raises(ConfigError, match="malformed saved model: tol: unknown parameter 'tol'"):
        LearnedFusion.from_dict({**data, "params": {**data["params"], "tol": 1e-4}})
