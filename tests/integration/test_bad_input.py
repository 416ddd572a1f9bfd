"""Bad input, end to end through the CLI: a clear one-line error, nothing lost
(docs/architecture.md#bad-input-and-failures)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.integration.conftest import write_config, write_jsonl

pytestmark = pytest.mark.integration


def _small_repo(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "tokens.py").write_text(
        "def verify_token(token):\n    '''Check the signature of an auth token.'''\n"
        "    return token.startswith('ok')\n"
    )
    (root / "src" / "broken.py").write_text("def oops(:\n    return 1\n\nclass Fine:\n    pass\n")
    (root / "src" / "latin1.py").write_bytes(
        "# caf\xe9 r\xe9sum\xe9\nMENU = 'cr\xeape'\n".encode("latin-1")
    )
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(64)))
    (root / "empty.txt").write_text("")
    return root


def _run_json(cfg: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    code = main(["run", str(cfg), "--json"])
    out = capsys.readouterr()
    assert code == EXIT_OK, out.err
    return json.loads(out.out)


def test_missing_repository_is_one_line_error(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "query": "x", "gold_files": ["a.py"]}])
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"name": "d", "questions": str(q), "snapshot": str(tmp_path / "no-such-repo")}],
        ["bm25"],
    )
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no-such-repo" in err and "rbench: error:" in err


def test_bad_files_rows_and_gold_do_not_stop_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _small_repo(tmp_path / "repo")
    q = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "id": "good",
                "query": "where is the auth token signature verified?",
                "gold_files": ["src/tokens.py"],
            },
            "{not json",
            {"id": "nogold", "query": "missing gold"},
            {"id": "ghost", "query": "verify token", "gold_files": ["src/gone.py"]},
            {"id": "crepe", "query": "crepe menu", "gold_files": ["src/latin1.py"]},
            {"id": "fine", "query": "class Fine", "gold_files": ["src/broken.py"]},
        ],
    )
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"name": "d", "questions": str(q), "snapshot": str(repo)}],
        ["bm25", "exact"],
    )
    assert main(["run", str(cfg)]) == EXIT_OK
    captured = capsys.readouterr()
    # malformed rows are reported with their line number, the rest still run
    assert "line 2" in captured.err and "line 3" in captured.err
    # gold files absent from the snapshot are reported
    assert "ghost" in captured.err and "src/gone.py" in captured.err
    assert "(4 queries" in captured.out

    db = sqlite3.connect(workspace / "rbench.sqlite")
    (prov_json,) = db.execute("SELECT provenance_json FROM runs").fetchone()
    info = json.loads(prov_json)["datasets"]["d"]
    assert info["missing_gold"] == {"ghost": ["src/gone.py"]}
    assert len(info["row_errors"]) == 2
    rows = dict(
        db.execute(
            "SELECT query_id, value FROM query_metrics WHERE stage='bm25' AND metric='R@5'"
        ).fetchall()
    )
    # the syntax-error file and the latin-1 file were chunked and found
    assert rows["fine"] == 1.0 and rows["crepe"] == 1.0 and rows["good"] == 1.0
    assert rows["ghost"] == 0.0


def test_gold_files_the_walker_skipped_are_missing_gold_with_the_reason(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _small_repo(tmp_path / "repo")
    (repo / "big.py").write_text("BIG = 1\n" * 200_000)  # 1.6 MB: over the walker's limit
    q = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": "png", "query": "PNG IHDR logo", "gold_files": ["logo.png"]},
            {"id": "big", "query": "verify auth token", "gold_files": ["big.py", "src/tokens.py"]},
        ],
    )
    cfg = write_config(
        tmp_path / "c.yaml", [{"name": "d", "questions": str(q), "snapshot": str(repo)}], ["bm25"]
    )
    result = _run_json(cfg, capsys)
    assert result["counts"]["all"] == 2
    assert result["tables"]["all"]["bm25"]["R@5"] == 0.25  # png: 0; big: tokens.py only
    db = sqlite3.connect(workspace / "rbench.sqlite")
    (prov_json,) = db.execute("SELECT provenance_json FROM runs").fetchone()
    info = json.loads(prov_json)["datasets"]["d"]
    # a skipped gold file cannot be retrieved: it is missing gold, with the walker's reason,
    # and never "lost" (the query used to score 0 with no word why)
    assert info["missing_gold"] == {"png": ["logo.png"], "big": ["big.py"]}
    assert info["missing_gold_reasons"] == {
        "logo.png": "binary",
        "big.py": "larger than 1000000 bytes",
    }
    assert info["skipped_files"] >= 3
    lost = dict(
        db.execute("SELECT query_id, value FROM query_metrics WHERE metric='lost'").fetchall()
    )
    assert lost == {"png": 0.0, "big": 0.0}
    (run_dir,) = (workspace / "results").iterdir()
    drill = {r["query_id"]: r for r in map(json.loads, (run_dir / "queries.jsonl").open())}
    assert drill["png"]["missing_gold_reasons"] == {"logo.png": "binary"}


def test_skipped_gold_is_named_with_its_reason_on_stderr(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _small_repo(tmp_path / "repo")
    q = write_jsonl(
        tmp_path / "q.jsonl", [{"id": "png", "query": "PNG logo", "gold_files": ["logo.png"]}]
    )
    cfg = write_config(
        tmp_path / "c.yaml", [{"name": "d", "questions": str(q), "snapshot": str(repo)}], ["bm25"]
    )
    assert main(["run", str(cfg)]) == EXIT_OK
    assert "png: gold file(s) not indexed: logo.png (binary)" in capsys.readouterr().err


def test_typo_in_a_stage_parameter_stops_before_any_work(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _small_repo(tmp_path / "repo")
    q = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "query": "x", "gold_files": ["a.py"]}])
    data = json.loads(
        write_config(
            tmp_path / "c.yaml",
            [{"name": "d", "questions": str(q), "snapshot": str(repo)}],
            ["bm25"],
        ).read_text()
    )
    for fusions, expected in (
        ([{"name": "rrf", "krrf": 60}], "fusions.0.krrf: unknown parameter 'krrf' of fusion"),
        ([{"name": "rrff"}], "fusions.0.name: unknown fusion 'rrff'; choose one of:"),
    ):
        data["fusions"] = fusions
        (tmp_path / "c.yaml").write_text(json.dumps(data))
        assert main(["run", str(tmp_path / "c.yaml")]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err, err
    # nothing was prepared or stored: no index, no chunk cache, no run
    assert not (workspace / "results").exists() or not any((workspace / "results").iterdir())
    db_path = workspace / "rbench.sqlite"
    if db_path.exists():
        assert sqlite3.connect(db_path).execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_malformed_config_names_the_key(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: t\ndatasets: []\nretrievers: [{name: bm25}]\n")
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    assert "datasets" in capsys.readouterr().err


def test_unknown_retriever_lists_choices(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _small_repo(tmp_path / "repo")
    q = write_jsonl(
        tmp_path / "q.jsonl", [{"id": "a", "query": "x", "gold_files": ["src/tokens.py"]}]
    )
    cfg = write_config(
        tmp_path / "c.yaml", [{"name": "d", "questions": str(q), "snapshot": str(repo)}], ["bm99"]
    )
    assert main(["run", str(cfg)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "bm99" in err and "bm25" in err


def test_llm_server_down_marks_samples_failed_and_the_run_finishes(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    repo = _small_repo(tmp_path / "repo")
    q = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "id": "a",
                "query": "where is the auth token verified?",
                "gold_files": ["src/tokens.py"],
            },
            {"id": "b", "query": "class Fine", "gold_files": ["src/broken.py"]},
        ],
    )
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        json.dumps(
            {
                "name": "down",
                "datasets": [{"name": "d", "questions": str(q), "snapshot": str(repo)}],
                "retrievers": [{"name": "bm25"}, {"name": "exact", "terms": "llm"}],
                "rerankers": [{"name": "llm-yesno", "input": "bm25", "max_candidates": 3}],
                "llm": {"base_url": dead, "max_retries": 1, "backoff_s": 0.01},
                "table_k": 5,
            }
        )
    )
    result = _run_json(cfg, capsys)
    assert result["counts"]["all"] == 2
    # the reranker's samples are failed (recorded), the retrievers still scored
    assert result["tables"]["all"]["llm-yesno"]["failed"] == 1.0
    assert result["tables"]["all"]["bm25"]["R@5"] == 1.0
    db = sqlite3.connect(workspace / "rbench.sqlite")
    reasons = [r for (r,) in db.execute("SELECT reason FROM failures WHERE stage='llm-yesno'")]
    assert len(reasons) == 2 and all("unreachable" in r for r in reasons)
    # the LLM keyword rung fell back to the question's identifiers and says so
    run_dir = next((workspace / "results").iterdir())
    arts = [json.loads(line) for line in (run_dir / "artifacts/d/exact.jsonl").open()]
    assert all("unreachable" in a["artifact"]["keyword_fallback"] for a in arts)


SWE_PATCH = "--- a/src/mod.py\n+++ b/src/mod.py\n@@ -1 +1 @@\n-a\n+b\n"


def _swe_row(iid: str, patch: object = SWE_PATCH) -> dict[str, object]:
    return {"instance_id": iid, "repo": "org/proj", "base_commit": "a" * 40,
            "problem_statement": "f() crashes", "patch": patch}  # fmt: skip


def test_import_swebench_with_no_valid_row_exits_2_and_keeps_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """All rows invalid used to print `wrote 0 examples`, exit 0, and truncate the output."""
    src = write_jsonl(tmp_path / "swe.jsonl", [_swe_row("p-1", 123), _swe_row("p-2", "not a diff")])
    out = tmp_path / "questions.jsonl"
    out.write_text('{"id": "mine", "query": "kept", "gold_files": ["a.py"]}\n')
    before = out.read_bytes()
    assert main(["dataset", "import-swebench", str(src), str(out), "--force"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err == (
        f"rbench: error: {src} has no valid rows: all 2 are invalid "
        "(first: line 1: instance 'p-1': patch is not a string (got int)); nothing written"
    )
    assert out.read_bytes() == before


def test_import_swebench_says_what_is_wrong_with_a_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        _swe_row("ok-1"),
        _swe_row("p-2", 123),
        _swe_row("p-3", "fix the bug, please"),
        {"instance_id": "p-4", "repo": "org/proj", "patch": SWE_PATCH, "base_commit": ""},
    ]
    src = write_jsonl(tmp_path / "swe.jsonl", rows)
    assert main(["dataset", "import-swebench", str(src), str(tmp_path / "q.jsonl")]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out.strip() == f"wrote 1 example to {tmp_path / 'q.jsonl'}"
    assert err.splitlines() == [
        "  error: line 2: instance 'p-2': patch is not a string (got int)",
        "  error: line 3: instance 'p-3': patch is not a unified diff (no ---/+++ file headers)",
        "  error: line 4: instance 'p-4': missing field(s): problem_statement; "
        "empty field(s): base_commit",
    ]


def test_import_swebench_never_overwrites_without_force_nor_its_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_jsonl(tmp_path / "swe.jsonl", [_swe_row("ok-1")])
    original = src.read_bytes()
    # the input as the output: refused, even with --force, whatever the spelling
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.jsonl").symlink_to(src)
    for same in (src, tmp_path / "sub" / ".." / "swe.jsonl", tmp_path / "link.jsonl"):
        code = main(["dataset", "import-swebench", str(src), str(same), "--force"])
        assert code == EXIT_BAD_INPUT
        err = capsys.readouterr().err.strip()
        assert err == (
            f"rbench: error: {same} is an input of this command (the SWE-bench file); "
            "choose another file"
        )
        assert src.read_bytes() == original
    # an existing output: refused without --force, replaced atomically with it
    out = tmp_path / "questions.jsonl"
    out.write_text("precious\n")
    assert main(["dataset", "import-swebench", str(src), str(out)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err == f"rbench: error: {out} exists; pass --force to replace it"
    assert out.read_text() == "precious\n"
    assert main(["dataset", "import-swebench", str(src), str(out), "--force"]) == EXIT_OK
    assert json.loads(out.read_text())["id"] == "ok-1"
    assert not list(tmp_path.glob(".*.tmp"))
    # a new file gets the usual mode (0666 less the umask), not a temp file's 0600
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        fresh = tmp_path / f"fresh-{umask:o}.jsonl"
        old = os.umask(umask)
        try:
            assert main(["dataset", "import-swebench", str(src), str(fresh)]) == EXIT_OK
        finally:
            os.umask(old)
        assert fresh.stat().st_mode & 0o777 == mode


def test_dataset_mine_keeps_an_existing_output_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.datasets.gitrepo import GitRepo

    repo = GitRepo(tmp_path / "r")
    repo.commit("Initial import of the service", {"app.py": "def handler():\n    return 1\n"})
    repo.commit("Return two from the request handler", {"app.py": "def handler():\n    return 2\n"})
    out = tmp_path / "mined.jsonl"
    out.write_text("precious\n")
    assert main(["dataset", "mine", str(repo.path), str(out)]) == EXIT_BAD_INPUT
    assert "exists; pass --force to replace it" in capsys.readouterr().err
    assert out.read_text() == "precious\n"
    assert main(["dataset", "mine", str(repo.path), str(repo.path)]) == EXIT_BAD_INPUT
    assert f"{repo.path} is a folder" in capsys.readouterr().err
    assert main(["dataset", "mine", str(repo.path), str(out), "--force"]) == EXIT_OK
    assert json.loads(out.read_text())["gold_files"] == ["app.py"]
