"""normsum with hand-computed expected scores for each normalisation."""

from __future__ import annotations

import math

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.normsum import NormSumFusion, maxnorm, minmax, zscore
from retrieval_bench.types import Run

A = Run("dense", {"q1": {"d1": 0.9, "d2": 0.7, "d3": 0.1}})
B = Run("bm25", {"q1": {"d2": 12.0, "d4": 8.0, "d1": 2.0}, "q2": {"d5": 3.0}})


def test_minmax_hand_computed() -> None:
    run = NormSumFusion().fuse([A, B], k=10)
    # dense: d1 1, d2 (0.7-0.1)/0.8 = 0.75, d3 0 ; bm25: d2 1, d4 0.6, d1 0
    assert run.scores["q1"] == pytest.approx(
        {"d1": 1.0, "d2": 1.75, "d3": 0.0, "d4": 0.6}, abs=1e-12
    )
    assert run.ids("q1") == ["d2", "d1", "d4", "d3"]
    assert run.scores["q2"] == {"d5": 1.0}  # a single result is its source's best
    assert run.name == "normsum"


def test_weights() -> None:
    run = NormSumFusion(weights={"dense": 0.5, "bm25": 2.0}).fuse([A, B], k=2)
    # d1 0.5*1 + 2*0 = 0.5 ; d2 0.5*0.75 + 2*1 = 2.375 ; d4 2*0.6 = 1.2
    assert run.ranked("q1") == [
        ("d2", pytest.approx(2.375, abs=1e-12)),
        ("d4", pytest.approx(1.2, abs=1e-12)),
    ]


def test_zscore_hand_computed() -> None:
    run = NormSumFusion(norm="zscore").fuse([A, B], k=10)
    mean_a, mean_b = (0.9 + 0.7 + 0.1) / 3, (12 + 8 + 2) / 3
    sd_a = math.sqrt(((0.9 - mean_a) ** 2 + (0.7 - mean_a) ** 2 + (0.1 - mean_a) ** 2) / 3)
    sd_b = math.sqrt(((12 - mean_b) ** 2 + (8 - mean_b) ** 2 + (2 - mean_b) ** 2) / 3)
    expected = {
        "d1": (0.9 - mean_a) / sd_a + (2 - mean_b) / sd_b,
        "d2": (0.7 - mean_a) / sd_a + (12 - mean_b) / sd_b,
        "d3": (0.1 - mean_a) / sd_a,
        "d4": (8 - mean_b) / sd_b,
    }
    assert run.scores["q1"] == pytest.approx(expected, abs=1e-12)
    assert run.scores["q2"] == {"d5": 0.0}


def test_max_norm_hand_computed() -> None:
    run = NormSumFusion(norm="max").fuse([A, B], k=10)
    expected = {"d1": 1.0 + 2 / 12, "d2": 0.7 / 0.9 + 1.0, "d3": 0.1 / 0.9, "d4": 8 / 12}
    assert run.scores["q1"] == pytest.approx(expected, abs=1e-12)


def test_normalisers_edge_cases() -> None:
    assert minmax({}) == zscore({}) == maxnorm({}) == {}
    assert minmax({"a": 2.0, "b": 2.0}) == {"a": 1.0, "b": 1.0}
    assert zscore({"a": 2.0, "b": 2.0}) == {"a": 0.0, "b": 0.0}
    assert maxnorm({"a": 0.0}) == {"a": 0.0}
    assert maxnorm({"a": -4.0, "b": 2.0}) == {"a": -1.0, "b": 0.5}


def test_ties_by_chunk_id() -> None:
    run = NormSumFusion().fuse([Run("x", {"q": {"b": 1.0, "a": 1.0, "c": 0.0}})], k=2)
    assert run.ids("q") == ["a", "b"]


def test_config_errors_and_registry() -> None:
    with pytest.raises(ConfigError) as err:
        NormSumFusion(norm="softmax")
    assert str(err.value) == ("norm: normsum: norm 'softmax' is not one of minmax, zscore, max")
    with pytest.raises(ConfigError, match="unknown parameter 'nrom'"):
        NormSumFusion(nrom="max")
    with pytest.raises(ConfigError, match="unknown runs"):
        NormSumFusion(weights={"dens": 1.0}).fuse([A, B], 3)
    made = registry.create("fusions", "normsum", norm="max")
    assert isinstance(made, NormSumFusion) and made.params == NormSumFusion.Params(norm="max")
    typed = NormSumFusion(NormSumFusion.Params(norm="zscore", weights={"dense": 0.5}))
    assert (typed.norm, typed.weights) == ("zscore", {"dense": 0.5})
    assert typed.fuse([A, B], 3).scores == (
        NormSumFusion(norm="zscore", weights={"dense": 0.5}).fuse([A, B], 3).scores
    )
