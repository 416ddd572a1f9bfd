"""Answer normalisation: each option alone, their order, the SQuAD preset, Unicode punctuation."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.answer.text.normalize import (
    TextNormalizer,
    is_punctuation,
    normalize_answer,
    normalizer_from_options,
    remove_punctuation,
    sample_texts,
)


@pytest.mark.parametrize("char", list("!\"#%&'()*,-./:;?@[\\]_{}") + ["$", "+", "<", "=", "^", "|"])
def test_ascii_punctuation_and_symbols_count(char: str) -> None:
    assert is_punctuation(char)


@pytest.mark.parametrize("char", ["¿", "¡", "«", "»", "—", "–", "…", "。", "、", "「", "”", "‘"])
def test_unicode_punctuation_counts(char: str) -> None:
    assert is_punctuation(char)  # categories Po, Ps, Pe, Pd, Pi, Pf


@pytest.mark.parametrize("char", ["a", "É", "7", " ", "€", "→", "東", "\u0301"])
def test_letters_digits_and_non_ascii_symbols_do_not(char: str) -> None:
    assert not is_punctuation(char)  # "€" is Sc and "→" Sm: symbols, not P*


def test_remove_punctuation_deletes_rather_than_spaces() -> None:
    assert remove_punctuation("don't stop—«now»!") == "dont stopnow"


def test_defaults_collapse_and_strip_whitespace_only() -> None:
    normalize = TextNormalizer()
    assert normalize("  The  Cat,\tsat\n ") == "The Cat, sat"


def test_each_option_alone() -> None:
    text = " The  cat, the END. "
    assert TextNormalizer(ignore_case=True)(text) == "the cat, the end."
    assert TextNormalizer(ignore_punctuation=True)(text) == "The cat the END"
    assert TextNormalizer(remove_articles=True)(text) == "cat, END."  # any case
    assert TextNormalizer(normalize_whitespace=False)(text) == "The  cat, the END."
    assert TextNormalizer(strip=False)(text) == " The cat, the END. "
    assert TextNormalizer(normalize_whitespace=False, strip=False)(text) == text


def test_punctuation_goes_before_articles_as_in_squad() -> None:
    # "the-end" loses its hyphen first, so "theend" is not an article (SQuAD's order)
    assert normalize_answer("The-end of a story") == "theend of story"


def test_squad_preset_matches_the_published_examples() -> None:
    assert normalize_answer("The Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("  an   Apple, a day ") == "apple day"
    assert normalize_answer("¿Qué? «Sí»") == "qué sí"
    assert TextNormalizer.squad() == TextNormalizer(True, True, True, True, True)


def test_tokens_split_the_normalised_text() -> None:
    assert TextNormalizer.squad().tokens("The cat's hat.") == ["cats", "hat"]
    assert TextNormalizer().tokens("   ") == []


def test_squad_conflicting_with_whitespace_options_is_a_config_error() -> None:
    options = dict(ignore_case=False, ignore_punctuation=False, remove_articles=False, squad=True)
    with pytest.raises(ConfigError, match="squad=True"):
        normalizer_from_options("m", normalize_whitespace=True, strip=False, **options)
    with pytest.raises(ConfigError, match="squad=True"):
        normalizer_from_options("m", normalize_whitespace=False, strip=True, **options)
    preset = normalizer_from_options("m", normalize_whitespace=True, strip=True, **options)
    assert preset == TextNormalizer.squad()


def test_sample_texts_rejects_non_strings() -> None:
    assert sample_texts(Sample("a", ("b", "c")), "m") == ("a", ("b", "c"))
    with pytest.raises(TypeError, match="m: prediction must be a string, got int"):
        sample_texts(Sample(5, ("b",)), "m")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="references must be strings, got NoneType"):
        sample_texts(Sample("a", (None,)), "m")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one string"):
        sample_texts(Sample("a", "b"), "m")  # type: ignore[arg-type]
