from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.prompt_eval.errors import InvalidRowError, UnknownUseCaseError
from retrieval_bench.prompt_eval.examples.code_questions import CodeQuestions
from retrieval_bench.prompt_eval.fields import as_bool, as_choice, as_list
from retrieval_bench.prompt_eval.records import Row
from retrieval_bench.prompt_eval.usecase import extract_json, get_use_case, use_case_names
from tests.unit.prompt_eval.conftest import Sentiment


def test_registry_has_both_examples() -> None:
    assert {"action_items", "code_questions"} <= set(use_case_names())
    assert isinstance(get_use_case("code_questions"), CodeQuestions)


def test_unknown_use_case_lists_registered() -> None:
    with pytest.raises(UnknownUseCaseError, match="unknown use case 'nope'.*code_questions"):
        get_use_case("nope")


def test_module_and_file_references(tmp_path: Path) -> None:
    uc = get_use_case("tests.unit.prompt_eval.conftest:Sentiment")
    assert uc.name == "sentiment"
    f = tmp_path / "my_case.py"
    f.write_text(
        "from retrieval_bench.prompt_eval.usecase import UseCase\n"
        "class Mine(UseCase):\n    name = 'mine'\n    variables = ('a',)\n    fields = ('b',)\n"
    )
    assert get_use_case(f"{f}:Mine").fields == ("b",)
    with pytest.raises(UnknownUseCaseError, match="not a UseCase"):
        get_use_case(f"{f}:Missing")
    with pytest.raises(UnknownUseCaseError, match="does not exist"):
        get_use_case(f"{tmp_path / 'nope.py'}:X")


def test_extract_json() -> None:
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Here: {"a": [1, 2]} done') == {"a": [1, 2]}
    assert extract_json("[1, 2]") == [1, 2]
    assert extract_json('x {broken then {"b": 2}') == {"b": 2}
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("plain words")


def test_validate_row_names_row_and_problem() -> None:
    uc = Sentiment()
    assert uc.validate_row(Row("ok", {"text": "t"}, {"label": "POS"})) == {"label": "pos"}
    cases = [
        (Row("a", {}, {"label": "pos"}), "row 'a': missing variable"),
        (Row("b", {"text": "t", "x": "y"}, {"label": "pos"}), "unknown variable.*x"),
        (Row("c", {"text": "t"}, {"label": "pos", "z": 1}), "unknown ground-truth field.*z"),
        (Row("d", {"text": "t"}, {"label": "meh"}), "row 'd': ground truth fails.*pos, neg"),
        (Row("e", {"text": 3}, {"label": "pos"}), "must be text"),  # type: ignore[dict-item]
        (Row(" ", {"text": "t"}, {"label": "pos"}), "empty id"),
    ]
    for row, pattern in cases:
        with pytest.raises(InvalidRowError, match=pattern):
            uc.validate_row(row)


def test_ground_truth_needs_every_field_but_a_response_may_lack_one() -> None:
    uc = CodeQuestions()
    with pytest.raises(InvalidRowError, match="no value for language"):
        uc.validate_row(Row("q", {"question": "?"}, {"category": "bug"}))
    response = uc.process(uc.parse("This is a how-to question."))
    assert response == {"category": "howto", "language": None}
    assert uc.evaluate(response, {"category": "howto", "language": "go"}) == {
        "category": True,
        "language": False,
    }


def test_code_questions_parse_text_and_json() -> None:
    uc = CodeQuestions()
    assert uc.parse('{"category": "How-to", "language": "Go"}') == {
        "category": "How-to",
        "language": "Go",
    }
    assert uc.process(uc.parse('{"category": "How-to", "language": "Go"}')) == {
        "category": "howto",
        "language": "go",
    }
    text = "This question is a bug report about JavaScript, not Java."
    assert uc.parse(text) == {"category": "bug", "language": "javascript"}
    # "go" as an English verb is not the Go language; "Go" (capitalised) is
    assert uc.parse("A concept: let it go.") == {"category": "concept"}
    assert uc.parse("A concept in Go.") == {"category": "concept", "language": "go"}
    with pytest.raises(ValueError, match="no category or language"):
        uc.parse("I like turtles.")


def test_field_coercers() -> None:
    assert as_choice(" How-To ", "c", ("howto", "bug")) == "howto"
    assert as_bool("Yes", "b") is True and as_bool(0, "b") is False
    assert as_list('["a"]', "l") == ["a"]
    with pytest.raises(ValueError, match="c must be one of howto, bug"):
        as_choice("other", "c", ("howto", "bug"))
    with pytest.raises(ValueError, match="l must be a list"):
        as_list("a", "l")
