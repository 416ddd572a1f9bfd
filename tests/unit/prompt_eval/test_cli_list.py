"""``rbench prompts list`` on a fresh workspace: shipped use cases are shown as
shipped examples (with their sizes), not as empty user data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval_bench.cli import EXIT_OK, main


def test_fresh_workspace_lists_shipped_use_cases_with_their_sizes(
    tmp_path: Path, capsys: Any
) -> None:
    ws = ["--workspace", str(tmp_path / "ws")]
    assert main([*ws, "prompts", "list"]) == EXIT_OK
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("code_questions"))
    assert line.split()[-3:-1] == ["10", "3"], line
    assert "shipped" in line and "rbench prompts list USE_CASE" in out
    assert main([*ws, "prompts", "list", "--json"]) == EXIT_OK
    listing = {d["use_case"]: d for d in json.loads(capsys.readouterr().out)}
    assert listing["code_questions"]["rows"] == 10 and listing["code_questions"]["shipped"]
    assert main([*ws, "prompts", "list", "code_questions"]) == EXIT_OK  # loads them
    capsys.readouterr()
    assert main([*ws, "prompts", "list", "--json"]) == EXIT_OK
    listing = {d["use_case"]: d for d in json.loads(capsys.readouterr().out)}
    assert listing["code_questions"]["rows"] == 10 and not listing["code_questions"]["shipped"]
