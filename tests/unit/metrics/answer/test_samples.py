"""Sample normalisation: every accepted shape and alias, and the errors for bad rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.errors import DatasetError
from retrieval_bench.metrics.answer.samples import (
    ALIASES,
    SampleError,
    load_samples,
    to_sample,
    to_samples,
)


# ------------------------------------------------------------------ shapes
def test_sample_passes_through_and_gets_the_index_as_id_when_it_has_none() -> None:
    s = Sample("p", ("r",), id="x")
    assert to_sample(s, 3) is s
    assert to_sample(Sample("p", ("r",)), 3) == Sample("p", ("r",), id="3")


@pytest.mark.parametrize("pair", [("pred", "ref"), ["pred", "ref"], ("pred", ["r1", "r2"])])
def test_prediction_reference_pair(pair: Any) -> None:
    s = to_sample(pair, 5)
    assert s.prediction == "pred"
    assert s.references == (("r1", "r2") if isinstance(pair[1], list) else ("ref",))
    assert s.id == "5" and s.question is None and s.contexts == ()


def test_pair_with_no_reference() -> None:
    assert to_sample(("pred", None), 0).references == ()


def test_a_three_item_tuple_is_rejected() -> None:
    with pytest.raises(SampleError, match=r"row 2: a tuple row must be \(prediction, reference\)"):
        to_sample(("a", "b", "c"), 2)


@pytest.mark.parametrize("row", [42, "just text", None])
def test_other_row_types_are_rejected(row: Any) -> None:
    with pytest.raises(SampleError, match="row 0: expected a JSON object"):
        to_sample(row, 0)


@pytest.mark.parametrize("key", ALIASES["prediction"])
def test_every_prediction_alias(key: str) -> None:
    assert to_sample({key: "yes", "reference": "no"}, 0).prediction == "yes"


@pytest.mark.parametrize("key", ALIASES["references"])
def test_every_reference_alias_as_string_and_as_list(key: str) -> None:
    assert to_sample({"prediction": "p", key: "r"}, 0).references == ("r",)
    assert to_sample({"prediction": "p", key: ["r1", "r2"]}, 0).references == ("r1", "r2")
    assert to_sample({"prediction": "p", key: []}, 0).references == ()


@pytest.mark.parametrize("key", ALIASES["question"])
def test_every_question_alias(key: str) -> None:
    assert to_sample({"prediction": "p", key: "why?"}, 0).question == "why?"


@pytest.mark.parametrize("key", ALIASES["contexts"])
def test_every_contexts_alias_as_string_and_as_list(key: str) -> None:
    assert to_sample({"prediction": "p", key: "c"}, 0).contexts == ("c",)
    assert to_sample({"prediction": "p", key: ["c1", "c2"]}, 0).contexts == ("c1", "c2")


@pytest.mark.parametrize("key", ALIASES["id"])
def test_every_id_alias_and_integer_ids(key: str) -> None:
    assert to_sample({"prediction": "p", key: "q7"}, 0).id == "q7"
    assert to_sample({"prediction": "p", key: 7}, 0).id == "7"


def test_defaults_and_meta() -> None:
    s = to_sample({"answer": "p", "model": "m1", "latency": 0.5}, 4)
    assert s == Sample("p", (), None, (), "4", {"model": "m1", "latency": 0.5})


def test_a_full_row() -> None:
    row = {
        "qid": "a1",
        "query": "Capital of France?",
        "output": "Paris",
        "ground_truth": ["Paris", "paris, France"],
        "retrieved_contexts": ["France's capital is Paris."],
        "split": "dev",
    }
    assert to_sample(row, 0) == Sample(
        prediction="Paris",
        references=("Paris", "paris, France"),
        question="Capital of France?",
        contexts=("France's capital is Paris.",),
        id="a1",
        meta={"split": "dev"},
    )


def test_null_alias_counts_as_absent() -> None:
    s = to_sample({"prediction": "p", "answer": None, "reference": None, "query": None}, 0)
    assert (s.prediction, s.references, s.question) == ("p", (), None)


# -------------------------------------------------------------- ambiguity
def test_two_prediction_aliases_that_differ_are_ambiguous() -> None:
    with pytest.raises(SampleError) as info:
        to_sample({"id": "q", "answer": "a", "output": "b", "reference": "r"}, 3)
    msg = str(info.value)
    assert msg.startswith("row 3: ambiguous prediction: 'answer' and 'output' differ")
    assert "keys seen: id, answer, output, reference" in msg


def test_two_reference_aliases_that_differ_are_ambiguous() -> None:
    with pytest.raises(SampleError, match="ambiguous references: 'reference' and 'gold'"):
        to_sample({"prediction": "p", "reference": "a", "gold": "b"}, 0)


def test_aliases_that_agree_are_fine() -> None:
    row = {"prediction": "p", "answer": "p", "reference": "r", "references": ["r"]}
    s = to_sample(row, 0)
    assert (s.prediction, s.references) == ("p", ("r",))


def test_ambiguous_ids() -> None:
    with pytest.raises(SampleError, match="ambiguous id: 'id' and 'qid' differ"):
        to_sample({"prediction": "p", "id": "a", "qid": "b"}, 0)


# ------------------------------------------------------- missing and types
def test_missing_prediction_names_the_row_and_the_keys_seen() -> None:
    with pytest.raises(SampleError) as info:
        to_sample({"id": "q1", "query": "?", "reference_answer": "r"}, 6)
    msg = str(info.value)
    assert msg.startswith("row 6: no prediction: expected one of prediction, answer, output")
    assert msg.endswith("keys seen: id, query, reference_answer")


def test_null_prediction_is_missing() -> None:
    with pytest.raises(SampleError, match="no prediction"):
        to_sample({"prediction": None, "reference": "r"}, 0)


def test_empty_string_prediction_is_a_prediction() -> None:
    assert to_sample({"prediction": "", "reference": "r"}, 0).prediction == ""


@pytest.mark.parametrize(("value", "text"), [(42, "42"), (1.5, "1.5"), (-3, "-3")])
def test_numeric_predictions_and_references_become_text(value: Any, text: str) -> None:
    s = to_sample({"prediction": value, "reference": [value, "x"]}, 0)
    assert s.prediction == text and s.references == (text, "x")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (True, "must be a string \\(or a number\\), got bool"),
        ({"text": "x"}, "must be a string \\(or a number\\), got dict"),
        (["x"], "must be a string \\(or a number\\), got list"),
        (float("nan"), "must be a finite number"),
    ],
)
def test_bad_prediction_types(value: Any, why: str) -> None:
    with pytest.raises(SampleError, match=f"row 1: 'prediction' {why}"):
        to_sample({"prediction": value}, 1)


def test_bad_reference_types() -> None:
    with pytest.raises(SampleError, match="'answers' must be a string or a list of strings"):
        to_sample({"prediction": "p", "answers": {"text": "r"}}, 0)
    with pytest.raises(SampleError, match=r"'gold\[1\]' must be a string \(or a number\)"):
        to_sample({"prediction": "p", "gold": ["r", None]}, 0)


def test_contexts_must_be_strings() -> None:
    with pytest.raises(SampleError, match=r"contexts\[0\] must be a string, got int"):
        to_sample({"prediction": "p", "contexts": [3]}, 0)
    with pytest.raises(SampleError, match="'context' must be a string or a list of strings"):
        to_sample({"prediction": "p", "context": 3}, 0)


def test_question_must_be_text() -> None:
    with pytest.raises(SampleError, match="'query' must be a string"):
        to_sample({"prediction": "p", "query": ["a"]}, 0)


@pytest.mark.parametrize("value", ["", "  ", True, 1.5, ["a"]])
def test_bad_ids(value: Any) -> None:
    with pytest.raises(SampleError, match="'id' must be a non-empty string or an integer"):
        to_sample({"prediction": "p", "id": value}, 0)


def test_to_samples_rejects_repeated_ids() -> None:
    with pytest.raises(SampleError, match="row 2: duplicate sample id 'a' \\(first at row 0\\)"):
        to_samples([{"prediction": "1", "id": "a"}, ("x", "y"), {"prediction": "2", "id": "a"}])


# ------------------------------------------------------------------ files
def _write(path: Path, lines: list[Any]) -> Path:
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def test_load_samples_reports_bad_rows_with_line_numbers_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path / "p.jsonl",
        [
            {"id": "a", "prediction": "x", "reference": "x"},  # line 1
            "",  # line 2: blank, ignored
            "{not json",  # line 3
            {"id": "b", "reference": "r"},  # line 4: no prediction
            {"prediction": "y", "reference": "y"},  # line 5: id = row index 3
            {"id": "c", "prediction": {"t": 1}},  # line 6: wrong type
            [1, 2, 3],  # line 7
            {"id": "a", "prediction": "z"},  # line 8: duplicate id
            ["pred", "ref"],  # line 9: a pair, id = row index 7
        ],
    )
    samples, errors = load_samples(path)
    assert [s.id for s in samples] == ["a", "3", "7"]
    assert samples[2] == Sample("pred", ("ref",), id="7")
    assert [e.line_no for e in errors] == [3, 4, 6, 7, 8]
    messages = [str(e) for e in errors]
    assert messages[0].startswith("line 3: invalid JSON:")
    assert messages[1] == (
        "line 4: no prediction: expected one of prediction, answer, output, response, "
        "generated, completion (non-null); keys seen: id, reference"
    )
    assert messages[2] == "line 6: 'prediction' must be a string (or a number), got dict"
    assert messages[3] == "line 7: a list row must be (prediction, reference), got 3 items"
    assert messages[4] == "line 8: duplicate id 'a' (first on line 1)"


def test_load_samples_of_an_empty_file(tmp_path: Path) -> None:
    assert load_samples(_write(tmp_path / "e.jsonl", [""])) == ([], [])


def test_load_samples_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist: check the path"):
        load_samples(tmp_path / "nope.jsonl")
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(DatasetError, match="is not UTF-8 text"):
        load_samples(binary)
    with pytest.raises(DatasetError, match="is a folder"):
        load_samples(tmp_path)
