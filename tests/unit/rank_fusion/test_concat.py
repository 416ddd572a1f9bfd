"""concat: round-robin interleaving, de-duplicated, equal shares."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.errors import ConfigError
from retrieval_bench.rank_fusion.concat import ConcatFusion, interleave
from retrieval_bench.types import Run


def test_interleave_equal_shares_and_dedup() -> None:
    a = ["a1", "a2", "a3", "a4"]
    b = ["a1", "b2", "b3"]  # its best is already taken: it contributes its next one
    c = ["c1"]
    assert interleave([a, b, c], 10) == ["a1", "b2", "c1", "a2", "b3", "a3", "a4"]
    assert interleave([a, b, c], 4) == ["a1", "b2", "c1", "a2"]
    assert interleave([], 3) == interleave([[], []], 3) == []


def test_concat_run_scores_are_reciprocal_positions() -> None:
    dense = Run("dense", {"q": {"x": 0.9, "y": 0.5}, "only_dense": {"z": 1.0}})
    bm25 = Run("bm25", {"q": {"y": 20.0, "w": 10.0, "v": 1.0}})
    run = ConcatFusion().fuse([dense, bm25], k=3)
    assert run.name == "concat"
    assert run.ranked("q") == [("x", 1.0), ("y", 0.5), ("w", 1 / 3)]
    assert run.scores["only_dense"] == {"z": 1.0}


def test_concat_order_of_runs_matters_and_uses_run_ranking() -> None:
    first = Run("a", {"q": {"p": 1.0, "o": 1.0}})  # tie: o before p
    second = Run("b", {"q": {"s": 3.0}})
    assert ConcatFusion().fuse([first, second], 5).ids("q") == ["o", "s", "p"]
    assert ConcatFusion().fuse([second, first], 5).ids("q") == ["s", "o", "p"]


def test_registered() -> None:
    assert isinstance(registry.create("fusions", "concat"), ConcatFusion)


def test_no_parameters() -> None:
    assert ConcatFusion(name="c").name == "c"
    with pytest.raises(ConfigError, match="unknown parameter 'k'; valid parameters: [(]none[)]"):
        ConcatFusion(k=3)
