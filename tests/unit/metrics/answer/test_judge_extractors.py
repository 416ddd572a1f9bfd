"""Score extractors of the LLM judge, on adversarial answers (docs/metrics.md#llm-as-judge)."""

from __future__ import annotations

import pytest

from retrieval_bench.errors import ConfigError
from retrieval_bench.metrics.answer.judge_extractors import EXTRACTOR_NAMES, get_extractor


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("4", 0.8),
        ("1", 0.2),
        ("5", 1.0),
        ("Rating: 4/5", 0.8),
        ("I'd say 4.", 0.8),
        ("**5**", 1.0),
        ("Score:3", 0.6),
        ("4 out of 5.", 0.8),
        ("4.0", 0.8),  # a whole number written with .0
        ("(2) partially correct", 0.4),
        ("On a scale of 1-5, I give 3", 0.6),  # the range is not the rating
        ("1 – 5: 4", 0.8),  # nor with an en dash and spaces
        ("Out of 5, I'd give 2", 0.4),  # "out of 5" is a denominator
        ("v2 scored 80%, so: 3", 0.6),  # attached to a word, a percentage
        ("-3, no: 2", 0.4),  # a negative number is not a rating
        ("In 2024 this rates 3", 0.6),  # later numbers count when earlier ones are not ratings
        ("10", None),
        ("3.5", None),
        ("2024", None),
        ("10/10", None),
        ("5/10", None),  # 5 out of 10 is not a 1-5 rating
        ("0", None),
        ("6", None),
        ("1,000", None),
        ("No number here", None),
        ("", None),
    ],
)
def test_scale_1_5(answer: str, expected: float | None) -> None:
    assert get_extractor("scale_1_5")(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("10", 1.0),
        ("10/10", 1.0),
        ("0", 0.0),
        ("7 out of 10", 0.7),
        ("Rating: 4/5", None),  # a 1-5 fraction is not on the 0-10 scale
        ("11", None),
        ("7.5", None),
        ("none", None),
    ],
)
def test_scale_0_10(answer: str, expected: float | None) -> None:
    assert get_extractor("scale_0_10")(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("0.75", 0.75),
        ("Score: .5", 0.5),
        ("1", 1.0),
        ("0", 0.0),
        ("0.9/1", 0.9),
        ("3 stars, 0.6 overall", 0.6),  # 3 is out of [0, 1]
        ("1.5", None),
        ("4/5", None),
        ("none", None),
    ],
)
def test_float_0_1(answer: str, expected: float | None) -> None:
    assert get_extractor("float_0_1")(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("YES.", 1.0),
        ("no", 0.0),
        ("Yes and no", 1.0),  # the first YES/NO word wins
        ("**No**, it is wrong", 0.0),
        ("I think yes", 1.0),
        ("Nothing is wrong, yes", 1.0),  # "Nothing" is not "no"
        ("Yesterday", None),
        ("Not sure", None),
        ("", None),
    ],
)
def test_yes_no(answer: str, expected: float | None) -> None:
    assert get_extractor("yes_no")(answer) == expected


def test_regex_extractor_reads_its_one_group() -> None:
    extract = get_extractor(r"regex:(?i)score\s*=\s*([0-9.]+)")
    assert extract("reasoning... SCORE = 0.25 done") == 0.25
    assert extract("score = .") is None  # matched, but not a number
    assert extract("no score") is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("regex:(", "not a valid regular expression"),
        (r"regex:\d+", "exactly one capture group"),
        (r"regex:(\d)(\d)", "exactly one capture group"),
    ],
)
def test_bad_regex_is_a_config_error(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        get_extractor(spec)


def test_unknown_name_lists_the_choices() -> None:
    with pytest.raises(ConfigError) as err:
        get_extractor("scale_1_10")
    for name in EXTRACTOR_NAMES:
        assert name in str(err.value)


def test_a_callable_is_used_as_is() -> None:
    def fn(text: str) -> float | None:
        return 0.5

    assert get_extractor(fn) is fn
    with pytest.raises(TypeError, match="name or a callable"):
        get_extractor(5)  # type: ignore[arg-type]


def test_find_reports_where_the_score_ends() -> None:
    from retrieval_bench.metrics.answer.judge_extractors import ScaleExtractor

    text = "Rating: 4/5 - correct"
    found = ScaleExtractor(1, 5).find(text)
    assert found is not None and text[found.start : found.end] == "4/5"
