"""Paired t-test: hand-computed values, agreement with scipy.stats.ttest_rel, degenerate cases."""

from __future__ import annotations

import math

import pytest

from retrieval_bench.metrics.stats import paired_t_test
from tests.unit.metrics.stats.test_reference import agree_t
from tests.unit.metrics.stats.test_samples import cases


def t3_cdf(t: float) -> float:
    """Student t CDF with 3 degrees of freedom in closed form."""
    u = t / math.sqrt(3)
    return 0.5 + (u / (1 + u * u) + math.atan(u)) / math.pi


def test_hand_computed_statistic_and_p_values() -> None:
    # d = b - a = [1, 2, 2, 1]: mean 1.5, sd sqrt(1/3), t = 1.5 / (sd / 2) = 3 sqrt(3)
    a, b = [1, 2, 3, 4], [2, 4, 5, 5]
    expected_t = 3 * math.sqrt(3)
    two_sided = paired_t_test(a, b)
    assert two_sided.statistic == pytest.approx(expected_t, rel=1e-12)
    assert two_sided.p_value == pytest.approx(2 * (1 - t3_cdf(expected_t)), rel=1e-9)
    assert two_sided.n == 4 and two_sided.test == "t"
    greater = paired_t_test(a, b, alternative="greater")
    assert greater.p_value == pytest.approx(1 - t3_cdf(expected_t), rel=1e-9)
    less = paired_t_test(a, b, alternative="less")
    assert less.p_value == pytest.approx(t3_cdf(expected_t), rel=1e-12)


def test_swapping_runs_negates_the_statistic() -> None:
    a, b = [0.2, 0.5, 0.4, 0.9, 0.3], [0.3, 0.7, 0.4, 0.8, 0.6]
    forward, backward = paired_t_test(a, b), paired_t_test(b, a)
    assert backward.statistic == pytest.approx(-forward.statistic)
    assert backward.p_value == pytest.approx(forward.p_value)
    assert paired_t_test(a, b, alternative="greater").p_value == pytest.approx(
        paired_t_test(b, a, alternative="less").p_value
    )


def test_agrees_with_scipy_ttest_rel() -> None:
    gaps = [gap for case in cases(45) for gap in agree_t(case)]
    assert len(gaps) == 135
    failures = [gap for gap in gaps if not gap.ok]
    assert not failures, failures[:3]


def test_all_differences_zero_give_p_one() -> None:
    for alternative in ("two-sided", "greater", "less"):
        result = paired_t_test([0.5, 0.2, 0.9], [0.5, 0.2, 0.9], alternative=alternative)
        assert (result.statistic, result.p_value) == (0.0, 1.0)


def test_constant_nonzero_differences_give_infinite_statistic() -> None:
    a, b = [0.1, 0.4, 0.7], [0.6, 0.9, 1.2]  # d = 0.5 each: sd 0
    assert paired_t_test(a, b).statistic == math.inf
    assert paired_t_test(a, b).p_value == 0.0
    assert paired_t_test(a, b, alternative="greater").p_value == 0.0
    assert paired_t_test(a, b, alternative="less").p_value == 1.0
    assert paired_t_test(b, a).statistic == -math.inf
