"""``rbench prompts run`` shows its progress: rows done per prompt, then a line per
prompt (on stderr; a plain line without a terminal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.llm import factory
from retrieval_bench.progress import Callback
from retrieval_bench.prompt_eval.runner import run_prompts
from tests.fakes.llm import ScriptedLLM
from tests.unit.prompt_eval.conftest import SENTIMENT_ROWS, Sentiment, oracle, prompt


def test_run_prompts_reports_each_row_and_each_prompt(sentiment: Sentiment) -> None:
    events: list[tuple[str, int, int, str]] = []
    notes: list[str] = []
    run_prompts(
        sentiment, SENTIMENT_ROWS, [prompt("a"), prompt("b")], oracle(),
        reporter=Callback(lambda *e: events.append(e), notes.append),
    )  # fmt: skip
    assert [e for e in events if e[0] == "prompt a (1/2)"] == [
        ("prompt a (1/2)", done, 4, "rows") for done in range(5)
    ]
    assert [e[1] for e in events if e[0] == "prompt b (2/2)"] == [0, 1, 2, 3, 4]
    assert [n.split(",")[0] for n in notes] == ["prompt a: 4 rows", "prompt b: 4 rows"]


def test_cli_prints_progress_lines_without_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(factory, "make_llm", lambda *_a, **_k: ScriptedLLM("no idea"))
    monkeypatch.setenv("RBENCH_PROGRESS_INTERVAL", "0")
    ws = ["--workspace", str(tmp_path / "ws")]
    assert main([*ws, "prompts", "run", "code_questions"]) == EXIT_OK
    err = capsys.readouterr().err.splitlines()
    assert "prompt plain (1/3): 0/10 rows (0%)" in err
    assert any(line.startswith("prompt plain (1/3): 5/10 rows (50%)") for line in err)
    assert any(line.startswith("prompt plain (1/3): 10/10 rows (100%), ") for line in err)
    assert any(line.startswith("prompt plain: 10 rows, 10 failed, ") for line in err)
    assert main([*ws, "prompts", "run", "code_questions", "--json"]) == EXIT_OK
    assert capsys.readouterr().err == ""  # --json: quiet
