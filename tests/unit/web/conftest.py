"""A temp workspace with REAL data for the web UI tests: a small benchmark run on
the shopapi fixture (bm25 + exact + rrf) and a prompt-lab use case whose model is
a ScriptedLLM that answers correctly only for prompts containing ``ORACLE``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from retrieval_bench.llm.base import ChatRequest
from retrieval_bench.workspace import Workspace
from tests.fakes.llm import ScriptedLLM, last_user

if TYPE_CHECKING:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

REPO_ROOT = Path(__file__).resolve().parents[3]
SHOPAPI = REPO_ROOT / "fixtures" / "repos" / "shopapi"
USE_CASE = "code_questions"


def _benchmark(ws: Workspace, tmp: Path, name: str, retrievers: list[dict[str, str]]) -> str:
    from retrieval_bench.config import load_config
    from retrieval_bench.harness.run.runner import run_benchmark

    cfg = {
        "name": name,
        "datasets": [
            {"name": "shopapi", "questions": str(SHOPAPI / "questions.jsonl"),
             "snapshot": str(SHOPAPI), "limit": 10}
        ],
        "retrievers": retrievers,
        "fusions": [{"name": "rrf"}],
        "table_k": 5,
    }  # fmt: skip
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return run_benchmark(load_config(path), ws).run_id


@pytest.fixture(scope="session")
def bench_ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str, str]]:
    """(workspace, run id of bm25+exact+rrf, run id of bm25+rrf)."""
    tmp = tmp_path_factory.mktemp("web-bench")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RBENCH_CACHE", str(REPO_ROOT / ".rbench" / "test-cache"))
        ws = Workspace(tmp / "home")
        exact = {"name": "exact", "terms": "identifiers"}
        both = _benchmark(ws, tmp, "bm25-exact", [{"name": "bm25"}, exact])
        bm25 = _benchmark(ws, tmp, "bm25-only", [{"name": "bm25"}])
        yield ws, both, bm25


def oracle_llm(ws: Workspace) -> ScriptedLLM:
    """Right answers for prompts containing ORACLE, a fixed wrong one otherwise."""
    from retrieval_bench.prompt_eval import PromptStore, get_use_case
    from retrieval_bench.prompt_eval.io import ensure_examples

    uc = get_use_case(USE_CASE)
    with PromptStore.for_workspace(ws) as store:
        ensure_examples(store, uc)
        truth = {r.variables["question"]: dict(r.expected) for r in store.rows(USE_CASE)}

    def reply(req: ChatRequest) -> str:
        text = last_user(req)
        if "ORACLE" in text:
            for question, expected in truth.items():
                if question in text:
                    return json.dumps(expected)
        return '{"category": "bug", "language": "rust"}'

    return ScriptedLLM(reply)


def web_client(app: FastAPI, **kwargs: Any) -> TestClient:
    """A TestClient that talks to ``app`` as the UI's own page does: at
    http://127.0.0.1 (a Host the guard accepts) with the server's token in the
    X-RBench-Token header (docs/architecture.md#web-ui-security)."""
    from fastapi.testclient import TestClient

    headers = {"X-RBench-Token": app.state.guard.token}
    return TestClient(app, base_url="http://127.0.0.1", headers=headers, **kwargs)
