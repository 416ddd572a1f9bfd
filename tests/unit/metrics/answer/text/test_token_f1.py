"""token_f1: hand-computed multiset overlap, options, edge cases, multi-reference."""

from __future__ import annotations

import pytest

from retrieval_bench.metrics.answer.text.token_f1 import TokenF1, token_prf


def f1(prediction: str, reference: str | list[str] | None, **options: bool) -> float | None:
    return TokenF1(**options).evaluate(prediction, reference).value


def test_hand_computed_partial_overlap() -> None:
    # pred: the cat sat on the mat (6)  ref: the cat is on the mat (6)
    # common = the x2, cat, on, mat = 5 -> P = R = F = 5/6
    assert f1("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)


def test_repeated_tokens_count_as_a_multiset_not_a_set() -> None:
    # pred "the cat the" / ref "the the dog": Counter overlap = min(2, 2) "the" = 2
    # P = 2/3, R = 2/3, F = 2/3. A set intersection (Ruby &) would count 1 -> F = 1/3.
    assert f1("the cat the", "the the dog") == pytest.approx(2 / 3)
    # clipping: pred "a a a a" vs ref "a b": common = 1, P = 1/4, R = 1/2, F = 2*(1/8)/(3/4) = 1/3
    assert f1("a a a a", "a b") == pytest.approx(1 / 3)


def test_precision_and_recall_in_details() -> None:
    # pred "a b c d" vs ref "a b": common 2, P = 2/4, R = 2/2, F = 2*0.5*1/1.5 = 2/3
    score = TokenF1().evaluate("a b c d", "a b")
    assert score.value == pytest.approx(2 / 3)
    assert score.details == {"precision": 0.5, "recall": 1.0}


def test_no_overlap_is_zero() -> None:
    assert f1("alpha beta", "gamma delta") == 0.0


def test_empty_sides() -> None:
    assert f1("", "") == 1.0  # both empty
    assert f1("  ", "\t") == 1.0  # both empty after splitting
    assert f1("", "cat") == 0.0
    assert f1("cat", "") == 0.0
    assert f1("", None) == 1.0  # no reference: compared with ""
    assert f1("cat", None) == 0.0


def test_options_are_those_of_exact_match() -> None:
    assert f1("The Cat", "the cat") == 1.0  # case ignored by default (as SQuAD)
    assert f1("The Cat", "the cat", ignore_case=False) == 0.0
    assert f1("cat, dog!", "cat dog", ignore_punctuation=True) == 1.0
    # squad: "The cat sat." -> [cat, sat] vs "a cat" -> [cat]: common 1, P 1/2, R 1 -> F 2/3
    assert f1("The cat sat.", "a cat", squad=True) == pytest.approx(2 / 3)


def test_multi_reference_takes_the_best_f1() -> None:
    # vs "x y": 0; vs "cat dog": P = 1/2 (cat of cat, fish), R = 1/2 -> F = 1/2
    score = TokenF1().evaluate("cat fish", ["x y", "cat dog"])
    assert score.value == pytest.approx(0.5)
    assert score.details == {"precision": 0.5, "recall": 0.5}


def test_unicode_tokens() -> None:
    # tokens: ["東京", "大阪"] vs ["東京"]: common 1, P 1/2, R 1 -> F 2/3
    assert f1("東京 大阪", "東京") == pytest.approx(2 / 3)
    assert f1("«Zürich»", "zürich", ignore_case=True, ignore_punctuation=True) == 1.0


def test_token_prf_directly() -> None:
    assert token_prf(["a", "b"], ["b", "c", "d"]) == pytest.approx((0.5, 1 / 3, 0.4))
    assert token_prf([], []) == (1.0, 1.0, 1.0)
    assert token_prf(["a"], []) == (0.0, 0.0, 0.0)


def test_registry() -> None:
    from retrieval_bench.contracts import registry

    metric = registry.create("metrics", "token_f1", squad=True)
    assert isinstance(metric, TokenF1) and metric.name == "token_f1"
