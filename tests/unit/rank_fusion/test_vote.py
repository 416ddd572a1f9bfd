"""vote with hand-computed expected scores: the vote dominates, rank breaks ties."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.rrf import RRFFusion
from retrieval_bench.rank_fusion.vote import VoteFusion, default_depth, tie_scale
from retrieval_bench.types import Run

A = Run("dense", {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.5, "d4": 0.1}, "q2": {"d9": 1.0}})
B = Run("bm25", {"q1": {"d3": 9.0, "d5": 5.0, "d1": 1.0, "d6": 0.5}})


def test_vote_hand_computed() -> None:
    run = VoteFusion(depth=3).fuse([A, B], k=10)
    # top 3 — dense: d1 d2 d3 ; bm25: d3 d5 d1.  ε = 0.5 (unit weights)
    # d1: 2 votes, best rank 1 → 2 + 0.5·1 ; d3 the same
    # d2, d5: 1 vote, best rank 2 → 1 + 0.5·(1 - 1/3) ; d4, d6 are below depth
    expected = {"d1": 2.5, "d3": 2.5, "d2": 1 + 1 / 3, "d5": 1 + 1 / 3}
    assert run.name == "vote"
    assert run.scores["q1"] == pytest.approx(expected, abs=1e-12)
    assert run.ids("q1") == ["d1", "d3", "d2", "d5"]
    assert run.scores["q2"] == pytest.approx({"d9": 1.5}, abs=1e-12)


def test_truncated_to_k() -> None:
    assert VoteFusion(depth=3).fuse([A, B], k=3).ids("q1") == ["d1", "d3", "d2"]


def test_default_depth_is_twice_the_equal_share() -> None:
    assert default_depth(3, 2) == 3
    assert default_depth(5, 3) == 4  # ceil(10 / 3)
    assert default_depth(1, 4) == 1
    assert default_depth(4, 0) == 8
    # k = 2, two sources → depth 2: dense d1 d2, bm25 d3 d5 → all single votes
    run = VoteFusion().fuse([A, B], k=2)
    # d1, d3 at rank 1: 1 + 0.5 ; ties by id
    assert run.ranked("q1") == [("d1", 1.5), ("d3", 1.5)]


def test_weights_hand_computed() -> None:
    run = VoteFusion(depth=2, weights={"dense": 2.0, "bm25": 0.5}).fuse([A, B], k=10)
    # subset sums {0, 0.5, 2, 2.5} → smallest gap 0.5 → ε = 0.25
    # dense top 2: d1 d2 ; bm25 top 2: d3 d5
    expected = {"d1": 2.25, "d2": 2.0 + 0.25 * 0.5, "d3": 0.75, "d5": 0.5 + 0.25 * 0.5}
    assert run.scores["q1"] == pytest.approx(expected, abs=1e-12)


def test_zero_weight_source_does_not_vote() -> None:
    run = VoteFusion(depth=3, weights={"bm25": 0.0}).fuse([A, B], k=10)
    expected = {"d1": 1.5, "d2": 1 + 0.5 * (2 / 3), "d3": 1 + 0.5 * (1 / 3)}
    assert run.scores["q1"] == pytest.approx(expected, abs=1e-12)


def test_vote_count_dominates_rank_unlike_rrf() -> None:
    fill = {f"z{i:02d}": 1.0 - i / 100 for i in range(2, 20)}
    a = Run("a", {"q": {"x": 2.0, **fill, "y": 0.0}})  # x rank 1, y rank 20
    b = Run("b", {"q": {"w": 2.0, **{f"v{i:02d}": 1.0 - i / 100 for i in range(2, 20)}, "y": 0.0}})
    # rrf with a small k_rrf lets a single top rank beat two low ranks ...
    assert RRFFusion(k_rrf=1).fuse([a, b], 3).ids("q")[0] in {"w", "x"}
    # ... the vote never does: y has two votes
    run = VoteFusion(depth=20).fuse([a, b], 3)
    assert run.ids("q") == ["y", "w", "x"]
    assert run.scores["q"]["y"] == pytest.approx(2 + 0.5 * (1 - 19 / 20), abs=1e-12)


def test_near_equal_weights_still_dominate() -> None:
    a = Run("a", {"q": {"x": 1.0, "p": 0.5}})  # x rank 1 of a (w 1.0)
    b = Run("b", {"q": {"p": 1.0, "y": 0.5}})  # y rank 2 of b (w 1.001)
    run = VoteFusion(depth=2, weights={"a": 1.0, "b": 1.001}).fuse([a, b], 5)
    assert run.ids("q") == ["p", "y", "x"]  # 2.001 > 1.001 + ε/2 > 1.0 + ε
    assert tie_scale([1.0, 1.001]) == pytest.approx(0.0005, abs=1e-12)


def test_tie_scale() -> None:
    assert tie_scale([]) == 0.5
    assert tie_scale([1.0, 1.0, 1.0]) == 0.5
    assert tie_scale([0.1, 0.2, 0.3]) == pytest.approx(0.05, abs=1e-12)  # 0.1+0.2 == 0.3
    assert tie_scale([2.0, 0.0]) == 1.0


def test_empty_and_registry() -> None:
    fusion = registry.FUSIONS.create("vote", {"depth": 2})
    assert isinstance(fusion, VoteFusion) and fusion.depth == 2
    assert fusion.params == VoteFusion(depth=2).params == VoteFusion.Params(depth=2)
    assert fusion.fuse([], 5).scores == {}
    assert fusion.fuse([Run("x", {"q": {}})], 5).scores == {"q": {}}


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="depth"):
        VoteFusion(depth=0)
    with pytest.raises(ConfigError, match="depth"):
        VoteFusion(depth=1.5)
    wrong = [
        (0, ">= 1, not 0"),
        (2.0, "a positive integer, not 2.0"),
        (True, "a positive integer, not True"),
        ("3", "a positive integer, not '3'"),
    ]
    for depth, why in wrong:
        with pytest.raises(ConfigError) as err:
            VoteFusion.Params.of({"depth": depth})
        assert str(err.value) == f"depth: vote: depth must be {why}"
    with pytest.raises(ConfigError, match="unknown parameter 'dpeth'"):
        VoteFusion(dpeth=2)
    with pytest.raises(ConfigError, match="unknown runs"):
        VoteFusion(weights={"dens": 1.0}).fuse([A, B], 3)
    with pytest.raises(ConfigError, match=">= 0"):
        VoteFusion(weights={"dense": -1.0}).fuse([A, B], 3)
