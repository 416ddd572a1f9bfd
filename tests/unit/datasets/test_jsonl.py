"""The dataset JSONL loader: good rows load, bad rows are reported by line number."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_bench.datasets.jsonl import (
    check_gold,
    dataset_fingerprint,
    load_examples,
    question_fingerprint,
    write_examples,
)
from retrieval_bench.errors import DatasetError
from retrieval_bench.types import Example, Span


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row(**fields: object) -> str:
    return json.dumps(fields)


def test_good_rows_load_with_spans_optional_fields_and_meta(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "q.jsonl",
        [
            row(id="q1", query="Where is parsing?", gold_files=["./src/parse.py", "src/parse.py"]),
            "",
            row(
                id="q2",
                query="How are tokens counted?",
                gold_files=["a.py", "b.py"],
                gold_spans=[{"path": "a.py", "start_line": 3, "end_line": 9}, ["b.py", 1, 1]],
                reference_answer="In a.py",
                split="test",
                leaks_path=True,
                commit="abc",
            ),
        ],
    )
    result = load_examples(path)
    assert result.errors == []
    q1, q2 = result.examples
    assert q1.gold_files == ("src/parse.py",)  # normalised and de-duplicated
    assert q1.gold_spans == () and q1.split is None and q1.meta == {}
    assert q2.gold_spans == (Span("a.py", 3, 9), Span("b.py", 1, 1))
    assert q2.reference_answer == "In a.py" and q2.split == "test"
    assert q2.meta == {"leaks_path": True, "commit": "abc"}


def test_malformed_rows_are_reported_by_line_and_the_rest_load(tmp_path: Path) -> None:
    lines = [
        row(id="ok1", query="first question", gold_files=["a.py"]),  # 1
        '{"id": "broken", "query": ',  # 2 bad JSON
        row(query="no id", gold_files=["a.py"]),  # 3
        row(id="q4", query="  ", gold_files=["a.py"]),  # 4 empty query
        row(id="q5", query="files not a list", gold_files="a.py"),  # 5
        "",  # 6 blank: ignored
        row(id="q7", query="empty gold", gold_files=[]),  # 7
        row(id="ok1", query="again", gold_files=["b.py"]),  # 8 duplicate id
        row(id="q9", query="bad span", gold_files=["a.py"], gold_spans=[["a.py", 9, 3]]),  # 9
        row(id="q10", query="span elsewhere", gold_files=["a.py"], gold_spans=[["c.py", 1, 2]]),
        row(id="q11", query="split type", gold_files=["a.py"], split=3),  # 11
        "[1, 2, 3]",  # 12 not an object
        row(id="ok13", query="last good one", gold_files=["z.py"]),  # 13
        row(id=14, query="integer ids are accepted", gold_files=["y.py"]),  # 14
    ]
    result = load_examples(_write(tmp_path / "q.jsonl", lines))
    assert [e.id for e in result.examples] == ["ok1", "ok13", "14"]
    by_line = {e.line_no: e.message for e in result.errors}
    assert sorted(by_line) == [2, 3, 4, 5, 7, 8, 9, 10, 11, 12]
    assert "invalid JSON" in by_line[2]
    assert "'id'" in by_line[3]
    assert "'query'" in by_line[4] and "q4" in by_line[4]
    assert "gold_files" in by_line[5] and "gold_files" in by_line[7]
    assert "duplicate id 'ok1'" in by_line[8] and "line 1" in by_line[8]
    assert "start_line <= end_line" in by_line[9]
    assert "c.py" in by_line[10]
    assert "'split'" in by_line[11]
    assert "JSON object" in by_line[12]
    assert str(result.errors[0]).startswith("line 2: ")


def test_missing_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        load_examples(tmp_path / "absent.jsonl")


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    examples = [
        Example("a", "q a", ("x.py",), (Span("x.py", 1, 4),), "answer", "dev", {"commit": "c1"}),
        Example("b", "q b", ("y.py", "z.py")),
    ]
    path = tmp_path / "out" / "d.jsonl"
    write_examples(path, examples)
    loaded = load_examples(path)
    assert loaded.errors == [] and loaded.examples == examples
    assert not list(path.parent.glob(".*tmp"))


def test_write_is_atomic_and_keeps_the_replaced_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("old\n")
    path.chmod(0o640)

    def failing() -> Iterator[Example]:
        yield Example("a", "q a", ("x.py",))
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_examples(path, failing())
    assert path.read_text() == "old\n" and not list(tmp_path.glob(".*tmp"))
    write_examples(path, [Example("b", "q b", ("y.py",))])
    assert path.stat().st_mode & 0o777 == 0o640  # not the temp file's 0600
    assert [e.id for e in load_examples(path).examples] == ["b"]


def test_fingerprint_ignores_row_order_but_not_content() -> None:
    a = Example("a", "q a", ("x.py",))
    b = Example("b", "q b", ("y.py",), split="test")
    base = dataset_fingerprint([a, b])
    assert len(base) == 64
    assert dataset_fingerprint([b, a]) == base
    assert dataset_fingerprint([a, Example("b", "q b", ("y.py",), split="dev")]) != base
    assert dataset_fingerprint([a, Example("b", "q b", ("w.py",), split="test")]) != base


def test_question_fingerprint_is_one_questions_content() -> None:
    a = Example("a", "q a", ("x.py",))
    assert question_fingerprint(a) == question_fingerprint(Example("a", "q a", ("x.py",)))
    assert len(question_fingerprint(a)) == 64
    assert question_fingerprint(Example("a", "q A", ("x.py",))) != question_fingerprint(a)
    assert question_fingerprint(Example("a", "q a", ("y.py",))) != question_fingerprint(a)
    assert question_fingerprint(Example("b", "q a", ("x.py",))) != question_fingerprint(a)


def test_check_gold_reports_missing_paths() -> None:
    examples = [
        Example("a", "q", ("x.py", "gone.py")),
        Example("b", "q", ("y.py",)),
        Example("c", "q", ("y.py",), (Span("old.py", 1, 2),)),
    ]
    assert check_gold(examples, {"x.py", "y.py"}) == {"a": ["gone.py"], "c": ["old.py"]}


@pytest.mark.needs_data_root("devsets/manifest.json")
def test_loads_the_shared_devsets(data_root: Path) -> None:
    devsets = data_root / "devsets"
    manifest = json.loads((devsets / "manifest.json").read_text())
    for info in manifest["projects"].values():
        result = load_examples(devsets / info["pairs_file"])
        assert result.errors == []
        assert len(result.examples) == info["num_pairs"]["total"]
        assert {e.split for e in result.examples} <= {"dev", "test"}
        files = set((devsets / info["file_list"]).read_text().split())
        assert check_gold(result.examples, files) == {}


def test_gold_outside_the_repository_and_malformed_entities_are_row_errors(
    tmp_path: Path,
) -> None:
    lines = [
        row(id="ok", query="fine", gold_files=["a.py"], gold_functions=["a.py:A.f"]),  # 1
        row(id="abs", query="?", gold_files=["/etc/passwd"]),  # 2
        row(id="up", query="?", gold_files=["../outside.py"]),  # 3
        row(id="e1", query="?", gold_files=["a.py"], gold_functions=["a.py:"]),  # 4
        row(id="e2", query="?", gold_files=["a.py"], gold_functions=[":f"]),  # 5
        row(id="e3", query="?", gold_files=["a.py"], gold_functions=["../a.py:f"]),  # 6
    ]
    result = load_examples(_write(tmp_path / "q.jsonl", lines))
    assert [e.id for e in result.examples] == ["ok"]
    by_line = {e.line_no: e.message for e in result.errors}
    assert "absolute" in by_line[2] and "'..'" in by_line[3]
    assert all("gold_functions" in by_line[n] for n in (4, 5, 6))
