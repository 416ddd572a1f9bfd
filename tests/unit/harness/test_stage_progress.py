"""What a benchmark run shows while it works, and what its seconds mean: one line
per finished stage, per-call counts for LLM stages (reranker, answerer), and model
loading kept out of the stage that happened to trigger it."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from retrieval_bench.config import StageSpec, parse_config
from retrieval_bench.contracts.registry import RETRIEVERS
from retrieval_bench.contracts.retriever import Retriever
from retrieval_bench.corpus import Corpus
from retrieval_bench.harness.run.runner import run_benchmark
from retrieval_bench.harness.run.stages import StageContext, run_retriever
from retrieval_bench.llm.base import ChatRequest
from retrieval_bench.loads import timed_load
from retrieval_bench.progress import Callback, ProgressReporter
from retrieval_bench.stage_graph import StageNode
from retrieval_bench.types import Example, Run
from retrieval_bench.workspace import Workspace
from tests.fakes.llm import ScriptedLLM, last_user


class Clock:
    now = 500.0

    def __call__(self) -> float:
        return self.now


CLOCK = Clock()


class LazyModelRetriever(Retriever):
    """Loads a 'model' (5 clock seconds) on its first search, then works 1 second."""

    def index(self, corpus: Corpus, codebase_index: object = None) -> None:
        return None

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        with timed_load("test model"):
            CLOCK.now += 5.0
        CLOCK.now += 1.0
        return Run("lazy", {q: {"c1": 1.0} for q in queries})


def _ds() -> Any:
    examples = [Example("q1", "where?", ("a.py",))]
    return SimpleNamespace(
        spec=SimpleNamespace(name="shop"), examples=examples, train_examples=[],
        corpus=Corpus(Path("."), []), codebase_index=None,
    )  # fmt: skip


def test_a_model_load_is_not_charged_to_the_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "perf_counter", CLOCK)
    monkeypatch.setattr("retrieval_bench.loads._EVENTS", [])  # loads on the real clock
    out = io.StringIO()
    ctx = StageContext(_ds(), None, ProgressReporter(out, tty=False, interval=0))
    with RETRIEVERS.registered("test-lazy-model", LazyModelRetriever):
        node = StageNode("retriever", StageSpec(name="test-lazy-model"), ())
        result, _ = run_retriever(ctx, node, 5, False)
    assert result.seconds == pytest.approx(1.0)  # its own work only
    assert result.loads == {"test model": pytest.approx(5.0)}
    assert out.getvalue().splitlines()[-1] == (
        "[shop] test-lazy-model  1.0s (+ loading test model 5.0s)"
    )


# -- a whole run, with an LLM reranker and the answerer ---------------------------------
REPO = {
    "shop/orders.py": "def list_orders(db):\n    return db.query('orders')\n",
    "shop/pricing.py": "def bulk_discount(qty):\n    return 5 if qty > 9 else 0\n",
}
QUESTIONS = [
    {"id": "q1", "query": "Where are orders listed?", "gold_files": ["shop/orders.py"],
     "reference_answer": "list_orders"},
    {"id": "q2", "query": "How is the discount computed?", "gold_files": ["shop/pricing.py"],
     "reference_answer": "bulk_discount"},
]  # fmt: skip


class FakeClient(ScriptedLLM):
    settings = SimpleNamespace(base_url="scripted://", concurrency=1)


def script(request: ChatRequest) -> str:
    return "Yes" if "orders" in last_user(request) else "It is in shop/pricing.py."


def test_run_prints_stage_lines_and_llm_call_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path, text in REPO.items():
        (tmp_path / "repo" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / path).write_text(text)
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    monkeypatch.setattr("retrieval_bench.llm.factory.make_llm", lambda *_a: FakeClient(script))
    cfg = parse_config(
        {
            "name": "tiny",
            "datasets": [{"name": "tiny", "questions": "q.jsonl", "snapshot": "repo"}],
            "retrievers": [{"name": "bm25"}],
            "rerankers": [{"name": "llm-yesno", "max_candidates": 2}],
            "answerer": {"rung": "instructions", "k": 2},
            "answer_metrics": ["token_f1"],
            "table_k": 2,
            "metrics": {"ks": [1, 2]},
        },
        "tiny.yaml",
        tmp_path,
    )
    events: list[tuple[str, int, int, str]] = []
    notes: list[str] = []
    progress = Callback(lambda *e: events.append(e), notes.append)
    run_benchmark(cfg, Workspace(tmp_path / "home"), progress=progress)

    rerank = [(d, t) for label, d, t, unit in events if label == "[tiny] llm-yesno"]
    calls = rerank[0][1]
    assert calls >= 2 and rerank == [(i, calls) for i in range(calls + 1)]  # one per call
    assert notes[0].startswith("[tiny] bm25  ")
    assert notes[1].startswith("[tiny] llm-yesno  ")
    assert f", {calls} LLM calls, 0 cached" in notes[1]
    assert notes[2].startswith("[tiny] answer  ") and ", 2 LLM calls" in notes[2]
    answer = [(d, t, u) for label, d, t, u in events if label == "[tiny] answer"]
    assert answer == [(0, 2, "LLM calls"), (1, 2, "LLM calls"), (2, 2, "LLM calls")]
