"""LLM stages against the real local model server (llama.cpp + SmolLM2-135M).

No stand-ins here: the server is started by the toolkit itself, every stage
talks to it over HTTP through the ``openai`` client, and the response cache
is the real SQLite file.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from retrieval_bench.cli import EXIT_FAILED, EXIT_OK, main
from retrieval_bench.config import parse_config
from retrieval_bench.harness.run.runner import BenchmarkResult, run_benchmark
from retrieval_bench.llm.cache import ResponseCache
from retrieval_bench.llm.local_server import LocalServer, ServerState
from retrieval_bench.workspace import Workspace
from tests.integration.conftest import FIXTURES, REPO_ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(llm_server: ServerState) -> ServerState:
    """The session's shared local server (tests/integration/conftest.py)."""
    return llm_server


def _config(base_url: str, limit: int, stages: dict[str, Any], **llm: Any) -> Any:
    data = {
        "name": "llm-e2e",
        "datasets": [
            {
                "name": "shopapi",
                "questions": str(FIXTURES / "shopapi" / "questions.jsonl"),
                "snapshot": str(FIXTURES / "shopapi"),
                "limit": limit,
            }
        ],
        "candidates": 20,
        "table_k": 5,
        "llm": {"base_url": base_url, **llm},
        **stages,
    }
    return parse_config(data)


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty model-response cache (so the first run really
    calls the model); embeddings come from the shared test cache to stay fast."""
    monkeypatch.setenv("RBENCH_CACHE", str(tmp_path / "cache"))
    shared = REPO_ROOT / ".rbench" / "test-cache" / "embeddings"
    if shared.is_dir():
        import shutil

        shutil.copytree(shared, tmp_path / "cache" / "embeddings")


def _run(cfg: Any, home: Path) -> BenchmarkResult:
    return run_benchmark(cfg, Workspace(home))


def _stage(result: BenchmarkResult, name: str) -> Any:
    return next(s for o in result.outcomes for s in o.stages if s.name == name)


ALL_LLM_STAGES = {
    "retrievers": [
        {"name": "bm25"},
        {"name": "hyde", "rung": "tree", "max_tokens": 80},
        {"name": "exact", "id": "exact-llm", "terms": "llm"},
    ],
    "fusions": [{"name": "rrf"}],
    "rerankers": [
        {"name": "llm-yesno", "max_candidates": 5, "snippet_chars": 300},
        {"name": "llm-logprob", "max_candidates": 5, "snippet_chars": 300},
    ],
}


def test_llm_stages_end_to_end_then_rerun_from_cache(server: ServerState, tmp_path: Path) -> None:
    cfg = _config(server.base_url, 3, ALL_LLM_STAGES)
    home = tmp_path / "home"
    first = _run(cfg, home)
    for name in ("hyde", "exact-llm", "llm-yesno", "llm-logprob"):
        stage = _stage(first, name)
        assert stage.llm_calls > 0, name
        assert not stage.failures, (name, stage.failures)
        assert len(stage.run.scores) == 3, name
    # the 135M model's keywords often match nothing (that is measured, not hidden);
    # the embedding- and candidate-based LLM stages always return results
    for name in ("hyde", "llm-yesno", "llm-logprob"):
        assert all(_stage(first, name).run.scores.values()), name
    # 3 questions x 5 candidates, one call each, for both rerankers
    assert _stage(first, "llm-yesno").llm_calls == 15
    assert _stage(first, "llm-logprob").llm_calls == 15
    # the logprob reranker gives a continuous score in [0, 1]
    scores = [v for d in _stage(first, "llm-logprob").run.scores.values() for v in d.values()]
    assert all(0.0 <= v <= 1.0 for v in scores) and len(set(scores)) > 2
    # the generated HyDE snippets and the proposed keywords are stored with the run
    assert first.out_dir is not None
    art = first.out_dir / "artifacts" / "shopapi"
    snippets = [json.loads(line) for line in (art / "hyde.jsonl").open()]
    assert len(snippets) == 3 and all(r["artifact"]["prompt_rung"] == "tree" for r in snippets)
    assert any(r["artifact"]["snippet"] for r in snippets)
    keywords = [json.loads(line) for line in (art / "exact-llm.jsonl").open()]
    assert all(r["artifact"]["terms"] for r in keywords)
    assert "llm-logprob" in first.sweeps and first.sweeps["llm-logprob"][0]["threshold"] == 0.0
    prov = json.loads((first.out_dir / "config.json").read_text())["provenance"]
    assert prov["models"]["llm"] == "smollm2" and prov["llm_base_url"] == server.base_url

    second = _run(cfg, home)
    for o in second.outcomes:
        for stage in o.stages:
            assert stage.llm_calls == 0, stage.name  # everything served from the cache
    assert _stage(second, "llm-yesno").llm_cache_hits == 15
    assert second.tables["all"]["llm-logprob"]["MRR"] == first.tables["all"]["llm-logprob"]["MRR"]


def test_server_killed_mid_run_then_resumed_from_cache(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "srv")
    srv = LocalServer(ws)
    state = srv.start()
    stages = {
        "retrievers": [{"name": "bm25"}],
        "rerankers": [{"name": "llm-yesno", "max_candidates": 6, "snippet_chars": 300}],
    }
    home = tmp_path / "home"
    cfg = _config(state.base_url, 4, stages, max_retries=1, backoff_s=0.05, timeout_s=10)
    cache = ResponseCache.in_dir(Workspace(home).cache_dir)

    def kill_after(n: int) -> None:
        deadline = time.monotonic() + 120
        while cache.count() < n and time.monotonic() < deadline:
            time.sleep(0.02)
        srv.stop(timeout_s=0.1)

    killer = threading.Thread(target=kill_after, args=(8,))
    killer.start()
    try:
        first = _run(cfg, home)  # the server dies during the reranking
    finally:
        killer.join()
        srv.stop()
    rerank = _stage(first, "llm-yesno")
    answered = cache.count()
    assert 8 <= answered < 24, answered
    assert rerank.failures, "calls after the kill must be marked failed"
    assert all("model calls failed" in reason for reason in rerank.failures.values())
    assert first.counts["all"] == 4  # the run finished and scored every question

    restarted = LocalServer(ws).start()  # a new process on a new port
    try:
        cfg2 = _config(restarted.base_url, 4, stages)
        second = _run(cfg2, home)
    finally:
        LocalServer(ws).stop()
    again = _stage(second, "llm-yesno")
    assert not again.failures
    assert again.llm_cache_hits >= answered  # resumed: the answered calls were not repeated
    assert again.llm_calls == 24 - again.llm_cache_hits


def test_empty_query_makes_no_call(server: ServerState, tmp_path: Path) -> None:
    from retrieval_bench.contracts.registry import create
    from retrieval_bench.harness.run.prepare import build_corpus
    from retrieval_bench.llm.factory import make_llm
    from retrieval_bench.snapshot import open_snapshot

    ws = Workspace(tmp_path)
    llm = make_llm(parse_config(
        {"name": "x", "datasets": [{"name": "d", "questions": "q", "snapshot": "s"}],
         "retrievers": [{"name": "bm25"}], "llm": {"base_url": server.base_url}}
    ).llm, ws)  # fmt: skip
    snap = open_snapshot(str(FIXTURES / "logtool"), ws.snapshots_dir)
    corpus, _ = build_corpus(snap, create("chunkers", "ast"), ws, with_vectors=False)
    bm25 = create("retrievers", "bm25")
    bm25.index(corpus)
    run = bm25.search({"q": "parse nginx log line", "e": "   "}, 5)
    reranker = create("rerankers", "llm-yesno", llm=llm, max_candidates=3, snippet_chars=200)
    out = reranker.rerank({"q": "parse nginx log line", "e": "   "}, run, corpus, 3)
    assert reranker.failures == {"e": "empty query"} and not out.scores.get("e")
    assert llm.stats.calls + llm.stats.cache_hits == 3


def test_llm_cli_start_status_stop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--workspace", str(tmp_path)]
    assert main([*home, "llm", "status"]) == EXIT_FAILED
    assert "not running" in capsys.readouterr().out
    assert main([*home, "llm", "start"]) == EXIT_OK
    try:
        assert "running" in capsys.readouterr().out
        assert main([*home, "llm", "status", "--json"]) == EXIT_OK
        status = json.loads(capsys.readouterr().out)
        assert status["healthy"] is True and status["base_url"].startswith("http://127.0.0.1:")
        assert main([*home, "llm", "start"]) == EXIT_OK  # reuses the running server
        assert str(status["pid"]) in capsys.readouterr().out
    finally:
        assert main([*home, "llm", "stop"]) == EXIT_OK
    assert "stopped" in capsys.readouterr().out
    assert main([*home, "llm", "status"]) == EXIT_FAILED
