"""Weight optimisation on a dev split, and the ``optimized`` fusion rung."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.normsum import NormSumFusion
from retrieval_bench.rank_fusion.optimize import (
    K_RRF_GRID,
    OptimizedFusion,
    metric_cutoffs,
    optimize_weights,
    score_run,
)
from retrieval_bench.rank_fusion.rrf import RRFFusion
from retrieval_bench.types import Chunk, Example, Run


def make_corpus(ids: list[str]) -> Corpus:
    """One single-chunk file per id: chunk ``x`` lives in ``x.py``."""
    return Corpus(
        root=Path("."),
        chunks=[Chunk(i, f"{i}.py", 1, 5, "python", "function", None, "x", 5) for i in ids],
    )


# 'good' ranks the gold chunk g<n> first; 'bad' ranks a decoy a<n> first, whose id
# sorts before g<n>, so equal-weight RRF/normsum ties go to the decoy: R@1 = 0.
N = 6
GOOD = Run("good", {f"q{n}": {f"g{n}": 1.0, f"h{n}": 0.5} for n in range(N)})
BAD = Run("bad", {f"q{n}": {f"a{n}": 1.0, f"b{n}": 0.5} for n in range(N)})
DEV = [Example(f"q{n}", "?", (f"g{n}.py",)) for n in range(N)]
CORPUS = make_corpus([f"{p}{n}" for p in "abgh" for n in range(N)])


def test_rrf_finds_the_known_best_weights() -> None:
    res = optimize_weights(RRFFusion, [GOOD, BAD], DEV, CORPUS, metric="R@1")
    assert res.baseline_score == 0.0
    assert res.score == 1.0 and res.improvement == 1.0
    # traced by hand: sweep 1 tries good = 0, 0.25, 0.5 (no gain), 2 (gold wins) and keeps
    # it; bad = 0 ... 4 never beats 1.0; sweep 2 finds nothing new and stops.
    assert res.weights == {"good": 2.0, "bad": 1.0}
    assert res.params == {} and res.metric == "R@1"
    assert res.trials[0].weights == {"good": 1.0, "bad": 1.0}
    assert res.trials[0].score == 0.0
    assert [t.weights["good"] for t in res.trials[:5]] == [1.0, 0.0, 0.25, 0.5, 2.0]
    keys = [tuple(t.weights.values()) for t in res.trials]
    assert len(keys) == len(set(keys))  # each configuration evaluated once
    assert all(any(w > 0 for w in t.weights.values()) for t in res.trials)


def test_normsum_finds_the_known_best_weights() -> None:
    factory = partial(NormSumFusion, norm="minmax")
    res = optimize_weights(factory, [BAD, GOOD], DEV, CORPUS, metric="MRR", grid=(0, 1, 3))
    # sources in the order given: bad → 0 makes gold first everywhere (MRR 1)
    assert res.baseline_score == pytest.approx(0.5)
    assert res.score == 1.0
    assert res.weights == {"bad": 0.0, "good": 1.0}


def test_k_rrf_is_searched_as_a_coordinate() -> None:
    # A: x first, y 20th ; B: z first, y 20th.  x beats y iff k_rrf < 18 (x ties z, x < z by id)
    fill_a = {f"m{i:02d}": 1.0 - i / 100 for i in range(2, 20)}
    fill_b = {f"n{i:02d}": 1.0 - i / 100 for i in range(2, 20)}
    a = Run("a", {"q": {"x": 2.0, **fill_a, "y": 0.0}})
    b = Run("b", {"q": {"z": 2.0, **fill_b, "y": 0.0}})
    corpus = make_corpus(["x", "y", "z", *fill_a, *fill_b])
    dev = [Example("q", "?", ("x.py",))]
    res = optimize_weights(
        RRFFusion, [a, b], dev, corpus, metric="R@1", grid=(1,), param_grid={"k_rrf": K_RRF_GRID}
    )
    assert (res.baseline_score, res.score, res.params) == (0.0, 1.0, {"k_rrf": 10.0})
    fusion = OptimizedFusion(metric="R@1", grid=(1,), k_rrf_grid=K_RRF_GRID)
    fusion.fit([a, b], dev, corpus)
    assert fusion.best is not None and fusion.best.params == {"k_rrf": 10.0}
    assert fusion.fuse([a, b], 1).ids("q") == ["x"]


def random_dev(seed: int) -> tuple[list[Run], list[Example], Corpus]:
    rng = np.random.default_rng(seed)
    ids = [f"c{i:02d}" for i in range(30)]
    runs = [
        Run(
            name,
            {
                f"q{n}": {str(c): float(rng.random()) for c in rng.choice(ids, 8, False)}
                for n in range(12)
            },
        )
        for name in ("dense", "bm25", "exact")
    ]
    dev = [Example(f"q{n}", "?", (f"{ids[int(rng.integers(30))]}.py",)) for n in range(12)]
    return runs, dev, make_corpus(ids)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("base", ["rrf", "normsum"])
def test_never_worse_than_baseline_and_reproducible(seed: int, base: str) -> None:
    runs, dev, corpus = random_dev(seed)
    factory = RRFFusion if base == "rrf" else NormSumFusion
    res = optimize_weights(factory, runs, dev, corpus, metric="nDCG@5", k=20)
    assert res.score >= res.baseline_score
    assert res.score == max(t.score for t in res.trials)
    equal = factory().fuse(runs, 20)
    assert score_run(equal, dev, corpus, "nDCG@5") == res.baseline_score
    tuned = factory(weights=res.weights).fuse(runs, 20)
    assert score_run(tuned, dev, corpus, "nDCG@5") == res.score
    again = optimize_weights(factory, runs, dev, corpus, metric="nDCG@5", k=20)
    assert (again.weights, again.score, len(again.trials)) == (
        res.weights,
        res.score,
        len(res.trials),
    )


def test_optimized_fusion_fit_and_fuse() -> None:
    fusion = registry.create("fusions", "optimized", base="rrf", metric="R@1")
    assert isinstance(fusion, OptimizedFusion)
    with pytest.raises(ConfigError, match="train_split"):
        fusion.fuse([GOOD, BAD], 5)
    fusion.fit([GOOD, BAD], DEV, CORPUS)
    assert fusion.best is not None and fusion.best.weights == {"good": 2.0, "bad": 1.0}
    run = fusion.fuse([GOOD, BAD], 3)
    assert run.name == "optimized"
    expected = RRFFusion(weights=fusion.best.weights, name="optimized").fuse([GOOD, BAD], 3)
    assert run.scores == expected.scores
    assert all(run.ids(q)[0] == f"g{q[1:]}" for q in run.query_ids())


def test_optimized_normsum_with_base_params() -> None:
    fusion = OptimizedFusion(base="normsum", base_params={"norm": "max"}, metric="R@1")
    fusion.fit([GOOD, BAD], DEV, CORPUS)
    assert fusion.best is not None and fusion.best.score == 1.0
    expected = NormSumFusion(norm="max", weights=fusion.best.weights).fuse([GOOD, BAD], 2)
    assert fusion.fuse([GOOD, BAD], 2).scores == expected.scores


def test_optimized_fusion_source_changes_warn() -> None:
    fusion = OptimizedFusion(metric="R@1")
    fusion.fit([GOOD, BAD], DEV, CORPUS)
    with pytest.warns(UserWarning, match="bad"):
        run = fusion.fuse([GOOD], 2)
    assert run.scores == RRFFusion(weights={"good": 2.0}).fuse([GOOD], 2).scores
    with pytest.warns(UserWarning, match="new"):
        fusion.fuse([GOOD, BAD, Run("new", {"q0": {"g0": 1.0}})], 2)


def test_metric_cutoffs() -> None:
    assert metric_cutoffs("R@10") == ((10,), ())
    assert metric_cutoffs("chunk_nDCG@5") == ((5,), ())
    assert metric_cutoffs("F1@8k") == ((1,), (8000,))
    assert metric_cutoffs("line_F1@8.192k") == ((1,), (8192,))
    assert metric_cutoffs("MRR") == ((1,), ())
    for bad in ("R@0", "R@x", "F1@k", "F1@0.0001k"):
        with pytest.raises(ConfigError, match="is not a retrieval measure"):
            metric_cutoffs(bad)


def test_bad_inputs_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="'Recall@10' is not a retrieval measure"):
        optimize_weights(RRFFusion, [GOOD, BAD], DEV, CORPUS, metric="Recall@10")
    with pytest.raises(ConfigError, match="gold_spans"):
        optimize_weights(RRFFusion, [GOOD, BAD], DEV, CORPUS, metric="chunk_MRR")
    with pytest.raises(ConfigError, match="not a quality to maximise"):
        optimize_weights(RRFFusion, [GOOD, BAD], DEV, CORPUS, metric="Lost@5")
    with pytest.raises(ConfigError, match="grid"):
        optimize_weights(RRFFusion, [GOOD, BAD], DEV, CORPUS, grid=())
    with pytest.raises(ConfigError, match=">= 0"):
        optimize_weights(RRFFusion, [GOOD, BAD], DEV, CORPUS, grid=(1, -1))
    with pytest.raises(ConfigError, match="distinct"):
        optimize_weights(RRFFusion, [GOOD, GOOD], DEV, CORPUS)
    with pytest.raises(ConfigError, match="no examples"):
        optimize_weights(RRFFusion, [GOOD, BAD], [], CORPUS)
    with pytest.raises(ConfigError, match="at least one"):
        optimize_weights(RRFFusion, [], DEV, CORPUS)
    with pytest.raises(ConfigError, match="base"):
        OptimizedFusion(base="concat")
    with pytest.raises(ConfigError, match="k_rrf_grid"):
        OptimizedFusion(base="normsum", k_rrf_grid=K_RRF_GRID)
    with pytest.raises(ConfigError, match="norm"):
        OptimizedFusion(base="normsum", base_params={"norm": "softmax"})
    with pytest.raises(ConfigError, match="weights"):
        OptimizedFusion(base_params={"weights": {"good": 1.0}})
    with pytest.raises(ConfigError, match="base_params"):
        OptimizedFusion(base_params={"k_rff": 10})
    with pytest.raises(ConfigError, match="'R@ten' is not a retrieval measure"):
        OptimizedFusion(metric="R@ten")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"base": "concat"}, "base: optimized: base 'concat' is not one of rrf, normsum, vote"),
        ({"base": "normsum", "k_rrf_grid": [10]},
         "k_rrf_grid: optimized: k_rrf_grid applies to base 'rrf', not 'normsum'"),
        ({"grid": []}, "grid: optimized: grid is empty"),
        ({"grid": [1, -1]}, "grid: optimized: grid values must be >= 0, got [1, -1]"),
        ({"k_rrf_grid": [10, -3]},
         "k_rrf_grid: optimized: k_rrf_grid values must be >= 0, got [10, -3]"),
        ({"base_params": {"name": "x"}},
         "base_params: optimized: base_params may not set ['name']"),
        ({"base_params": {"k_rff": 10}}, "base_params: optimized: bad base_params ['k_rff'] for "
         "'rrf': k_rff: unknown parameter 'k_rff'; valid parameters: k_rrf, weights"),
        ({"base": "vote", "base_params": {"depth": 0}},
         "base_params: depth: vote: depth must be >= 1, not 0"),
        ({"metric": "R@ten"}, "metric: 'R@ten' is not a retrieval measure"),
        ({"bsae": "rrf"}, "bsae: unknown parameter 'bsae'"),
    ],
)  # fmt: skip
def test_params_are_checked_before_any_work(params: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        OptimizedFusion.Params.of(params)
    assert str(err.value).startswith(message), str(err.value)


def test_params_build_the_same_fusion() -> None:
    values = {"base": "normsum", "base_params": {"norm": "max"}, "grid": [1, 0, 1], "fit_k": 20}
    typed = OptimizedFusion(OptimizedFusion.Params.of(values))
    made = registry.FUSIONS.create("optimized", values)
    assert isinstance(made, OptimizedFusion) and made.params == typed.params
    assert (typed.base, typed.base_params, typed.grid) == ("normsum", {"norm": "max"}, (1.0, 0.0))
    assert (typed.k_rrf_grid, typed.fit_k, typed.max_sweeps) == (None, 20, 5)
    assert OptimizedFusion(k_rrf_grid=[]).k_rrf_grid is None
    assert OptimizedFusion(k_rrf_grid=[30, 10, 30]).k_rrf_grid == (30.0, 10.0)
