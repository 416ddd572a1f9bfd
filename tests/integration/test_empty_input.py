"""Empty or wrong input to ``rbench run`` and ``rbench query``: one clear line, exit 2,
before any chunking or indexing; and ``--json`` still reports warnings on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.integration.conftest import write_config, write_jsonl

pytestmark = pytest.mark.integration


def _repo(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "tokens.py").write_text(
        "def verify_token(token):\n    '''Check the signature of an auth token.'''\n"
        "    return token.startswith('ok')\n"
    )
    (root / "src" / "cart.py").write_text("def add_to_cart(cart, item):\n    cart.append(item)\n")
    return root


def _questions(path: Path) -> Path:
    rows = [
        {"id": f"d{i}", "query": "verify token", "gold_files": ["src/tokens.py"], "split": "dev"}
        for i in range(2)
    ]
    rows.append(
        {"id": "t0", "query": "add to cart", "gold_files": ["src/cart.py"], "split": "test"}
    )
    return write_jsonl(path, rows)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("rbench: error: ") and not captured.out
    return err


def _nothing_indexed(workspace: Path) -> None:
    """No run was stored and no index or snapshot work was done."""
    assert not (workspace / "rbench.sqlite").exists()
    assert not (workspace / "indexes").exists() and not (workspace / "results").exists()


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([], "has no questions (the file is empty)"),
        (["", "   "], "has no questions (the file is empty)"),
        (
            ["{not json", {"id": "x", "query": "q"}],
            "has no valid questions: all 2 rows are invalid (first: line 1: invalid JSON",
        ),
    ],
)
def test_run_with_no_questions_fails_before_any_work(
    tmp_path: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    rows: list[object],
    expected: str,
) -> None:
    good = _questions(tmp_path / "good.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows))
    repo = _repo(tmp_path / "repo")
    cfg = write_config(
        tmp_path / "c.yaml",
        [
            {"name": "first", "questions": str(good), "snapshot": str(repo)},
            {"name": "second", "questions": str(empty), "snapshot": str(repo)},
        ],
        ["dense", "bm25"],
    )
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    err = _one_line_error(capsys)
    assert f"dataset second: {empty} {expected}" in err
    _nothing_indexed(workspace)  # not even the first, valid dataset was indexed


def test_run_with_unknown_split_lists_the_splits(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = _questions(tmp_path / "q.jsonl")
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"name": "d", "questions": str(q), "snapshot": str(tmp_path / "no-such-repo")}],
        ["bm25"],
    )
    assert main(["run", str(cfg), "--split", "nosuch"]) == EXIT_BAD_INPUT
    err = _one_line_error(capsys)
    # the questions are checked before the (missing) snapshot is even opened
    assert err == (
        f"rbench: error: dataset d: {q} has no questions with split 'nosuch'; "
        "splits present: dev (2), test (1)"
    )

    cfg = write_config(
        tmp_path / "c.yaml",
        [
            {
                "name": "d",
                "questions": str(q),
                "snapshot": str(tmp_path / "no-such-repo"),
                "split": "test",
                "train_split": "train",
            }
        ],
        ["bm25"],
    )
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    assert "has no questions with train_split 'train'; splits present: dev (2), test (1)" in (
        _one_line_error(capsys)
    )
    _nothing_indexed(workspace)


@pytest.mark.parametrize("limit", ["0", "-1", "two"])
def test_run_limit_must_be_positive(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    q = _questions(tmp_path / "q.jsonl")
    cfg = write_config(
        tmp_path / "c.yaml", [{"name": "d", "questions": str(q), "snapshot": "nope"}], ["bm25"]
    )
    with pytest.raises(SystemExit) as exc:
        main(["run", str(cfg), "--limit", limit])
    assert exc.value.code == EXIT_BAD_INPUT
    assert "argument --limit:" in capsys.readouterr().err
    _nothing_indexed(workspace)


def test_run_limit_takes_the_first_n(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = _questions(tmp_path / "q.jsonl")
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"name": "d", "questions": str(q), "snapshot": str(_repo(tmp_path / "repo"))}],
        ["bm25"],
    )
    assert main(["run", str(cfg), "--limit", "1", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["counts"]["all"] == 1


def test_run_json_still_prints_row_and_gold_warnings(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": "good", "query": "verify token", "gold_files": ["src/tokens.py"]},
            "{not json",
            {"id": "ghost", "query": "verify token", "gold_files": ["src/gone.py"]},
        ],
    )
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"name": "d", "questions": str(q), "snapshot": str(_repo(tmp_path / "repo"))}],
        ["bm25"],
    )
    assert main(["run", str(cfg), "--json"]) == EXIT_OK
    captured = capsys.readouterr()
    assert json.loads(captured.out)["counts"]["all"] == 2  # stdout: the JSON alone
    warnings = [line.strip() for line in captured.err.splitlines()]
    assert any(w.startswith("warning:") and "line 2: invalid JSON" in w for w in warnings)
    assert any(w.startswith("warning: ghost:") and "src/gone.py" in w for w in warnings)


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_query_with_an_empty_question(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], question: str
) -> None:
    assert main(["query", str(tmp_path / "no-such-repo"), question, "--retriever", "bm25"]) == (
        EXIT_BAD_INPUT
    )
    assert _one_line_error(capsys) == (
        "rbench: error: the question is empty: pass the text to search for"
    )


@pytest.mark.parametrize("n", ["0", "-3"])
def test_query_n_must_be_positive(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], n: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["query", str(_repo(tmp_path / "repo")), "verify token", "-n", n])
    assert exc.value.code == EXIT_BAD_INPUT
    assert "argument -n:" in capsys.readouterr().err
    from retrieval_bench import api
    from retrieval_bench.errors import ConfigError

    with pytest.raises(ConfigError, match="n must be 1 or more"):
        api.query(str(tmp_path / "repo"), "verify token", "bm25", n=int(n))


@pytest.mark.parametrize("retriever", ["bm25", "dense"])
def test_query_an_empty_repository(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], retriever: str
) -> None:
    empty = tmp_path / "empty repo"
    empty.mkdir()
    args = ["query", str(empty), "verify token", "--retriever", retriever]
    assert main(args) == EXIT_BAD_INPUT
    assert _one_line_error(capsys) == (
        f"rbench: error: no source files to index in {empty} "
        "(it has no files the ignore rules keep)"
    )
    skipped = tmp_path / "only skipped files"
    skipped.mkdir()
    (skipped / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(64)))
    (skipped / "blank.py").write_text("")
    assert main(["query", str(skipped), "verify token", "--retriever", retriever]) == (
        EXIT_BAD_INPUT
    )
    err = _one_line_error(capsys)
    assert err == (
        f"rbench: error: no source files to index in {skipped} "
        "(all 2 files were skipped: binary (1), empty (1))"
    )


def test_run_on_an_empty_repository(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "repo").mkdir()
    q = _questions(tmp_path / "q.jsonl")
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"name": "d", "questions": str(q), "snapshot": str(tmp_path / "repo")}],
        ["bm25"],
    )
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    assert "no source files to index in" in _one_line_error(capsys)
    # the run was recorded before its first work: kept, failed, with the same reason
    (run_file,) = (workspace / "results").glob("*/run.json")
    run = json.loads(run_file.read_text())["run"]
    assert run["status"] == "failed" and "no source files to index in" in run["error"]
