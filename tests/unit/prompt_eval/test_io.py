"""Import/export: formats, line-numbered errors, all-or-nothing, round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.prompt_eval.errors import (
    ImportFormatError,
    InvalidPromptError,
    InvalidRowError,
)
from retrieval_bench.prompt_eval.examples.action_items import ActionItems
from retrieval_bench.prompt_eval.examples.code_questions import CodeQuestions
from retrieval_bench.prompt_eval.io import (
    export_prompts,
    export_rows,
    import_file,
    read_prompts,
    read_rows,
)
from retrieval_bench.prompt_eval.store import PromptStore
from tests.unit.prompt_eval.conftest import Sentiment


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_json_nested_flat_and_jsonl(tmp_path: Path) -> None:
    uc = Sentiment()
    nested = {"rows": [{"id": "a", "variables": {"text": "t"}, "expected": {"label": "pos"}}]}
    flat = [{"id": 7, "text": "u", "label": "neg"}]
    rows = read_rows(write(tmp_path, "n.json", json.dumps(nested)), uc)
    assert [(r.id, dict(r.variables), dict(r.expected)) for r in rows] == [
        ("a", {"text": "t"}, {"label": "pos"})
    ]
    assert read_rows(write(tmp_path, "f.json", json.dumps(flat)), uc)[0].id == "7"
    jsonl = write(tmp_path, "r.jsonl", '{"id": "a", "text": "t", "label": "pos"}\n\n')
    assert len(read_rows(jsonl, uc)) == 1


def test_malformed_json_reports_line(tmp_path: Path) -> None:
    uc = Sentiment()
    text = '[\n  {"id": "a", "text": "t", "label": "pos"},\n  {"id": "b" "text": "u"}\n]'
    with pytest.raises(ImportFormatError, match=r"bad\.json:3: not valid JSON"):
        read_rows(write(tmp_path, "bad.json", text), uc)
    lines = '{"id": "a", "text": "t", "label": "pos"}\n{"id": "b", "text": \n'
    with pytest.raises(ImportFormatError, match=r"bad\.jsonl:2: not valid JSON"):
        read_rows(write(tmp_path, "bad.jsonl", lines), uc)


def test_bad_row_in_json_reports_its_line(tmp_path: Path) -> None:
    uc = Sentiment()
    doc = {
        "use_case": "sentiment",
        "rows": [
            {"id": "a", "text": "t", "label": "pos"},
            {"id": "b", "text": "u", "label": "neg"},
            {"id": "c", "text": "v", "label": "so-so"},
        ],
    }
    path = write(tmp_path, "rows.json", json.dumps(doc, indent=2))
    line = json.dumps(doc, indent=2).splitlines().index("    {") + 1  # first row's line
    # third row starts 10 lines after the first (5 lines per row with indent=2)
    with pytest.raises(InvalidRowError, match=rf"rows\.json:{line + 10}: .*row 'c'.*so-so"):
        read_rows(path, uc)
    with pytest.raises(ImportFormatError, match=r"x\.json:3: unknown column\(s\) txt"):
        text = '[\n{"id": "a", "text": "t", "label": "pos"},\n{"id": "b", "txt": "t"}]'
        read_rows(write(tmp_path, "x.json", text), uc)


def test_csv_errors_report_the_line(tmp_path: Path) -> None:
    uc = CodeQuestions()
    good = 'id,question,category,language\nq1,"multi\nline question",bug,python\n'
    assert read_rows(write(tmp_path, "ok.csv", good), uc)[0].variables["question"] == (
        "multi\nline question"
    )
    extra = good + "q2,How?,howto,go,EXTRA\n"
    with pytest.raises(ImportFormatError, match=r"e\.csv:4: 5 cells but the header has 4"):
        read_rows(write(tmp_path, "e.csv", extra), uc)
    invalid = good + "q2,How?,howto,cobol\n"
    with pytest.raises(InvalidRowError, match=r"i\.csv:4: .*row 'q2'.*language must be one of"):
        read_rows(write(tmp_path, "i.csv", invalid), uc)
    dupe = good + "q1,Again?,howto,go\n"
    with pytest.raises(
        ImportFormatError, match=r"d\.csv:4: duplicate row id 'q1' \(first on line 2\)"
    ):
        read_rows(write(tmp_path, "d.csv", dupe), uc)
    with pytest.raises(ImportFormatError, match="no rows"):
        read_rows(write(tmp_path, "h.csv", "id,question,category,language\n"), uc)
    with pytest.raises(ImportFormatError, match="unknown format 'txt'"):
        read_rows(write(tmp_path, "rows.txt", good), uc)


def test_csv_json_cells(tmp_path: Path) -> None:
    uc = ActionItems()
    ok = 'id,notes,action_items\na,Ann will ship.,"[{""owner"": ""Ann"", ""task"": ""ship""}]"\n'
    rows = read_rows(write(tmp_path, "a.csv", ok), uc)
    assert rows[0].expected == {"action_items": [{"owner": "Ann", "task": "ship"}]}
    bad = ok + 'b,x,"[{""owner"": ]"\n'
    with pytest.raises(ImportFormatError, match=r"b\.csv:3: column action_items is not valid JSON"):
        read_rows(write(tmp_path, "b.csv", bad), uc)


def test_failed_import_stores_nothing(tmp_path: Path, store: PromptStore) -> None:
    uc = CodeQuestions()
    text = "id,question,category,language\n" + "".join(
        f"q{i},Question {i} in Go?,howto,go\n" for i in range(5)
    )
    bad = write(tmp_path, "bad.csv", text + "q9,Broken,??,go\n")
    with pytest.raises(InvalidRowError, match=r"bad\.csv:7:"):
        import_file(store, uc, bad, "rows")
    assert store.rows(uc.name) == [] and not store.has_data(uc.name)
    summary = import_file(store, uc, write(tmp_path, "good.csv", text), "rows")
    assert summary.added == 5


def test_prompt_files(tmp_path: Path) -> None:
    uc = Sentiment()
    doc: list[dict[str, Any]] = [
        {"name": "a", "user": "{text}", "parameters": {"max_tokens": 5}},
        {"name": "b", "user": "{text}", "baseline": True},
        {"name": "c", "user": "Review {review}"},
    ]
    path = write(tmp_path, "p.json", json.dumps(doc, indent=1))
    with pytest.raises(
        InvalidPromptError, match=r"p\.json:\d+: .*prompt 'c'.*unknown variable {review}"
    ):
        read_prompts(path, uc)
    prompts, baseline = read_prompts(write(tmp_path, "q.json", json.dumps(doc[:2])), uc)
    assert [p.name for p in prompts] == ["a", "b"] and baseline == "b"
    two = [{**doc[0], "baseline": True}, doc[1]]
    with pytest.raises(ImportFormatError, match="more than one baseline"):
        read_prompts(write(tmp_path, "two.json", json.dumps(two)), uc)
    csv_text = 'name,model,system,user,parameters,baseline\nx,,,{text},"{""max_tokens"": }",false\n'
    with pytest.raises(ImportFormatError, match=r"pp\.csv:2: parameters is not valid JSON"):
        read_prompts(write(tmp_path, "pp.csv", csv_text), uc)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_round_trip(tmp_path: Path, store: PromptStore, fmt: str) -> None:
    from retrieval_bench.prompt_eval.io import ensure_examples

    for uc in (ActionItems(), CodeQuestions()):
        ensure_examples(store, uc)
        rows, prompts = store.rows(uc.name), store.prompts(uc.name)
        rows_path = write(tmp_path, f"{uc.name}.rows.{fmt}", export_rows(uc, rows, fmt))
        text = export_prompts(uc, prompts, fmt, store.baseline(uc.name))
        prompts_path = write(tmp_path, f"{uc.name}.prompts.{fmt}", text)
        assert read_rows(rows_path, uc) == [r.with_version(0) for r in rows]
        back, baseline = read_prompts(prompts_path, uc)
        assert back == [p.with_version(0) for p in prompts] and baseline == "plain"
        # re-importing what was exported changes nothing
        assert import_file(store, uc, rows_path, "rows").unchanged == len(rows)
