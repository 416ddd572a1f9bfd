"""Shared helpers for integration tests: a temp workspace and small repos on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from retrieval_bench.llm.local_server import ServerState

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "fixtures" / "repos"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated RBENCH_HOME; the embedding cache is shared to keep tests fast."""
    home = tmp_path / "rbench-home"
    monkeypatch.setenv("RBENCH_HOME", str(home))
    monkeypatch.setenv("RBENCH_CACHE", str(REPO_ROOT / ".rbench" / "test-cache"))
    return home


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerState]:
    """The real local model server (llama.cpp + SmolLM2-135M), started once for the
    whole test session and stopped at its end; use ``.base_url``."""
    from retrieval_bench.llm.local_server import LocalServer
    from retrieval_bench.workspace import Workspace

    srv = LocalServer(Workspace(tmp_path_factory.mktemp("llm-server")))
    state = srv.start()
    try:
        yield state
    finally:
        srv.stop()


def write_jsonl(path: Path, rows: list[object]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_config(path: Path, datasets: list[dict[str, object]], retrievers: list[str]) -> Path:
    cfg = {
        "name": "t",
        "datasets": datasets,
        "retrievers": [{"name": r} for r in retrievers],
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
    }
    path.write_text(json.dumps(cfg), encoding="utf-8")  # JSON is valid YAML
    return path
