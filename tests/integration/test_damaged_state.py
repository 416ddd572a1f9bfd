"""Damaged on-disk state, end to end with the real embedding model: a truncated
embedding cache is moved aside and rebuilt by ``index``, a dense ``query`` and ``run``
(with one warning on stderr), instead of ``database disk image is malformed``."""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_bench.cli import EXIT_OK, main
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import FIXTURES, REPO_ROOT

pytestmark = pytest.mark.integration


@pytest.fixture
def own_cache(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private embedding cache: this test damages it (not the shared test cache)."""
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "cache"))
    return Workspace.default().embeddings_uri / "embeddings.sqlite"


def _truncate(path: Path) -> None:
    gc.collect()  # the previous command's connections, as if its process had exited
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "a live connection holds the cache"
    with path.open("r+b") as fh:
        fh.truncate(4096)  # keeps the schema page, loses the vectors' pages


def _moved(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.corrupt-*[0-9TZ]"))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    return [m for m in msgs if "was corrupt" in m]


def test_truncated_embedding_cache_is_rebuilt_by_index_query_and_run(
    tmp_path: Path,
    own_cache: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = tmp_path / "shopapi"
    shutil.copytree(FIXTURES / "shopapi", repo)
    assert main(["index", str(repo)]) == EXIT_OK
    assert own_cache.is_file()
    capsys.readouterr()

    _truncate(own_cache)
    assert main(["index", str(repo), "--rebuild"]) == EXIT_OK
    assert "index of" in capsys.readouterr().out
    assert len(_moved(own_cache)) == 1 and len(_warnings(caplog)) == 1

    _truncate(own_cache)
    question = "which env var sets the database URL?"
    assert main(["query", str(repo), question, "--retriever", "dense", "--json"]) == EXIT_OK
    hits = json.loads(capsys.readouterr().out)
    assert any(h["path"] == "src/shopapi/settings.py" for h in hits[:5])
    assert len(_moved(own_cache)) == 2 and len(_warnings(caplog)) == 2

    _truncate(own_cache)
    cfg = {
        "name": "damaged-cache",
        "datasets": [
            {"name": "shopapi", "questions": str(repo / "questions.jsonl"), "snapshot": str(repo)}
        ],
        "retrievers": [{"name": "dense"}, {"name": "bm25"}],
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(cfg))
    assert main(["run", str(path), "--limit", "3", "--json"]) == EXIT_OK
    tables = json.loads(capsys.readouterr().out)["tables"]
    assert set(tables["all"]) == {"dense", "bm25", "rrf"}
    assert len(_moved(own_cache)) == 3 and len(_warnings(caplog)) == 3


def test_the_warning_is_one_line_on_stderr(tmp_path: Path, own_cache: Path) -> None:
    """Through the real entry point (its logging setup), not only the log records."""
    repo = tmp_path / "shopapi"
    shutil.copytree(FIXTURES / "shopapi", repo)
    own_cache.parent.mkdir(parents=True)
    own_cache.write_bytes(b"this is no database " * 400)
    proc = subprocess.run(
        [sys.executable, "-m", "retrieval_bench.cli", "query", str(repo), "database URL"],
        cwd=REPO_ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    (moved,) = _moved(own_cache)
    lines = [line for line in proc.stderr.splitlines() if "was corrupt" in line]
    assert lines == [
        f"WARNING retrieval_bench.store.corrupt: embedding cache {own_cache} was corrupt "
        f"(file is not a database); moved to {moved}; rebuilding"
    ]
    assert "Traceback" not in proc.stderr
    assert "src/shopapi/settings.py" in proc.stdout


def _damage(db: Path, how: str) -> None:
    """``runs``: the root page of the runs table overwritten (the rest readable);
    ``header``: the file's first page overwritten (nothing readable); ``deleted``."""
    gc.collect()  # the commands' connections, as if their processes had exited
    if how == "deleted":
        db.unlink()
        return
    import sqlite3

    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()
    (size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    with db.open("r+b") as fh:
        fh.seek((root - 1) * size if how == "runs" else 0)
        fh.write(b"\xff" * size)


@pytest.mark.parametrize("how", ["runs", "header", "deleted"])
def test_rebuild_db_brings_back_sweeps_and_keeps_the_prompt_tables(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """``--rebuild-db`` used to drop every sweep and the prompt lab's tables and say
    only ``restored N run(s)``: sweeps come back from results/sweeps/, the prompt
    tables (not derived from results/) are copied from the damaged file where it can
    be read, and the output says what was and was not restored."""
    from retrieval_bench.prompt_eval.records import Prompt, Row
    from retrieval_bench.prompt_eval.store import PromptStore

    cfg = {
        "name": "shop-sweep",
        "datasets": [{"name": "shopapi", "questions": str(FIXTURES / "shopapi/questions.jsonl"),
                      "snapshot": str(FIXTURES / "shopapi")}],
        "retrievers": [{"name": "bm25"}],
        "fusions": [{"name": "rrf"}],
        "sweep": {"grid": {"fusions.rrf.k_rrf": [10, 60]}, "objective": "Acc@5"},
    }  # fmt: skip
    (tmp_path / "sweep.json").write_text(json.dumps(cfg))
    assert main(["sweep", str(tmp_path / "sweep.json"), "--json"]) == EXIT_OK
    db = Workspace.default().db_path
    with PromptStore(db) as store, store.transaction() as c:
        for name in ("short", "long"):
            store.write_prompt(c, "uc", Prompt(name, "Answer {q}"), None)
        for i in range(3):
            store.write_row(c, "uc", Row(f"r{i}", {"q": str(i)}, {"a": i}), None)
    capsys.readouterr()
    assert main(["sweeps", "--json"]) == EXIT_OK
    sweeps_before = json.loads(capsys.readouterr().out)
    assert main(["runs", "--json"]) == EXIT_OK
    runs_before = json.loads(capsys.readouterr().out)
    assert len(sweeps_before) == 1 and len(runs_before) == 4  # dev: 2 cells, test: 2

    _damage(db, how)
    code = main(["runs", "--rebuild-db"])
    out = capsys.readouterr().out.splitlines()
    print("\n".join(out), file=sys.stderr)  # shown with -s or on failure
    assert main(["sweeps", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == sweeps_before
    assert main(["runs", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == runs_before
    assert any(
        line.startswith(f"restored 4 run(s), 1 sweep(s) from {workspace / 'results'}")
        for line in out
    )
    assert f"  sweep {sweeps_before[0]['id']}  done        shop-sweep" in out
    with PromptStore(db) as store:
        kept = ([p.name for p in store.prompts("uc")], [r.id for r in store.rows("uc")])
    if how == "runs":
        assert code == EXIT_OK
        assert "kept the prompt tables from the old database: pe_rows 3 row(s), " \
               "pe_prompts 2 row(s)" in out  # fmt: skip
        assert kept == (["short", "long"], ["r0", "r1", "r2"])
    elif how == "header":  # nothing readable, not even which tables it had: said
        assert code == EXIT_OK
        assert "could not read prompt tables from the damaged file: file is not a database" in out
        assert kept == ([], [])
    else:  # no old file: nothing to keep
        assert code == EXIT_OK and not any("prompt" in line for line in out)
