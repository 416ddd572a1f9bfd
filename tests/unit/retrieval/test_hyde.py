"""HyDE retriever (docs/stages.md#hyde; Gao et al. 2022) with a scripted LLM."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.corpus import Corpus
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import ChatRequest, Completion, LLMError, LLMResponseError
from retrieval_bench.retrieval.hyde import (
    HydeRetriever,
    dominant_languages,
    file_tree,
    strip_code_fences,
)
from retrieval_bench.types import Chunk
from tests.fakes.llm import Script, ScriptedLLM, last_user
from tests.unit.index.fakes import CountingEmbedder


def _chunk(path: str, text: str, language: str = "", line: int = 1) -> Chunk:
    return Chunk(
        f"{path}#{line}", path, line, line + text.count("\n"), language, "file", None, text
    )


WEB = [
    _chunk("src/main.tsx", "render the root App component\ninto the page", "tsx"),
    _chunk("src/components/Navbar.tsx", "navbar links and logo\nmenu", "tsx"),
    _chunk("src/api/client.ts", "fetch wrapper adds the bearer token header", "typescript"),
    _chunk("src/utils/price.ts", "compute the shopping cart total price", "typescript"),
    _chunk("README.md", "how to install\nand run\nthe app\nin dev\nmode\nfor real", "markdown"),
]


class BatchLLM(ScriptedLLM):
    """Records how requests arrive: one ``chat_many`` batch per search is expected."""

    def __init__(self, script: Script | str) -> None:
        super().__init__(script)
        self.batches: list[int] = []

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        self.batches.append(len(requests))
        return super().chat_many(requests)


def _hyde(tmp_path: Path, llm: ScriptedLLM, **params: Any) -> HydeRetriever:
    r = HydeRetriever(
        llm=llm, embedder=CountingEmbedder(), cache_dir=str(tmp_path / "cache"), **params
    )
    r.index(Corpus(tmp_path, list(WEB)))
    return r


def test_registered_and_validated() -> None:
    assert registry.get("retrievers", "hyde") is HydeRetriever
    with pytest.raises(ConfigError, match="llm"):
        registry.create("retrievers", "hyde")
    with pytest.raises(ConfigError, match="rung"):
        HydeRetriever(llm=ScriptedLLM("x"), rung="fancy")
    # the harness hands the LanceDB index to retrievers whose index() takes it
    assert "codebase_index" in inspect.signature(HydeRetriever.index).parameters


def test_plain_prompt_asks_for_a_snippet(tmp_path: Path) -> None:
    prompt = _hyde(tmp_path, ScriptedLLM("x")).prompt("How is the token sent?")
    assert "hypothetical code snippet" in prompt
    assert prompt.rstrip().endswith("Question: How is the token sent?")
    assert "TypeScript" not in prompt and "main.tsx" not in prompt


def test_language_prompt_names_the_dominant_language(tmp_path: Path) -> None:
    r = _hyde(tmp_path, ScriptedLLM("x"), rung="language")
    assert r.languages == ["TypeScript/TSX"]
    prompt = r.prompt("How is the token sent?")
    assert "TypeScript/TSX" in prompt and "How is the token sent?" in prompt
    assert "main.tsx" not in prompt


def test_dominant_languages() -> None:
    assert dominant_languages(WEB) == ["TypeScript/TSX"]
    ts_only = [_chunk("a.ts", "x", "typescript")]
    assert dominant_languages(ts_only) == ["TypeScript"]
    big_go = [_chunk(f"g{i}.go", "x\n" * 50, "go") for i in range(4)]
    small_rust = [_chunk("lib.rs", "x\n" * 20, "rust")]
    assert dominant_languages(big_go + small_rust) == ["Go"]
    python = [_chunk("a.py", "x\n" * 100, "python")]
    assert dominant_languages(big_go + python) == ["Go", "Python"]
    assert dominant_languages(big_go + python, max_languages=1) == ["Go"]
    # unlabelled chunks are labelled from their path; prose and data do not count
    assert dominant_languages([_chunk("x/app.py", "x"), _chunk("doc.md", "y\n" * 99)]) == ["Python"]
    assert dominant_languages([_chunk("README.md", "x"), _chunk("data.json", "{}")]) == []


def test_language_rung_without_code_falls_back_to_plain(tmp_path: Path) -> None:
    r = HydeRetriever(llm=ScriptedLLM("x"), rung="language", embedder=CountingEmbedder())
    r.languages = []
    assert r.prompt("q?") == HydeRetriever(
        llm=ScriptedLLM("x"), embedder=CountingEmbedder()
    ).prompt("q?")


def test_tree_prompt_shows_the_file_tree(tmp_path: Path) -> None:
    r = _hyde(tmp_path, ScriptedLLM("x"), rung="tree")
    prompt = r.prompt("Where do I edit the navbar?")
    assert "main.tsx" in prompt and "components/Navbar.tsx" in prompt
    assert "TypeScript/TSX" in prompt
    assert prompt.index("main.tsx") < prompt.index("Question: Where do I edit the navbar?")


def test_tree_prompt_of_a_large_repository_stays_small(tmp_path: Path) -> None:
    paths = [f"pkg{i}/mod{j}/file{k}.py" for i in range(40) for j in range(12) for k in range(15)]
    chunks = [_chunk(p, "def f(): pass", "python") for p in paths]
    r = HydeRetriever(llm=ScriptedLLM("x"), rung="tree", embedder=CountingEmbedder())
    r.index(Corpus(tmp_path, chunks))
    prompt = r.prompt("Where are the database migrations applied at startup?")
    assert len(r.tree) <= 900
    assert len(prompt) <= 1500
    assert "files)" in r.tree  # collapsed folders carry their counts
    assert "more folders)" in r.tree


@pytest.mark.parametrize("budget", [0, 10, 40, 120, 300, 900, 3000])
def test_file_tree_respects_its_budget(budget: int) -> None:
    paths = [f"a{i}/b{j}/c{k}.go" for i in range(4) for j in range(9) for k in range(9)]
    paths += ["go.mod", "Makefile", "cmd/tool/main.go"]
    tree = file_tree(paths, budget)
    assert len(tree) <= budget
    if budget >= 120:  # root files first, then every top folder (collapsed if need be)
        assert tree.splitlines()[:2] == ["Makefile", "go.mod"]
        assert "a3/" in tree and "cmd/tool/main.go" in tree
    if budget >= 3000:
        assert "  b8/ (9 files)" in tree  # every folder two levels down, collapsed


def test_file_tree_layout() -> None:
    tree = file_tree(["src/main.tsx", "src/components/A.tsx", "src/components/B.tsx", "x/y/z.js"])
    assert tree.splitlines() == [
        "src/",
        "  main.tsx",
        "  components/",
        "    A.tsx",
        "    B.tsx",
        "x/y/z.js",
    ]
    assert file_tree([]) == ""


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("def f():\n    return 1\n", "def f():\n    return 1"),
        (
            "Sure!\n```python\ndef f():\n    return 1\n```\nThis returns one.",
            "def f():\n    return 1",
        ),
        ("```ts\nconst a = 1;\n```\ntext\n```\nconst b = 2;\n```", "const a = 1;\n\nconst b = 2;"),
        ("```go\nfunc main() {\n", "func main() {"),  # cut by max_tokens
        ("~~~\nx = 1\n~~~", "x = 1"),
        ("```\n```", ""),
    ],
)
def test_strip_code_fences(reply: str, code: str) -> None:
    assert strip_code_fences(reply) == code


def test_snippet_is_embedded_and_stored(tmp_path: Path) -> None:
    llm = BatchLLM(lambda r: "```ts\nconst total = cartTotal(price); // shopping\n```")
    r = _hyde(tmp_path, llm, rung="language")
    fake = r.embedder
    assert isinstance(fake, CountingEmbedder)
    run = r.search({"q1": "where is the money summed up?", "q2": "how much to pay?"}, k=2)
    assert llm.batches == [2]  # one batch for all queries
    assert run.ids("q1", 1) == ["src/utils/price.ts#1"]
    assert r.artifacts["q1"] == {
        "snippet": "const total = cartTotal(price); // shopping",
        "prompt_rung": "language",
    }
    assert r.failures == {}
    assert "where is the money summed up?\n\nconst total = cartTotal(price); // shopping" in (
        fake.seen
    )
    assert all(req.temperature == 0.0 and req.max_tokens == 200 for req in llm.requests)
    assert "TypeScript/TSX" in last_user(llm.requests[0])


def test_include_query_false_embeds_the_snippet_alone(tmp_path: Path) -> None:
    llm = ScriptedLLM("compute cart total price")
    r = _hyde(tmp_path, llm, include_query=False, max_tokens=50, temperature=0.3)
    run = r.search({"q": "zzz"}, k=1)
    fake = r.embedder
    assert isinstance(fake, CountingEmbedder)
    assert fake.seen[-1] == "compute cart total price"
    assert run.ids("q") == ["src/utils/price.ts#1"]
    assert llm.requests[0].max_tokens == 50 and llm.requests[0].temperature == 0.3


def test_llm_failure_falls_back_to_the_raw_query(tmp_path: Path) -> None:
    def script(req: ChatRequest) -> str | Exception:
        if "token" in last_user(req):
            return LLMResponseError("no choices")
        if "navbar" in last_user(req):
            return "```\n```"  # an empty reply
        return "cart total price"

    r = _hyde(tmp_path, ScriptedLLM(script))
    queries = {"a": "bearer token header", "b": "navbar menu logo", "c": "money"}
    run = r.search(queries, k=3)
    # not failures (the queries still get results), but the fallback is recorded
    assert r.failures == {}
    assert "LLMResponseError: no choices" in r.artifacts["a"]["fallback"]
    assert "empty reply" in r.artifacts["b"]["fallback"]
    assert "fallback" not in r.artifacts["c"]
    assert r.artifacts["a"]["snippet"] is None
    # the failed queries still get results: those of a dense search for the raw query
    plain = r.dense.search({"a": queries["a"], "b": queries["b"]}, k=3)
    assert run.scores["a"] == plain.scores["a"] and run.scores["b"] == plain.scores["b"]
    assert run.ids("a", 1) == ["src/api/client.ts#1"]
    assert run.ids("c", 1) == ["src/utils/price.ts#1"]


def test_empty_query_is_a_failure_without_results(tmp_path: Path) -> None:
    llm = BatchLLM("cart total")
    r = _hyde(tmp_path, llm)
    run = r.search({"e": "   ", "q": "money"}, k=3)
    assert r.failures == {"e": "empty query"}
    assert run.scores["e"] == {} and run.scores["q"]
    assert llm.batches == [1] and "e" not in r.artifacts
    only_empty = BatchLLM("x")
    r2 = _hyde(tmp_path, only_empty)
    assert r2.search({"e": ""}, k=3).scores == {"e": {}}
    assert only_empty.requests == []


def test_search_resets_state_and_scores_match_dense(tmp_path: Path) -> None:
    r = _hyde(tmp_path, ScriptedLLM("navbar links"), include_query=False)
    r.search({"x": ""}, k=1)
    run = r.search({"q": "anything"}, k=5)
    assert r.failures == {}
    fake = r.embedder
    vec = fake.embed(["navbar links"])[0]
    matrix = fake.embed([c.text for c in WEB])
    expected = {c.id: float(s) for c, s in zip(WEB, matrix @ vec, strict=True)}
    assert run.scores["q"] == pytest.approx(expected)
    assert np.isclose(max(run.scores["q"].values()), max(expected.values()))
    assert r.config()["rung"] == "plain" and r.config()["llm"] == "scripted"
