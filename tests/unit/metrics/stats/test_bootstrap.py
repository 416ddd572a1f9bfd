"""Bootstrap CIs (percentile, basic, BCa) against scipy.stats.bootstrap within a Monte Carlo
tolerance, their invariants, the paired bootstrap test's sanity, and memory chunking."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_bench.contracts.answer_metric import aggregate
from retrieval_bench.metrics.stats import (
    bootstrap_ci,
    paired_bootstrap_ci,
    paired_bootstrap_test,
    randomisation_test,
    resampling,
)
from tests.unit.metrics.stats.test_reference import agree_bootstrap_ci
from tests.unit.metrics.stats.test_samples import cases, paired_sample


def test_intervals_agree_with_scipy_bootstrap() -> None:
    picked = [case for case in cases(30, max_n=200) if case.n >= 8][:8]  # see MIN_CI_PAIRS
    gaps = [gap for case in picked for gap in agree_bootstrap_ci(case)]
    assert {gap.family for gap in gaps} == {
        "bootstrap CI percentile",
        "bootstrap CI basic",
        "bootstrap CI bca",
    }
    failures = [gap for gap in gaps if not gap.ok]
    assert not failures, failures[:3]


def test_basic_interval_reflects_percentile_interval() -> None:
    values = np.random.default_rng(1).exponential(size=40)
    percentile = bootstrap_ci(values, n_resamples=2000, seed=4)
    basic = bootstrap_ci(values, n_resamples=2000, seed=4, method="basic")
    assert basic.low == pytest.approx(2 * percentile.estimate - percentile.high)
    assert basic.high == pytest.approx(2 * percentile.estimate - percentile.low)


def test_interval_brackets_the_estimate_and_widens_with_confidence() -> None:
    values = np.random.default_rng(2).normal(size=60)
    narrow = bootstrap_ci(values, confidence=0.8, n_resamples=3000)
    wide = bootstrap_ci(values, confidence=0.99, n_resamples=3000)
    assert wide.low < narrow.low < narrow.estimate == values.mean() < narrow.high < wide.high
    assert (narrow.confidence, narrow.method) == (0.8, "percentile")


def test_bca_moves_towards_the_long_tail() -> None:
    values = np.random.default_rng(3).exponential(size=30)  # right-skewed
    percentile = bootstrap_ci(values, n_resamples=5000)
    bca = bootstrap_ci(values, n_resamples=5000, method="bca")
    assert bca.low > percentile.low and bca.high > percentile.high


def test_statistic_may_be_a_callable_vectorised_or_not() -> None:
    values = np.random.default_rng(4).normal(size=25)
    by_name = bootstrap_ci(values, statistic="median", n_resamples=500, method="bca")
    vectorised = bootstrap_ci(values, statistic=np.median, n_resamples=500, method="bca")
    per_row = bootstrap_ci(
        values, statistic=lambda row: float(np.median(row)), n_resamples=500, method="bca"
    )
    assert by_name == vectorised == per_row
    assert by_name.estimate == np.median(values)


def test_constant_values_give_a_point_interval() -> None:
    for method in ("percentile", "basic", "bca"):
        interval = bootstrap_ci([0.5, 0.5, 0.5], method=method)
        assert (interval.low, interval.estimate, interval.high) == (0.5, 0.5, 0.5)


def test_results_do_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = paired_sample("graded", 300, seed=5, shift=0.03)
    whole = (
        bootstrap_ci(b, n_resamples=1000, method="bca", statistic=np.median),
        paired_bootstrap_test(a, b, n_resamples=1000),
        randomisation_test(a, b, n_resamples=1000),
    )
    monkeypatch.setattr(resampling, "CHUNK_BYTES", 4000)  # ~1 row per block
    assert list(resampling.chunk_sizes(1000, 300)) == [1] * 1000
    chunked = (
        bootstrap_ci(b, n_resamples=1000, method="bca", statistic=np.median),
        paired_bootstrap_test(a, b, n_resamples=1000),
        randomisation_test(a, b, n_resamples=1000),
    )
    assert whole == chunked


def test_chunks_cover_all_resamples_within_the_memory_bound() -> None:
    sizes = list(resampling.chunk_sizes(10_000, 10_000))
    assert sum(sizes) == 10_000
    assert max(sizes) * 10_000 * 8 <= resampling.CHUNK_BYTES


def test_paired_ci_is_the_ci_of_the_differences() -> None:
    a, b = paired_sample("continuous", 50, seed=6, shift=0.1)
    assert paired_bootstrap_ci(a, b, n_resamples=800, method="bca") == bootstrap_ci(
        b - a, n_resamples=800, method="bca"
    )


def test_aggregate_uses_the_percentile_ci() -> None:
    values = [0.2, 0.4, 0.4, 0.9, 0.7, 0.1]
    summary = aggregate(values, n_resamples=500, seed=3)
    interval = bootstrap_ci(values, n_resamples=500, seed=3)
    assert (summary.ci_low, summary.ci_high) == (interval.low, interval.high)


def test_paired_bootstrap_identical_runs_give_p_one() -> None:
    a, _ = paired_sample("graded", 40, seed=7)
    for alternative in ("two-sided", "greater", "less"):
        assert paired_bootstrap_test(a, a, alternative=alternative).p_value == 1.0


def test_paired_bootstrap_detects_a_large_shift() -> None:
    a, b = paired_sample("continuous", 60, seed=8, shift=0.3)
    assert paired_bootstrap_test(a, b).p_value < 0.001
    assert paired_bootstrap_test(a, b, alternative="greater").p_value < 0.001
    assert paired_bootstrap_test(a, b, alternative="less").p_value > 0.999


def test_paired_bootstrap_roughly_agrees_with_randomisation() -> None:
    # Moderate shifts (randomisation p between 0.04 and 0.4): both tests ask whether
    # mean(b - a) is zero, so their p-values should be close. The bootstrap's tends to be
    # a little smaller (it ignores the uncertainty of the spread; Sakai 2006).
    for kind, seed, shift in (
        ("continuous", 10, 0.04),
        ("continuous", 11, 0.02),
        ("graded", 11, 0.02),
        ("binary", 11, 0.1),
    ):
        a, b = paired_sample(kind, 80, seed=seed, shift=shift)
        bootstrap_p = paired_bootstrap_test(a, b, seed=seed).p_value
        randomisation_p = randomisation_test(a, b, seed=seed).p_value
        assert 0.04 < randomisation_p < 0.4
        assert randomisation_p / 1.5 < bootstrap_p < randomisation_p * 1.5
