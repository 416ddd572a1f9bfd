"""Holm step-down adjustment against hand-computed values (scipy has no Holm)."""

from __future__ import annotations

import pytest

from retrieval_bench.metrics.stats import holm


def test_hand_computed_adjustment_in_input_order() -> None:
    # sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_capped_at_one_and_monotone() -> None:
    # sorted: 0.2 x3 = 0.6, 0.5 x2 = 1.0, 0.9 x1 = 0.9 -> running max 1.0
    assert holm([0.9, 0.2, 0.5]) == pytest.approx([1.0, 0.6, 1.0])


def test_ties_and_edge_sizes() -> None:
    assert holm([0.01, 0.01, 0.04]) == pytest.approx([0.03, 0.03, 0.04])
    assert holm([0.02]) == [0.02]
    assert holm([]) == []


def test_rejects_values_outside_the_unit_interval() -> None:
    with pytest.raises(ValueError, match=r"p_values must lie in \[0, 1\]"):
        holm([0.1, 1.2])
    with pytest.raises(ValueError, match="p_values contains NaN, None or infinity"):
        holm([0.1, float("nan")])
