"""Paired effect sizes against hand-computed values."""

from __future__ import annotations

import math

import pytest

from retrieval_bench.metrics.stats import cohens_dz, hedges_gz, rank_biserial


def test_cohens_dz_hand_computed() -> None:
    # d = [1, 2, 2, 1]: mean 1.5, sd (ddof 1) = sqrt(1/3)
    assert cohens_dz([1, 2, 3, 4], [2, 4, 5, 5]) == pytest.approx(1.5 / math.sqrt(1 / 3))
    assert cohens_dz([2, 4, 5, 5], [1, 2, 3, 4]) == pytest.approx(-1.5 / math.sqrt(1 / 3))


def test_cohens_dz_degenerate() -> None:
    assert cohens_dz([1, 2, 3], [1, 2, 3]) == 0.0
    assert cohens_dz([1, 2, 3], [2, 3, 4]) == math.inf


def test_hedges_gz_hand_computed() -> None:
    # df = 3: J = Gamma(1.5) / (sqrt(1.5) Gamma(1)) = (sqrt(pi) / 2) / sqrt(1.5)
    correction = (math.sqrt(math.pi) / 2) / math.sqrt(1.5)
    expected = correction * 1.5 / math.sqrt(1 / 3)
    assert hedges_gz([1, 2, 3, 4], [2, 4, 5, 5]) == pytest.approx(expected)
    with pytest.raises(ValueError, match="at least 3 pairs"):
        hedges_gz([1, 2], [2, 4])


def test_rank_biserial_hand_computed() -> None:
    # d = [1, -2, 3, 4, 0]: zero dropped, R+ = 8, R- = 2 -> (8 - 2) / 10
    assert rank_biserial([0] * 5, [1, -2, 3, 4, 0]) == pytest.approx(0.6)
    assert rank_biserial([0] * 3, [1, 2, 3]) == 1.0
    assert rank_biserial([1, 2, 3], [1, 2, 3]) == 0.0
