"""exact_match: each option, the SQuAD preset, multi-reference, empty and Unicode input."""

from __future__ import annotations

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.answer.text.exact_match import ExactMatch


def em(prediction: str, reference: str | list[str] | None, **options: bool) -> float | None:
    return ExactMatch(**options).evaluate(prediction, reference).value


def test_defaults_ignore_only_surrounding_and_repeated_whitespace() -> None:
    assert em("  Paris \n", "Paris") == 1.0
    assert em("New   York", "New York") == 1.0
    assert em("paris", "Paris") == 0.0  # case counts by default
    assert em("Paris.", "Paris") == 0.0  # punctuation counts by default


def test_ignore_case() -> None:
    assert em("PARIS", "paris", ignore_case=True) == 1.0
    assert em("PARIS", "paris.", ignore_case=True) == 0.0


def test_ignore_punctuation_ascii_and_unicode() -> None:
    assert em("Paris!", "Paris", ignore_punctuation=True) == 1.0
    assert em("«Paris»", "Paris", ignore_punctuation=True) == 1.0  # Pi/Pf quotes
    assert em("¿Qué?", "Qué", ignore_punctuation=True) == 1.0
    assert em("$5", "5", ignore_punctuation=True) == 1.0  # ASCII "$" is in string.punctuation
    assert em("€5", "5", ignore_punctuation=True) == 0.0  # "€" is a symbol (Sc), kept


def test_whitespace_options_can_be_turned_off() -> None:
    assert em("New  York", "New York", normalize_whitespace=False) == 0.0
    assert em(" Paris", "Paris", strip=False) == 0.0
    assert em(" New  York ", " New York ", strip=False) == 1.0


def test_remove_articles() -> None:
    assert em("the Eiffel Tower", "Eiffel Tower", remove_articles=True) == 1.0
    assert em("theatre", "atre", remove_articles=True) == 0.0  # whole words only


def test_squad_preset() -> None:
    # "The answer is: an apple." -> "answer is apple" (lower, no punctuation, no articles)
    assert em("The answer is: an apple.", "answer is apple", squad=True) == 1.0
    assert em("The answer is: an apple.", "answer is apple") == 0.0


def test_squad_with_whitespace_off_is_rejected() -> None:
    with pytest.raises(ConfigError, match="exact_match: squad=True"):
        ExactMatch(squad=True, strip=False)


def test_multi_reference_takes_the_best() -> None:
    assert em("Lyon", ["Paris", "Lyon"]) == 1.0
    assert em("Nice", ["Paris", "Lyon"]) == 0.0


def test_empty_strings() -> None:
    assert em("", "") == 1.0
    assert em("   ", "") == 1.0  # strip makes it empty
    assert em("", "Paris") == 0.0
    assert em("Paris", "") == 0.0


def test_no_reference_compares_with_the_empty_string() -> None:
    # SQuAD v2.0's convention for unanswerable questions
    assert em("", None) == 1.0
    assert em("", []) == 1.0
    assert em("Paris", None) == 0.0


def test_unicode_is_compared_as_is() -> None:
    assert em("東京", "東京") == 1.0
    assert em("Ünïcödé", "ünïcödé", ignore_case=True) == 1.0
    # no Unicode normalisation: composed and decomposed é differ
    assert em("caf\u00e9", "cafe\u0301") == 0.0


def test_name_and_registry() -> None:
    from retrieval_bench.contracts import registry

    metric = registry.create("metrics", "exact_match", ignore_case=True)
    assert isinstance(metric, ExactMatch)
    assert metric.name == "exact_match"
    assert metric.evaluate("A", "a").value == 1.0
    assert ExactMatch(name="em_ci", ignore_case=True).name == "em_ci"
    # the label is a keyword of the class (a config's ``id``), not one of its Params
    with pytest.raises(ConfigError, match="unknown parameter 'name'"):
        registry.create("metrics", "exact_match", name="em_ci")
    with pytest.raises(ConfigError, match="unknown parameter 'ignore_kase'"):
        ExactMatch(ignore_kase=True)
