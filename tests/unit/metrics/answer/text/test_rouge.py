"""ROUGE-1/2/L/Lsum: hand-computed P/R/F, tokenisation, stemming, multi-reference, edge cases.

Running example: pred "the cat sat on the mat" (6 tokens), ref "the cat is on the mat" (6).
    ROUGE-1: overlap the x2, cat, on, mat = 5        -> P = R = F = 5/6
    ROUGE-2: "the cat", "on the", "the mat" = 3 of 5 -> P = R = F = 3/5
    ROUGE-L: LCS "the cat on the mat" = 5            -> P = R = F = 5/6
"""

from __future__ import annotations

import sys

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.answer.text.rouge import (
    Rouge,
    Rouge1,
    Rouge2,
    RougeL,
    RougeLsum,
    RougeScore,
    porter_stem,
    rouge1,
    rouge2,
    rouge_l,
    rouge_lsum,
    rouge_tokens,
)

PRED = "the cat sat on the mat"
REF = "the cat is on the mat"


@pytest.mark.parametrize(
    ("rouge_type", "expected"),
    [("rouge1", 5 / 6), ("rouge2", 3 / 5), ("rougeL", 5 / 6), ("rougeLsum", 5 / 6)],
)
def test_running_example(rouge_type: str, expected: float) -> None:
    result = Rouge(rouge_type=rouge_type).scores(PRED, [REF])
    assert result == pytest.approx(RougeScore(expected, expected, expected))


def test_measures_and_details() -> None:
    # pred "a b c d" vs ref "a b": ROUGE-1 overlap 2 -> P = 2/4, R = 2/2, F = 2/3
    for measure, expected in (("precision", 0.5), ("recall", 1.0), ("f", 2 / 3)):
        score = Rouge(rouge_type="rouge1", measure=measure).evaluate("a b c d", "a b")
        assert score.value == pytest.approx(expected)
        assert score.details == pytest.approx({"precision": 0.5, "recall": 1.0, "fmeasure": 2 / 3})


def test_rouge2_counts_repeated_bigrams_with_clipping() -> None:
    # pred "a a a" bigrams: (a a) x2; ref "a a b": (a a), (a b) -> overlap 1, P = 1/2, R = 1/2
    assert Rouge(rouge_type="rouge2").scores("a a a", ["a a b"]) == pytest.approx((0.5, 0.5, 0.5))


def test_rouge_l_is_in_order_rouge_1_is_not() -> None:
    # "d c b a" vs "a b c d": unigrams all shared (1.0) but LCS = 1 -> 1/4
    assert Rouge(rouge_type="rouge1").scores("d c b a", ["a b c d"]).fmeasure == 1.0
    assert Rouge(rouge_type="rougeL").scores("d c b a", ["a b c d"]).fmeasure == 0.25


def test_rouge_lsum_lin_2004_example() -> None:
    # r = w1..w5 (m = 5); candidate sentences w1 w2 w6 w7 w8 / w1 w3 w8 w9 w5 (n = 10)
    # union LCS hits = 4 -> R = 4/5, P = 4/10, F = 2 * 0.4 * 0.8 / 1.2 = 8/15
    result = Rouge(rouge_type="rougeLsum").scores(
        "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", ["w1 w2 w3 w4 w5"]
    )
    assert result == pytest.approx(RougeScore(0.4, 0.8, 8 / 15))


def test_rouge_lsum_differs_from_rouge_l_when_sentences_are_reordered() -> None:
    # ROUGE-L on the whole text: LCS("w3 w4 w1 w2", "w1 w2 w3 w4") = 2 -> 1/2
    # ROUGE-Lsum: LCS with each prediction sentence covers all 4 reference tokens -> 1
    assert Rouge(rouge_type="rougeL").scores("w3 w4\nw1 w2", ["w1 w2 w3 w4"]).fmeasure == 0.5
    assert Rouge(rouge_type="rougeLsum").scores("w3 w4\nw1 w2", ["w1 w2 w3 w4"]).fmeasure == 1.0
    # empty lines are dropped; a line without tokens adds nothing
    lsum = Rouge(rouge_type="rougeLsum")
    assert lsum.sentence_tokens("a b\n\n--\nc") == [["a", "b"], [], ["c"]]


