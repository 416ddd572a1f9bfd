"""Bad input to every statistics function: one-line ValueErrors naming the problem."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from retrieval_bench.metrics.stats import (
    PAIRED_TESTS,
    TestResult,
    bootstrap_ci,
    cohens_dz,
    paired_bootstrap_ci,
    rank_biserial,
    wilcoxon_signed_rank,
)

PAIRED: dict[str, Callable[..., Any]] = {
    **PAIRED_TESTS,
    "paired_bootstrap_ci": paired_bootstrap_ci,
    "cohens_dz": cohens_dz,
    "rank_biserial": rank_biserial,
}

BAD_PAIRS = [
    ([1, 2, 3], [1, 2], "same length"),
    ([1], [2], "at least 2 pairs"),
    ([], [], "at least 2 pairs"),
    ([1, float("nan"), 3], [1, 2, 3], r"a \(baseline\) contains NaN, None or infinity"),
    ([1, 2, 3], [1, 2, float("inf")], r"b \(candidate\) contains NaN, None or infinity"),
    (["x", "y"], [1, 2], "must contain only numbers"),
    ([1, None], [1, 2], r"a \(baseline\) contains NaN, None or infinity"),
    ([1, object()], [1, 2], "must contain only numbers"),
    ("ab", [1, 2], "not a string"),
    ([[1, 2], [3, 4]], [[1, 2], [3, 4]], "one-dimensional"),
    (3.0, 4.0, "one-dimensional"),
]


@pytest.mark.parametrize("name", list(PAIRED))
@pytest.mark.parametrize(("a", "b", "message"), BAD_PAIRS)
def test_bad_pairs_raise_a_clear_error(name: str, a: Any, b: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        PAIRED[name](a, b)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", list(PAIRED_TESTS))
def test_unknown_alternative(name: str) -> None:
    with pytest.raises(ValueError, match="alternative must be one of"):
        PAIRED_TESTS[name]([1, 2, 3], [2, 2, 4], alternative="bigger")


@pytest.mark.parametrize("name", ["randomisation", "bootstrap"])
def test_n_resamples_must_be_positive(name: str) -> None:
    with pytest.raises(ValueError, match="n_resamples must be at least 1"):
        PAIRED_TESTS[name]([1, 2, 3], [2, 2, 4], n_resamples=0)


def test_wilcoxon_options_are_checked() -> None:
    with pytest.raises(ValueError, match="zero_method must be one of"):
        wilcoxon_signed_rank([1, 2], [2, 3], zero_method="drop")
    with pytest.raises(ValueError, match="method must be one of"):
        wilcoxon_signed_rank([1, 2], [2, 3], method="asymptotic")
    with pytest.raises(ValueError, match="correction must be True or False"):
        wilcoxon_signed_rank([1, 2], [2, 3], correction="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method='exact' handles at most 1000 pairs"):
        wilcoxon_signed_rank(np.zeros(1001), np.arange(1.0, 1002.0), method="exact")


def test_bootstrap_ci_options_are_checked() -> None:
    with pytest.raises(ValueError, match="values needs at least 2 values"):
        bootstrap_ci([0.5])
    with pytest.raises(ValueError, match="confidence must be a number strictly between"):
        bootstrap_ci([0.5, 0.7], confidence=95)
    with pytest.raises(ValueError, match="method must be one of"):
        bootstrap_ci([0.5, 0.7], method="studentized")
    with pytest.raises(ValueError, match="statistic must be 'mean', 'median' or a callable"):
        bootstrap_ci([0.5, 0.7], statistic="mode")
    with pytest.raises(ValueError, match="statistic returned nan"):
        bootstrap_ci([0.5, 0.7], statistic=lambda row: float("nan"))


def test_numeric_sequences_of_any_kind_are_accepted() -> None:
    from fractions import Fraction

    expected = PAIRED_TESTS["t"]([0.0, 1.0, 1.0], [1.0, 1.0, 0.5])
    assert PAIRED_TESTS["t"]([False, True, True], (1, 1, Fraction(1, 2))) == expected
    assert PAIRED_TESTS["t"](np.array([0, 1, 1]), np.array([1.0, 1.0, 0.5])) == expected


def test_result_class_is_not_collected_by_pytest() -> None:
    assert TestResult.__test__ is False
