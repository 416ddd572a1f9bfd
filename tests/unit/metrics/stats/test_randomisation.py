"""Sign-flip randomisation test: hand-computed enumeration, scipy.stats.permutation_test
agreement (exact to 1e-12, Monte Carlo within a binomial tolerance), Phipson-Smyth floor."""

from __future__ import annotations

import numpy as np

from retrieval_bench.metrics.stats import randomisation_test
from tests.unit.metrics.stats.test_reference import (
    agree_randomisation_exact,
    agree_randomisation_monte_carlo,
)
from tests.unit.metrics.stats.test_samples import cases


def test_exact_enumeration_hand_computed() -> None:
    # d = [1, -2, 3, 4], observed sum 6. Under random signs the 16 null sums are
    # 10 - 2 * (sum of the magnitudes made negative). Sum >= 6 when that subset sums to
    # <= 2: {}, {1}, {2} -> 3/16; sum <= 6 when it sums to >= 2: all but {}, {1} -> 14/16.
    a, b = [0, 0, 0, 0], [1, -2, 3, 4]
    result = randomisation_test(a, b)
    assert result.statistic == 1.5 and result.n == 4
    assert result.p_value == 6 / 16
    assert randomisation_test(a, b, alternative="greater").p_value == 3 / 16
    assert randomisation_test(a, b, alternative="less").p_value == 14 / 16


def test_exact_agrees_with_scipy_permutation_test() -> None:
    gaps = [gap for case in cases(60, max_n=13) for gap in agree_randomisation_exact(case)]
    assert len(gaps) == 180
    failures = [gap for gap in gaps if not gap.ok]
    assert not failures, failures[:3]


def test_monte_carlo_agrees_with_scipy_within_binomial_tolerance() -> None:
    picked = [case for case in cases(40, max_n=80, first_seed=7) if case.n > 13][:6]
    gaps = [gap for case in picked for gap in agree_randomisation_monte_carlo(case)]
    assert len(gaps) == 18
    failures = [gap for gap in gaps if not gap.ok]
    assert not failures, failures[:3]


def test_exact_when_all_sign_vectors_fit_in_n_resamples() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=13), rng.normal(size=13)
    exact = randomisation_test(a, b, n_resamples=2**13, seed=1)
    assert exact.p_value * 2**13 == round(exact.p_value * 2**13)  # a multiple of 1 / 2^13
    assert randomisation_test(a, b, n_resamples=2**13, seed=2) == exact  # no randomness
    sampled = randomisation_test(a, b, n_resamples=2**13 - 1, seed=1)
    assert sampled != randomisation_test(a, b, n_resamples=2**13 - 1, seed=2)


def test_monte_carlo_p_value_is_never_zero() -> None:
    a, b = np.zeros(40), np.linspace(1.0, 2.0, 40)  # every flip lowers the mean
    assert randomisation_test(a, b, n_resamples=999, alternative="greater").p_value == 1 / 1000
    assert randomisation_test(a, b, n_resamples=999).p_value == 2 / 1000
    assert randomisation_test(a, b, n_resamples=999, alternative="less").p_value == 1.0


def test_seeded_and_reproducible() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=50), rng.normal(0.2, 1, size=50)
    assert randomisation_test(a, b, seed=11) == randomisation_test(a, b, seed=11)
    assert randomisation_test(a, b, seed=11) != randomisation_test(a, b, seed=12)


def test_all_differences_zero_give_p_one() -> None:
    assert randomisation_test([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]).p_value == 1.0
    assert randomisation_test(np.ones(40), np.ones(40), alternative="less").p_value == 1.0
