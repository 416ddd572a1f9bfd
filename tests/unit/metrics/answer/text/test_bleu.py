"""BLEU: hand-computed sentence and corpus scores for every option and edge case.

Running example (tokenize 13a, no punctuation involved):
    hyp "the cat sat on the mat"   ref "the cat is on the mat"     c = r = 6 -> BP = 1
    1-grams: the x2, cat, on, mat match          -> 5/6
    2-grams: "the cat", "on the", "the mat"      -> 3/5
    3-grams: "on the mat"                        -> 1/4
    4-grams: none of "the cat sat on", "cat sat on the", "sat on the mat" -> 0/3
"""

from __future__ import annotations

import math

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.answer.text.bleu import (
    BLEU,
    BleuStatistics,
    bleu_from_statistics,
    tokenize_code,
)

HYP = "the cat sat on the mat"
REF = "the cat is on the mat"


def bleu(prediction: str, reference: str | list[str] | None, **options: object) -> float | None:
    return BLEU(**options).evaluate(prediction, reference).value  # type: ignore[arg-type]


def test_statistics_of_the_running_example() -> None:
    stats = BLEU().statistics(HYP, [REF])
    assert stats == BleuStatistics(6, 6, (5, 3, 1, 0), (6, 5, 4, 3))


def test_smoothing_none_zero_when_an_order_has_no_match() -> None:
    assert bleu(HYP, REF, smoothing="none") == 0.0


def test_smoothing_exp() -> None:
    # first order without a match: p4 = 1 / (2 * 3)
    # -> (5/6 * 3/5 * 1/4 * 1/6) ** 1/4 = (1/48) ** 1/4
    assert bleu(HYP, REF) == pytest.approx((1 / 48) ** 0.25, abs=1e-12)
    assert bleu(HYP, REF, smoothing="exp") == pytest.approx(0.3799178428257963, abs=1e-12)


def test_smoothing_floor() -> None:
    # p4 = 0.1 / 3 -> (5/6 * 3/5 * 1/4 * 1/30) ** 1/4 = (1/240) ** 1/4
    assert bleu(HYP, REF, smoothing="floor") == pytest.approx((1 / 240) ** 0.25, abs=1e-12)
    # smooth_value 0.5: p4 = 0.5 / 3 -> (1/2 * 1/4 * 1/6) ** 1/4 = (1/48) ** 1/4
    value = bleu(HYP, REF, smoothing="floor", smooth_value=0.5)
    assert value == pytest.approx((1 / 48) ** 0.25, abs=1e-12)


def test_smoothing_add_k() -> None:
    # k = 1 added to orders >= 2: 5/6, 4/6, 2/5, 1/4 -> product 1/18
    assert bleu(HYP, REF, smoothing="add-k") == pytest.approx((1 / 18) ** 0.25, abs=1e-12)
    # k = 2: 5/6, 5/7, 3/6, 2/5 -> product 5/42
    value = bleu(HYP, REF, smoothing="add-k", smooth_value=2)
    assert value == pytest.approx((5 / 6 * 5 / 7 * 3 / 6 * 2 / 5) ** 0.25, abs=1e-12)


def test_max_ngram_order_two() -> None:
    # (5/6 * 3/5) ** 1/2 = (1/2) ** 1/2
    assert bleu(HYP, REF, max_ngram_order=2, smoothing="none") == pytest.approx(0.5**0.5)


def test_max_ngram_order_one_is_clipped_unigram_precision_times_bp() -> None:
    # "the the the" vs "the cat": clipped 1/3, c = 3 > r = 2 -> BP 1
    assert bleu("the the the", "the cat", max_ngram_order=1) == pytest.approx(1 / 3)


def test_brevity_penalty_and_effective_order() -> None:
    # "the cat" vs "the cat sat": p1 = 2/2, p2 = 1/1, no 3-grams -> N' = 2; BP = exp(1 - 3/2)
    assert bleu("the cat", "the cat sat") == pytest.approx(math.exp(-0.5))
    # without effective order the missing 3- and 4-gram precisions make it 0
    assert bleu("the cat", "the cat sat", effective_order=False) == 0.0
    score = BLEU().evaluate("the cat", "the cat sat")
    assert score.details["brevity_penalty"] == pytest.approx(math.exp(-0.5))
    assert score.details["precision_1"] == 1.0 and score.details["precision_3"] == 0.0
    assert (score.details["hyp_len"], score.details["ref_len"]) == (2.0, 3.0)


def test_clipping_repeated_words() -> None:
    # "the the the the" vs "the cat": p1 = 1/4; 2-, 3-, 4-grams unmatched:
    # exp smoothing 1/(2*3), 1/(4*2), 1/(8*1); BP = 1 (4 > 2)
    expected = (1 / 4 * 1 / 6 * 1 / 8 * 1 / 8) ** 0.25
    assert bleu("the the the the", "the cat") == pytest.approx(expected, abs=1e-12)


def test_multi_reference_clips_against_each_and_takes_closest_length() -> None:
    # refs of length 2 and 6 are equally close to c = 4: the shorter wins -> BP = 1;
    # every n-gram of "a b c d" is in the second reference -> BLEU 1
    assert bleu("a b c d", ["a b", "a b c d e f"]) == pytest.approx(1.0)
    # with the long reference alone: BP = exp(1 - 6/4)
    assert bleu("a b c d", ["a b c d e f"]) == pytest.approx(math.exp(-0.5))
    # clipping takes the largest count in any one reference: "a a" vs ["a b", "a a"] -> 2/2
    assert bleu("a a", ["a b", "a a"], max_ngram_order=1) == 1.0


