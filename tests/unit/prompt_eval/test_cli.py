"""``rbench prompts`` with a scripted model in place of the real one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, main
from retrieval_bench.llm import factory
from retrieval_bench.llm.base import ChatRequest
from retrieval_bench.prompt_eval.store import PromptStore
from tests.fakes.llm import ScriptedLLM, last_user


def script(req: ChatRequest) -> str:
    user = last_user(req)
    if "Reply like" in user:  # the bundled "json" prompt: always right
        from retrieval_bench.prompt_eval.io import read_rows
        from retrieval_bench.prompt_eval.usecase import get_use_case

        uc = get_use_case("code_questions")
        assert uc.examples is not None
        for row in read_rows(uc.examples.rows, uc):
            if row.variables["question"] in user:
                return json.dumps(dict(row.expected))
    return "It is about Python."


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    llm = ScriptedLLM(script)
    monkeypatch.setattr(factory, "make_llm", lambda *_a, **_k: llm)
    return ["--workspace", str(tmp_path / "ws")]


def test_run_prints_sorted_table_and_history(ws: list[str], capsys: Any) -> None:
    assert main([*ws, "prompts", "run", "code_questions"]) == EXIT_OK
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("code_questions: 10 rows x 3 prompts, baseline plain (run ")
    assert lines[1].split()[:4] == ["rank", "prompt", "v", "model"]
    first = lines[3].split()
    assert first[:2] == ["1", "json"] and "10/10" in first and "better" in first
    assert "model calls 30, cache hits 0" in out
    assert main([*ws, "prompts", "run", "code_questions", "--json"]) == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert [r["prompt"] for r in data["results"]][0] == "json"
    assert data["results"][0]["vs_baseline"]["significant"] is True
    assert main([*ws, "prompts", "history", "code_questions"]) == EXIT_OK
    hist = capsys.readouterr().out
    assert hist.count("code_questions") == 6 and "+0.000" in hist


def test_gate_exit_code(ws: list[str], capsys: Any) -> None:
    args = [*ws, "prompts", "run", "code_questions", "--baseline", "json", "--gate"]
    assert main(args) == EXIT_FAILED
    assert "significantly worse than json: " in capsys.readouterr().err


def test_import_export_list(ws: list[str], tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "rows.csv"
    assert main([*ws, "prompts", "export", "code_questions", "rows", "--out", str(out)]) == 0
    assert out.read_text().startswith("id,question,category,language\n")
    bad = tmp_path / "bad.csv"
    bad.write_text(out.read_text() + 'new,"unterminated,bug\n' + "x,How?,howto,go,extra\n")
    capsys.readouterr()
    assert main([*ws, "prompts", "import", "code_questions", "rows", str(bad)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("rbench: error: ") and "bad.csv:12:" in err
    with PromptStore(Path(ws[1]) / "rbench.sqlite") as store:
        assert len(store.rows("code_questions")) == 10  # nothing of the bad file stored
    assert main([*ws, "prompts", "list"]) == EXIT_OK
    listing = capsys.readouterr().out
    assert "code_questions" in listing and "action_items" in listing
    assert main([*ws, "prompts", "list", "code_questions"]) == EXIT_OK
    assert "* plain" in capsys.readouterr().out


def test_bad_prompt_file_and_unknown_use_case(ws: list[str], tmp_path: Path, capsys: Any) -> None:
    p = tmp_path / "p.json"
    p.write_text(json.dumps([{"name": "x", "user": "Q: {questoin}"}]))
    assert main([*ws, "prompts", "import", "code_questions", "prompts", str(p)]) == 2
    assert "unknown variable {questoin}" in capsys.readouterr().err
    assert main([*ws, "prompts", "run", "no_such_case"]) == EXIT_BAD_INPUT
    assert "unknown use case 'no_such_case'" in capsys.readouterr().err


def test_prompt_edits_in_history(ws: list[str], tmp_path: Path, capsys: Any) -> None:
    main([*ws, "prompts", "export", "code_questions", "prompts", "--out", str(tmp_path / "p.json")])
    doc = json.loads((tmp_path / "p.json").read_text())
    doc["prompts"][0]["user"] += "\nAnswer briefly."
    (tmp_path / "p.json").write_text(json.dumps(doc))
    assert (
        main([*ws, "prompts", "import", "code_questions", "prompts", str(tmp_path / "p.json")]) == 0
    )
    assert "0 added, 1 updated, 2 unchanged" in capsys.readouterr().out
    assert main([*ws, "prompts", "history", "code_questions", "--edits", "--prompt", "plain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[3] for ln in lines[2:]] == ["1", "2"]


class _Hold:
    """Records how often the command let go of the local server it held."""

    def __init__(self) -> None:
        self.released = 0

    def release(self, keep: bool = False) -> bool:
        self.released += 1
        return True


def test_run_lets_go_of_the_local_server_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A model server ``prompts run`` started on demand stops with the command
    (``make_llm``'s hold released, as ``rbench run`` does), also when it fails."""
    llm = ScriptedLLM(script)
    hold = _Hold()
    llm.server_hold = hold  # type: ignore[attr-defined]
    monkeypatch.setattr(factory, "make_llm", lambda *_a, **_k: llm)
    ws = ["--workspace", str(tmp_path / "ws")]
    assert main([*ws, "prompts", "run", "code_questions"]) == EXIT_OK
    assert hold.released == 1
    assert main([*ws, "prompts", "run", "code_questions", "--prompt", "nope"]) != EXIT_OK
    capsys.readouterr()
    assert hold.released == 2
