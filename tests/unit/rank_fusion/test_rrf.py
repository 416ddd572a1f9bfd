"""RRF with hand-computed expected scores (ranx style)."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.rrf import RRFFusion
from retrieval_bench.types import Run

A = Run("dense", {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}, "q2": {"d9": 1.0}})
B = Run("bm25", {"q1": {"d2": 12.0, "d4": 7.0, "d1": 3.0}})


def test_rrf_hand_computed() -> None:
    run = RRFFusion().fuse([A, B], k=10)
    expected = {
        "d1": 1 / 61 + 1 / 63,
        "d2": 1 / 62 + 1 / 61,
        "d3": 1 / 63,
        "d4": 1 / 62,
    }
    assert run.name == "rrf"
    assert run.scores["q1"] == pytest.approx(expected, abs=1e-12)
    assert run.ids("q1") == ["d2", "d1", "d4", "d3"]
    assert run.scores["q2"] == pytest.approx({"d9": 1 / 61}, abs=1e-12)


def test_rrf_weights_k_and_truncation() -> None:
    run = RRFFusion(k_rrf=1, weights={"bm25": 2.0}).fuse([A, B], k=2)
    # d1: 1/(1+1) + 2/(1+3) = 1.0 ; d2: 1/(1+2) + 2/(1+1) = 1.3333 ; d4: 2/(1+2) = 0.6667
    assert run.ranked("q1") == [("d2", pytest.approx(1 / 3 + 1.0, abs=1e-12)), ("d1", 1.0)]


def test_rrf_ties_by_chunk_id_and_input_ties() -> None:
    tied = Run("t", {"q": {"b": 1.0, "a": 1.0}})  # ranks: a=1, b=2 (ties by id)
    other = Run("u", {"q": {"b": 1.0, "a": 0.5}})  # ranks: b=1, a=2
    run = RRFFusion().fuse([tied, other], k=5)
    assert run.scores["q"]["a"] == run.scores["q"]["b"] == pytest.approx(1 / 61 + 1 / 62)
    assert run.ids("q") == ["a", "b"]


def test_rrf_unknown_or_negative_weight_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="bm52"):
        RRFFusion(weights={"bm52": 1.0}).fuse([A, B], 5)
    with pytest.raises(ConfigError, match=">= 0"):
        RRFFusion(weights={"bm25": -1.0}).fuse([A, B], 5)
    with pytest.raises(ConfigError) as err:
        RRFFusion(k_rrf=-1)
    assert str(err.value) == "k_rrf: rrf: k_rrf must be >= 0, not -1"
    with pytest.raises(ConfigError, match="unknown parameter 'krrf'; valid parameters: k_rrf"):
        RRFFusion(krrf=10)
    with pytest.raises(ConfigError, match="k_rrf: Input should be a valid number"):
        RRFFusion(k_rrf="sixty")


def test_rrf_params_build_the_same_fusion() -> None:
    given = RRFFusion(k_rrf=1, weights={"bm25": 2})
    typed = RRFFusion(RRFFusion.Params(k_rrf=1.0, weights={"bm25": 2.0}))
    made = registry.create("fusions", "rrf", k_rrf=1, weights={"bm25": 2})
    assert isinstance(made, RRFFusion) and made.params == given.params == typed.params
    assert given.fuse([A, B], 3).scores == typed.fuse([A, B], 3).scores
    assert given.fuse([A, B], 3).scores == made.fuse([A, B], 3).scores
    assert (given.k_rrf, given.weights, given.name) == (1.0, {"bm25": 2.0}, "rrf")
    assert RRFFusion(weights={}).weights is None


def test_rrf_registered_and_empty() -> None:
    fusion = registry.create("fusions", "rrf", k_rrf=10)
    assert fusion.fuse([], 5).scores == {}
    assert fusion.fuse([Run("x", {"q": {}})], 5).scores == {"q": {}}