def test_identical_is_one() -> None:
    assert bleu(REF, REF) == pytest.approx(1.0)


def test_empty_hypothesis_reference_or_no_reference_is_zero() -> None:
    assert bleu("", REF) == 0.0
    assert bleu(HYP, "") == 0.0
    assert bleu("", "") == 0.0
    assert bleu(HYP, None) == 0.0
    assert bleu("  ", " ") == 0.0


def test_lowercase_option() -> None:
    assert bleu("THE CAT", "the cat") == 0.0
    assert bleu("THE CAT", "the cat", lowercase=True) == pytest.approx(1.0)


def test_tokenize_13a_none_and_code() -> None:
    # 13a splits the final period off; "none" keeps "mat." whole; "code" splits identifiers
    assert BLEU().tokens("on the mat.") == ("on", "the", "mat", ".")
    assert BLEU(tokenize="none").tokens("on the mat.  ") == ("on", "the", "mat.")
    assert BLEU(tokenize="code").tokens("x = foo.bar(baz_1)") == (
        "x", "=", "foo", ".", "bar", "(", "baz_1", ")",
    )  # fmt: skip
    # whitespace split: "mat." != "mat" -> p1 = 1/2, p2 = 0 -> exp: 1/(2*1) -> (1/4) ** 1/2
    assert bleu("the mat.", "the mat", tokenize="none") == pytest.approx(0.5)
    # 13a: "the mat ." (3) vs "the mat" (2): p1 = 2/3, p2 = 1/2, p3: 1/(2*1) -> (1/6) ** 1/3
    assert bleu("the mat.", "the mat") == pytest.approx((1 / 6) ** (1 / 3))


def test_tokenize_code_unicode_identifiers() -> None:
    assert tokenize_code("größe+=1;  # ok") == ["größe", "+", "=", "1", ";", "#", "ok"]


def test_trailing_whitespace_is_ignored_like_sacrebleu() -> None:
    # "x-\n" is right-stripped to "x-" first, so the hyphen is not an end-of-line join
    assert BLEU().tokens("well-\n") == ("well-",)


def test_corpus_bleu_sums_statistics_and_is_not_the_mean() -> None:
    # S1 = running example: matches (5,3,1,0), totals (6,5,4,3), c = r = 6
    # S2 "hello world" vs "hello there world": (2,0,0,0), (2,1,0,0), c = 2, r = 3
    # corpus: (7,3,1,0) / (8,6,4,3), c = 8, r = 9 -> BP = exp(1 - 9/8); exp: p4 = 1/(2*3)
    samples = [Sample(HYP, (REF,)), Sample("hello world", ("hello there world",))]
    metric = BLEU()
    expected = math.exp(-1 / 8) * (7 / 8 * 3 / 6 * 1 / 4 * 1 / 6) ** 0.25
    assert metric.corpus_score(samples) == pytest.approx(expected, abs=1e-12)
    # sentence scores: S1 (1/48) ** 1/4, S2 N' = 2: exp(-1/2) * (1 * 1/2) ** 1/2
    s2 = math.exp(-0.5) * 0.5**0.5
    assert metric.score(samples[1]).value == pytest.approx(s2)
    mean = ((1 / 48) ** 0.25 + s2) / 2
    assert abs(metric.corpus_score(samples) - mean) > 0.05


def test_corpus_bleu_edge_cases() -> None:
    assert BLEU().corpus_score([]) == 0.0
    assert BLEU().corpus_score([Sample("", ("a b",))]) == 0.0
    with pytest.raises(TypeError, match="bleu: prediction must be a string"):
        BLEU().corpus_score([Sample(None, ("a",))])  # type: ignore[arg-type]


def test_bleu_from_statistics_directly() -> None:
    stats = BleuStatistics(6, 6, (5, 3, 1, 0), (6, 5, 4, 3))
    result = bleu_from_statistics(stats, smoothing="none")
    assert result.score == 0.0
    assert result.precisions == pytest.approx((5 / 6, 3 / 5, 1 / 4, 0.0))
    assert result.brevity_penalty == 1.0
    # no match at all: 0 whatever the smoothing
    zero = BleuStatistics(3, 3, (0, 0, 0, 0), (3, 2, 1, 0))
    assert bleu_from_statistics(zero, smoothing="floor").score == 0.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"smoothing": "laplace"}, "unknown smoothing 'laplace'"),
        ({"tokenize": "intl"}, "unknown tokenize 'intl'"),
        ({"max_ngram_order": 0}, "max_ngram_order must be an integer >= 1"),
        ({"max_ngram_order": 2.5}, "max_ngram_order: Input should be a valid integer"),
        ({"max_ngram_order": True}, "max_ngram_order: Input should be a valid integer"),
        ({"smoothing_value": 1}, "unknown parameter 'smoothing_value'"),
        ({"smooth_value": 0}, "smooth_value must be > 0"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BLEU(**options)  # type: ignore[arg-type]


def test_registry() -> None:
    from retrieval_bench.contracts import registry

    metric = registry.create("metrics", "bleu", smoothing="floor", max_ngram_order=2)
    assert isinstance(metric, BLEU) and metric.name == "bleu"
    assert metric.evaluate(HYP, REF).value == pytest.approx(0.5**0.5)
