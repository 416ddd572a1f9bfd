"""Baseline comparison: direction from the use case's sort, p from the exact
paired sign-flip test over per-row scores (hand-computed)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from retrieval_bench.prompt_eval.compare import compare_to_baseline, sort_verdict
from retrieval_bench.prompt_eval.records import Prompt, PromptResult, RowOutcome
from tests.unit.prompt_eval.conftest import Sentiment


def result(name: str, scores: Sequence[float]) -> PromptResult:
    outcomes = tuple(
        RowOutcome(f"r{i}", 1, "", {}, {"label": s == 1}, None, s) for i, s in enumerate(scores)
    )
    return PromptResult(Prompt(name, "{text}"), {"label": sum(scores)}, outcomes)


def test_four_discordant_rows_hand_computed() -> None:
    # d = [0, 1, 1, 1, 1, 0]: of the 2^6 sign vectors, 4 (the zero rows' signs
    # are free) give a mean as large as observed -> one-sided 4/64, two-sided 0.125
    base = result("base", [1, 0, 0, 0, 0, 1])
    cand = result("cand", [1, 1, 1, 1, 1, 1])
    c = compare_to_baseline(Sentiment(), cand, base)
    assert (c.verdict, c.wins, c.losses, c.n_rows) == ("better", 4, 0, 6)
    assert c.p_value == pytest.approx(0.125)
    assert c.delta == pytest.approx(4 / 6)
    assert not c.significant  # 0.125 >= 0.05
    assert compare_to_baseline(Sentiment(), cand, base, alpha=0.2).significant


def test_ten_wins_is_significant_and_mirror_is_worse() -> None:
    base, cand = result("base", [0] * 10), result("cand", [1] * 10)
    c = compare_to_baseline(Sentiment(), cand, base)
    assert c.p_value == pytest.approx(2 / 1024) and c.significant
    back = compare_to_baseline(Sentiment(), base, cand)
    assert back.verdict == "worse" and back.significant and back.losses == 10


def test_identical_results_are_same() -> None:
    c = compare_to_baseline(Sentiment(), result("a", [1, 0, 1]), result("b", [1, 0, 1]))
    assert c.verdict == "same" and c.p_value == 1.0 and not c.significant


def test_tied_counts_are_same_even_when_rows_differ() -> None:
    c = compare_to_baseline(Sentiment(), result("a", [1, 0, 1, 0]), result("b", [0, 1, 0, 1]))
    assert c.verdict == "same" and (c.wins, c.losses) == (2, 2) and not c.significant


def test_direction_follows_the_use_case_sort_rule() -> None:
    class FewestMatchesFirst(Sentiment):
        def sort(self, results: Sequence[PromptResult]) -> list[PromptResult]:
            return sorted(results, key=lambda r: r.counts["label"])

    base, cand = result("base", [0, 0, 0]), result("cand", [1, 1, 1])
    assert sort_verdict(FewestMatchesFirst(), cand, base) == "worse"
    assert sort_verdict(Sentiment(), cand, base) == "better"


def test_one_common_row_has_no_p_value() -> None:
    c = compare_to_baseline(Sentiment(), result("a", [1]), result("b", [0]))
    assert math.isnan(c.p_value) and c.verdict == "better" and not c.significant
    with pytest.raises(ValueError, match="alpha"):
        compare_to_baseline(Sentiment(), result("a", [1]), result("b", [0]), alpha=1.5)
