"""A damaged LanceDB codebase index (issue 19 item 12): it is derived data, so a
table LanceDB cannot read is moved aside with one warning and built again, by
``CodebaseIndex.update`` and through ``rbench index`` and ``rbench run``, instead of
a 40-line ``lance error`` traceback. Real LanceDB tables whose files are truncated."""

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
from retrieval_bench.index.store import CodebaseIndex
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import FIXTURES, REPO_ROOT
from tests.unit.index.fakes import CountingEmbedder, LineChunker

pytestmark = pytest.mark.integration

FILES = {
    "app/jsonio.py": "import json\n\ndef parse_json(text):\n    return json.loads(text)\n",
    "app/cart.py": "class Cart:\n    def total(self):\n        return sum(self.prices)\n",
    "app/db.py": "def connect(url):\n    pool = Pool(url)\n    return pool\n",
}


def _truncate(path: Path) -> None:
    gc.collect()  # handles of the previous command, as if its process had exited
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def _data_files(uri: Path) -> list[Path]:
    return sorted(uri.glob("*.lance/data/*.lance"))


def _moved(uri: Path) -> list[Path]:
    return sorted(uri.glob("*.lance.corrupt-*"))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    return [m for m in msgs if "was corrupt" in m]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_a_truncated_data_file_is_moved_aside_and_rebuilt(
    tmp_path: Path, repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    uri = tmp_path / "lance"
    index = CodebaseIndex(uri, "shop", LineChunker(3), CountingEmbedder())
    expected = index.build(repo).chunks
    (data,) = _data_files(uri)
    _truncate(data)

    fresh = CodebaseIndex(uri, "shop", LineChunker(3), CountingEmbedder())
    assert fresh.exists()  # the manifest and the table's metadata are intact
    stats = fresh.update(repo)
    assert stats.mode == "build" and stats.chunks == expected  # a full build, not an update
    assert len(fresh.chunks()) == expected
    (moved,) = _moved(uri)
    assert moved.name.startswith(f"{data.parents[1].name}.corrupt-")
    (warning,) = _warnings(caplog)
    assert warning.startswith(f"LanceDB index table {data.parents[1]} was corrupt (lance error:")
    assert warning.endswith(f"; moved to {moved}; rebuilding")
    assert ".rs:" not in warning and "\n" not in warning


def test_a_truncated_version_manifest_is_moved_aside_and_rebuilt(
    tmp_path: Path, repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    uri = tmp_path / "lance"
    index = CodebaseIndex(uri, "shop", LineChunker(3), CountingEmbedder())
    expected = index.build(repo).chunks
    (version,) = sorted(uri.glob("*.lance/_versions/*.manifest"))
    _truncate(version)

    fresh = CodebaseIndex(uri, "shop", LineChunker(3), CountingEmbedder())
    assert not fresh.exists()  # LanceDB cannot open it: set aside, so not "built"
    assert len(_moved(uri)) == 1 and len(_warnings(caplog)) == 1
    assert fresh.update(repo).chunks == expected
    assert len(fresh.chunks()) == expected


def test_index_and_run_rebuild_a_damaged_index(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    repo = tmp_path / "shopapi"
    shutil.copytree(FIXTURES / "shopapi", repo)
    uri = Workspace.default().index_dir
    assert main(["index", str(repo)]) == EXIT_OK

    (data,) = _data_files(uri)
    _truncate(data)
    assert main(["index", str(repo)]) == EXIT_OK
    assert "index of" in capsys.readouterr().out
    assert len(_moved(uri)) == 1 and len(_warnings(caplog)) == 1

    (data,) = _data_files(uri)
    _truncate(data)
    cfg = {
        "name": "damaged-index",
        "datasets": [
            {"name": "shopapi", "questions": str(repo / "questions.jsonl"), "snapshot": str(repo)}
        ],
        "retrievers": [{"name": "dense"}, {"name": "bm25"}],
        "table_k": 5,
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(cfg))
    assert main(["run", str(path), "--limit", "3", "--json"]) == EXIT_OK
    tables = json.loads(capsys.readouterr().out)["tables"]
    assert set(tables["all"]) == {"dense", "bm25"}
    assert len(_moved(uri)) == 2 and len(_warnings(caplog)) == 2


def test_the_warning_is_one_line_on_stderr(tmp_path: Path, workspace: Path) -> None:
    """Through the real entry point (its logging setup), not only the log records."""
    repo = tmp_path / "shopapi"
    shutil.copytree(FIXTURES / "shopapi", repo)
    assert main(["index", str(repo)]) == EXIT_OK
    uri = Workspace.default().index_dir
    (data,) = _data_files(uri)
    _truncate(data)
    proc = subprocess.run(
        [sys.executable, "-m", "retrieval_bench.cli", "index", str(repo)],
        cwd=REPO_ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    assert "Traceback" not in proc.stderr
    (moved,) = _moved(uri)
    lines = [line for line in proc.stderr.splitlines() if "was corrupt" in line]
    assert len(lines) == 1
    assert lines[0].startswith(
        f"WARNING retrieval_bench.store.corrupt: LanceDB index table {data.parents[1]} "
        "was corrupt (lance error: LanceError(IO): "
    )
    assert lines[0].endswith(f"; moved to {moved}; rebuilding")


def test_a_dense_retriever_skips_a_damaged_index_it_could_reuse(tmp_path: Path, repo: Path) -> None:
    """``index_uri:`` of a dense retriever: indexes whose vectors it may reuse; a
    damaged one is passed over (its vectors are computed), not the stage's end."""
    from retrieval_bench.retrieval.dense import _vectors_under

    uri = tmp_path / "lance"
    embedder = CountingEmbedder()
    CodebaseIndex(uri, "shop", LineChunker(3), embedder).build(repo)
    assert len(_vectors_under(uri, embedder.name)[0]) > 0
    (data,) = _data_files(uri)
    _truncate(data)
    ids, matrix = _vectors_under(uri, embedder.name)
    assert ids == [] and matrix.size == 0
