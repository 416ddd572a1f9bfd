"""A dataset's ``ignore:`` read with git's rules and its ``include:`` globs, in a real
corpus build, run and ``rbench query`` (docs/datasets.md#ignore-rules-and-skipped-files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.integration.conftest import FIXTURES, write_config


def _python_files(root: Path) -> set[str]:
    """The fixture's .py files (none of them is ignored by its own rules)."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*.py")} - {
        p.relative_to(root).as_posix() for p in root.rglob("__pycache__/*.py")
    }


def test_the_swebench_ignore_setting_and_include_keep_every_python_file(workspace: Path) -> None:
    from retrieval_bench.contracts.chunker import Chunker
    from retrieval_bench.contracts.registry import create
    from retrieval_bench.harness.run.prepare import build_corpus
    from retrieval_bench.snapshot import open_snapshot
    from retrieval_bench.workspace import Workspace

    ws = Workspace.default()
    root = FIXTURES / "shopapi"
    snap = open_snapshot(str(root), ws.snapshots_dir)
    chunker: Chunker = create("chunkers", "ast")
    whitelist, _ = build_corpus(snap, chunker, ws, with_vectors=False, ignore=["*", "!*.py", "!*/"])
    included, _ = build_corpus(snap, chunker, ws, with_vectors=False, include=["*.py"])
    wanted = _python_files(root)
    assert "src/shopapi/settings.py" in wanted and len(wanted) > 20
    assert set(whitelist.paths) == set(included.paths) == wanted


def test_a_run_with_include_finds_nested_gold(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(
        tmp_path / "c.yaml",
        [
            {
                "name": "shopapi",
                "questions": str(FIXTURES / "shopapi" / "questions.jsonl"),
                "snapshot": str(FIXTURES / "shopapi"),
                "include": ["*.py"],
                "limit": 3,
            }
        ],
        ["bm25"],
    )
    assert main(["run", str(cfg), "--json"]) == EXIT_OK
    run = json.loads(capsys.readouterr().out)
    assert run["tables"]["all"]["bm25"]["R@5"] > 0


def test_query_takes_include_and_ignore_flags(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = str(FIXTURES / "shopapi")
    question = "how is the order total priced with promotions?"
    args = ["query", repo, question, "--retriever", "bm25", "-n", "50", "--json"]
    assert main([*args, "--include", "*.py", "--ignore", "tests/"]) == EXIT_OK
    paths = {hit["path"] for hit in json.loads(capsys.readouterr().out)}
    assert paths and all(p.endswith(".py") and not p.startswith("tests/") for p in paths)
    assert any(p.count("/") >= 2 for p in paths)  # nested files are kept
    assert main([*args, "--include", "!*.py"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "include: '!*.py' selects no file" in err
