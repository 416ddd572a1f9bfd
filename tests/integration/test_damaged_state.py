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
