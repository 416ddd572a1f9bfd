"""The CLI's other subcommands against the fixture repos (real ripgrep, real files)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.integration.conftest import FIXTURES, write_jsonl

pytestmark = pytest.mark.integration


def test_dataset_inspect_reports_counts_and_missing_gold(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = FIXTURES / "shopapi" / "questions.jsonl"
    assert main(["dataset", "inspect", str(q), "--snapshot", str(FIXTURES / "shopapi")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "33 examples" in out and "missing gold" not in out

    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [{"id": "a", "query": "q", "gold_files": ["nope.py"]}, "[1, 2]"],
    )
    assert main(["dataset", "inspect", str(bad), "--snapshot", str(FIXTURES / "shopapi")]) == (
        EXIT_BAD_INPUT
    )
    out = capsys.readouterr().out
    assert "line 2" in out and "missing gold: a: nope.py" in out


@pytest.mark.parametrize("retriever", ["bm25", "exact"])
def test_query_finds_the_token_check(
    retriever: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "query",
            str(FIXTURES / "shopapi"),
            "where are auth tokens verified?",
            "--retriever",
            retriever,
            "-n",
            "5",
            "--json",
        ]
    )
    assert code == EXIT_OK
    hits = json.loads(capsys.readouterr().out)
    assert 0 < len(hits) <= 5
    assert any(h["path"] == "src/shopapi/auth/tokens.py" for h in hits)


def test_query_with_a_file_ranker_names_whole_files(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bm25-files`` ranks files (``file:<path>`` ids): each hit stands for its whole file."""
    args = ["query", str(FIXTURES / "shopapi"), "where are auth tokens verified?"]
    assert main([*args, "--retriever", "bm25-files", "-n", "3", "--json"]) == EXIT_OK
    hits = json.loads(capsys.readouterr().out)
    assert 0 < len(hits) <= 3 and len({h["path"] for h in hits}) == len(hits)
    assert all(h["kind"] == "file" and h["start_line"] == 1 for h in hits)
    assert "src/shopapi/auth/tokens.py" in [h["path"] for h in hits]


def test_dataset_mine_from_git_history(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "r"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    (repo / "app.py").write_text("def handler():\n    return 1\n")
    git("add", ".")
    git("commit", "-qm", "Initial import of the service")
    (repo / "app.py").write_text("def handler():\n    return 2\n")
    git("commit", "-qam", "Return two from the request handler")
    out = tmp_path / "mined.jsonl"
    assert main(["dataset", "mine", str(repo), str(out)]) == EXIT_OK
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["gold_files"] for r in rows] == [["app.py"]]
    assert rows[0]["query"].startswith("Return two from the request handler")


def test_index_then_dense_query_then_update(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from retrieval_bench import api

    repo = tmp_path / "shopapi"
    shutil.copytree(FIXTURES / "shopapi", repo)
    assert main(["index", str(repo)]) == EXIT_OK
    assert "index of" in capsys.readouterr().out
    assert main(["query", str(repo), "which env var sets the database URL?", "--json"]) == EXIT_OK
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 10 and hits[0]["score"] >= hits[-1]["score"]
    assert any(h["path"] == "src/shopapi/settings.py" for h in hits[:5])

    unchanged = api.index(str(repo))
    assert unchanged.files_changed == 0 and unchanged.texts_embedded == 0
    target = repo / "src" / "shopapi" / "settings.py"
    target.write_text(target.read_text() + "\nEXTRA_FLAG = 'on'\n")
    touched = api.index(str(repo))
    assert touched.files_changed == 1
    assert touched.chunks_reused > 100


def test_dataset_ignore_patterns_drop_files_from_the_corpus(workspace: Path) -> None:
    from retrieval_bench.contracts.chunker import Chunker
    from retrieval_bench.contracts.registry import create
    from retrieval_bench.harness.run.prepare import build_corpus
    from retrieval_bench.snapshot import open_snapshot
    from retrieval_bench.workspace import Workspace

    ws = Workspace.default()
    snap = open_snapshot(str(FIXTURES / "logtool"), ws.snapshots_dir)
    chunker: Chunker = create("chunkers", "ast")
    full, _ = build_corpus(snap, chunker, ws, with_vectors=False)
    part, _ = build_corpus(snap, chunker, ws, with_vectors=False, ignore=["crates/", "*.java"])
    assert any(p.startswith("crates/") for p in full.paths)
    assert not any(p.startswith("crates/") or p.endswith(".java") for p in part.paths)
    assert set(part.paths) < set(full.paths)
    # .gitignore'd (*.log) and .rbenchignore'd (questions.jsonl) files are never there
    assert "testdata/sample.log" not in full.paths and "questions.jsonl" not in full.paths


def test_runs_and_show_read_the_results_database(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.integration.conftest import write_config

    cfg = write_config(
        tmp_path / "c.yaml",
        [
            {
                "name": "shopapi",
                "questions": str(FIXTURES / "shopapi" / "questions.jsonl"),
                "snapshot": str(FIXTURES / "shopapi"),
            }
        ],
        ["bm25"],
    )
    assert main(["run", str(cfg), "--json"]) == EXIT_OK
    run = json.loads(capsys.readouterr().out)
    assert main(["runs"]) == EXIT_OK
    assert run["run_id"] in capsys.readouterr().out
    assert main(["show", run["run_id"], "--json"]) == EXIT_OK
    shown = json.loads(capsys.readouterr().out)
    stored = shown["table"]["bm25"]["F1@5"]
    assert stored == pytest.approx(run["tables"]["all"]["bm25"]["F1@5"], abs=1e-12)
    assert main(["show", run["run_id"]]) == EXIT_OK
    out = capsys.readouterr().out
    assert "bm25" in out and "rrf" in out and "F1@5" in out
    assert main(["show", "no-such-run"]) == EXIT_BAD_INPUT
    assert "no-such-run" in capsys.readouterr().err