def test_tokenisation_is_rouge_scores() -> None:
    assert rouge_tokens("Hello, World! it's 2024") == ["hello", "world", "it", "s", "2024"]
    # non-ASCII letters are dropped (they split words): "café" -> "caf"; CJK vanishes
    assert rouge_tokens("Café naïve — 東京 x2") == ["caf", "na", "ve", "x2"]
    assert rouge_tokens("東京") == []
    # str.lower() first: "İ" lowercases to "i" + combining dot, so its "i" survives
    assert rouge_tokens("İs") == ["i", "s"]


def test_stemmer_only_for_tokens_longer_than_three() -> None:
    stem = porter_stem()
    # Porter: running -> run, easily -> easili; "was" (3 chars) is not stemmed (else "wa")
    assert rouge_tokens("Was running easily", stem) == ["was", "run", "easili"]
    plain = Rouge(rouge_type="rouge1").scores("cats running", ["cat runs"])
    stemmed = Rouge(rouge_type="rouge1", use_stemmer=True).scores("cats running", ["cat runs"])
    assert plain.fmeasure == 0.0
    assert stemmed.fmeasure == 1.0  # cat/cat (3 chars, kept), running/runs -> run


def test_missing_nltk_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nltk.stem.porter", None)
    porter_stem.cache_clear()
    try:
        with pytest.raises(ConfigError, match="rougeL: use_stemmer=True needs nltk"):
            Rouge(use_stemmer=True)
        Rouge(use_stemmer=False)  # no nltk needed
    finally:
        porter_stem.cache_clear()


def test_multi_reference_takes_the_reference_with_the_best_f() -> None:
    # ref1 "a b c d e f g h": P = 1, R = 2/8, F = 0.4; ref2 "a z": P = R = F = 0.5
    # rouge-score's score_multi keeps ref2 whole: precision 0.5 (not the best precision, 1.0)
    metric = Rouge(rouge_type="rouge1", measure="precision")
    score = metric.evaluate("a b", ["a b c d e f g h", "a z"])
    assert score.value == 0.5
    assert score.details["fmeasure"] == 0.5
    # ties keep the first reference
    assert Rouge(rouge_type="rouge1").scores("a b", ["a c", "b d"]) == (0.5, 0.5, 0.5)


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
def test_empty_sides_and_no_reference_score_zero(rouge_type: str) -> None:
    metric = Rouge(rouge_type=rouge_type)
    cases = (("", [REF]), (PRED, [""]), ("", [""]), (PRED, []), ("!!", ["?"]))
    for prediction, references in cases:
        assert metric.scores(prediction, references) == (0.0, 0.0, 0.0)


def test_identical_texts_score_one() -> None:
    for rouge_type in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert Rouge(rouge_type=rouge_type).scores(REF, [REF]) == (1.0, 1.0, 1.0)


def test_other_n_and_bad_options() -> None:
    # ROUGE-3: "on the mat" is the only shared trigram of 4 -> 1/4
    assert Rouge(rouge_type="rouge3").scores(PRED, [REF]).fmeasure == pytest.approx(0.25)
    with pytest.raises(ConfigError, match="unknown rouge_type 'rougeW'"):
        Rouge(rouge_type="rougeW")
    with pytest.raises(ConfigError, match="unknown measure 'f1'"):
        Rouge(measure="f1")


def test_factories_and_registry_names() -> None:
    from retrieval_bench.contracts import registry

    for factory, name in ((rouge1, "rouge1"), (rouge2, "rouge2"), (rouge_l, "rougeL")):
        assert factory().name == name and factory().rouge_type == name
    assert rouge_lsum(measure="recall").measure == "recall"
    classes = {"rouge1": Rouge1, "rouge2": Rouge2, "rougeL": RougeL, "rougeLsum": RougeLsum}
    for name, cls in classes.items():
        assert registry.get("metrics", name) is cls and issubclass(cls, Rouge)
        metric = registry.create("metrics", name, use_stemmer=True)
        assert isinstance(metric, cls) and metric.name == name and metric.rouge_type == name
        assert cls().scores(PRED, [REF]) == Rouge(rouge_type=name).scores(PRED, [REF])
    assert RougeL(name="rl").name == "rl"
    with pytest.raises(ConfigError, match="unknown parameter 'name'"):
        registry.create("metrics", "rougeL", name="rl")
    with pytest.raises(ConfigError, match="rouge_type: Input should be 'rouge1'"):
        registry.create("metrics", "rouge1", rouge_type="rougeL")
