"""Wilcoxon signed-rank: exact distribution by hand and brute force, normal approximation by
hand, zero handling, tie snapping, and agreement with scipy.stats.wilcoxon (scipy 1.17.1)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from retrieval_bench.metrics.stats import wilcoxon_signed_rank
from retrieval_bench.metrics.stats.wilcoxon import signed_rank_null
from tests.unit.metrics.stats.test_reference import (
    agree_wilcoxon_approx,
    agree_wilcoxon_auto,
    agree_wilcoxon_exact,
)
from tests.unit.metrics.stats.test_samples import cases


def normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def test_exact_hand_computed() -> None:
    # d = [1, -2, 3, 4]: R+ = 1 + 3 + 4 = 8, R- = 2. Of the 16 sign patterns of ranks
    # 1..4, R+ >= 8 for {1,3,4}, {2,3,4}, {1,2,3,4}: 3; R+ <= 8 for the other 13 plus 1.
    a, b = [0, 0, 0, 0], [1, -2, 3, 4]
    two_sided = wilcoxon_signed_rank(a, b, method="exact")
    assert (two_sided.statistic, two_sided.p_value, two_sided.n) == (2.0, 6 / 16, 4)
    greater = wilcoxon_signed_rank(a, b, method="exact", alternative="greater")
    assert (greater.statistic, greater.p_value) == (8.0, 3 / 16)
    assert wilcoxon_signed_rank(a, b, method="exact", alternative="less").p_value == 14 / 16


def test_exact_table_value_n10() -> None:
    # 25 of the 1024 subsets of {1..10} have sum <= 8 (the classic one-sided 2.5% critical value)
    d = np.array([-1.0, -2, -3, -4, -5, -6, -7, 8, -9, -10])
    result = wilcoxon_signed_rank(np.zeros(10), d, method="exact", alternative="less")
    assert result.p_value == pytest.approx(25 / 1024, abs=1e-15)


def test_null_distribution_matches_brute_force_with_ties() -> None:
    ranks = [1.0, 2.5, 2.5, 4.0, 5.5, 5.5]
    pmf = signed_rank_null(np.array([int(2 * r) for r in ranks]))
    counts = np.zeros_like(pmf)
    for signs in itertools.product((0, 1), repeat=len(ranks)):
        counts[int(sum(2 * r * s for r, s in zip(ranks, signs, strict=True)))] += 1
    np.testing.assert_allclose(pmf, counts / 2 ** len(ranks), atol=1e-15)


def test_normal_approximation_hand_computed() -> None:
    # n = 10, no ties: mean 27.5, se^2 = 10*11*21/24 = 96.25; R+ = 8
    d = np.array([-1.0, -2, -3, -4, -5, -6, -7, 8, -9, -10])
    z = (8 - 27.5) / math.sqrt(96.25)
    result = wilcoxon_signed_rank(np.zeros(10), d, method="approx")
    assert result.p_value == pytest.approx(2 * normal_sf(-z), rel=1e-12)
    corrected = wilcoxon_signed_rank(np.zeros(10), d, method="approx", correction=True)
    assert corrected.p_value == pytest.approx(2 * normal_sf(-(z + 0.5 / math.sqrt(96.25))))


def test_zero_methods_count_and_rank_zeros() -> None:
    a, b = [0, 0, 0, 0, 0], [0, 1, -2, 3, 4]
    assert wilcoxon_signed_rank(a, b, zero_method="wilcox", alternative="greater").statistic == 8
    assert wilcoxon_signed_rank(a, b, zero_method="wilcox").n == 4
    # pratt ranks the zero first (rank 1): R+ = 2 + 4 + 5 = 11; zsplit adds half of it
    assert wilcoxon_signed_rank(a, b, zero_method="pratt", alternative="greater").statistic == 11
    assert wilcoxon_signed_rank(a, b, zero_method="pratt").n == 5
    assert wilcoxon_signed_rank(a, b, zero_method="zsplit", alternative="greater").statistic == 11.5


def test_float_noise_does_not_break_ties() -> None:
    # 0.6 - 0.3 == 0.3 but 0.1 - 0.4 == -0.30000000000000004: equal magnitudes must tie
    result = wilcoxon_signed_rank([0.3, 0.4, 0.2], [0.6, 0.1, 0.3], method="approx")
    assert result.statistic == 2.5  # ranks 2.5, 2.5, 1: R+ = 3.5, R- = 2.5


def test_all_zero_differences_give_p_one() -> None:
    for zero_method in ("wilcox", "pratt", "zsplit"):
        result = wilcoxon_signed_rank([1, 2, 3], [1, 2, 3], zero_method=zero_method)
        assert (result.statistic, result.p_value) == (0.0, 1.0)


def test_approximation_agrees_with_scipy() -> None:
    gaps = [gap for case in cases(24) for gap in agree_wilcoxon_approx(case)]
    assert len(gaps) > 400
    failures = [gap for gap in gaps if not gap.ok]
    assert not failures, failures[:3]


def test_exact_agrees_with_scipy() -> None:
    gaps = [
        gap
        for case in cases(30, max_n=50)
        for gap in agree_wilcoxon_exact(case, max_wilcoxon_enumerated=6)
    ]
    labels = " ".join(gap.label for gap in gaps)
    assert "table" in labels and "enumerated R+" in labels and "scipy wilcoxon" in labels
    failures = [gap for gap in gaps if not gap.ok]
    assert not failures, failures[:3]


def test_auto_method_agrees_with_scipy() -> None:
    gaps = [
        gap
        for case in cases(24, first_seed=100)
        for gap in agree_wilcoxon_auto(case, max_wilcoxon_enumerated=6)
    ]
    assert len(gaps) > 150
    failures = [gap for gap in gaps if not gap.ok]
    assert not failures, failures[:3]


def test_auto_switches_method_like_scipy() -> None:
    tied13 = np.array([1.0, 1, 2, -3, 4, 5, -6, 7, 8, 9, -10, 11, 12])  # one tie, 13 pairs
    tied14 = np.append(tied13, 13.0)
    distinct51 = np.arange(1.0, 52) * np.where(np.arange(51) % 3 == 0, -1, 1)

    def same(d: np.ndarray, method: str) -> bool:
        zeros = np.zeros(d.size)
        return wilcoxon_signed_rank(zeros, d) == wilcoxon_signed_rank(zeros, d, method=method)

    assert same(tied13, "exact") and not same(tied13, "approx")
    assert same(tied14, "approx") and not same(tied14, "exact")
    assert same(distinct51[:50], "exact") and not same(distinct51[:50], "approx")
    assert same(distinct51, "approx") and not same(distinct51, "exact")
