"""``llm-select``: candidates shown in groups, the model names the best of each."""

from __future__ import annotations

import re
from typing import Any

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.params import StageServices
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import ChatRequest, LLMUnavailableError
from retrieval_bench.reranking.llm import LLMSelectReranker, parse_numbers
from tests.fakes.llm import Reply, ScriptedLLM, last_user
from tests.unit.reranking.helpers import CountingLLM, chunk, corpus_of, input_run, marks

IDS = [f"c{i:02d}" for i in range(25)]
CORPUS = corpus_of([chunk(c) for c in IDS])


@pytest.mark.parametrize(
    ("text", "n", "limit", "expected"),
    [
        ("3, 1", 10, None, [3, 1]),
        ("[3], [1], 3, 12, 0, 2", 10, None, [3, 1, 2]),  # duplicates, out of range dropped
        ("The best are 7 and 2.", 10, None, [7, 2]),
        ("1,2,3,4,5", 10, 2, [1, 2]),
        ("none of them", 10, None, []),
        ("", 3, None, []),
        ("10, 01", 10, None, [10, 1]),
    ],
)
def test_parse_numbers(text: str, n: int, limit: int | None, expected: list[int]) -> None:
    assert parse_numbers(text, n, limit) == expected


def picking(per_group: dict[int, str]) -> ScriptedLLM:
    """Answer group g (0-based, told apart by its first candidate) with per_group[g]."""

    def script(request: ChatRequest) -> Reply:
        first = int(marks(request)[0][1:])
        return per_group.get(first // 10, "")

    return ScriptedLLM(script)


def test_groups_prompt_and_default_k_per_group() -> None:
    llm = CountingLLM(lambda _r: "1")
    LLMSelectReranker(llm=llm).rerank({"q": "where?"}, input_run({"q": IDS}), CORPUS, k=10)
    assert llm.batches == [3]
    assert [marks(r) for r in llm.requests] == [IDS[0:10], IDS[10:20], IDS[20:25]]
    users = [last_user(r) for r in llm.requests]
    # ceil(10 / 3 groups) = 4 asked for per group
    assert all("Return the numbers of the best 4" in u for u in users)
    assert "where?" in users[0]
    assert re.search(r"^\[1\] src/c00\.py", users[0], re.M)
    assert re.search(r"^\[5\] src/c24\.py", users[2], re.M)
    assert "numbered 1 to 5" in users[2]
    req = llm.requests[0]
    assert req.temperature == 0.0 and req.top_logprobs is None
    assert [m["role"] for m in req.messages] == ["system", "user"]


def test_selected_first_round_robin_then_input_order() -> None:
    llm = picking({0: "3, 1", 1: "2, 5", 2: "4"})
    rr = LLMSelectReranker(llm=llm, group_size=10, k_per_group=2)
    out = rr.rerank({"q": "x"}, input_run({"q": IDS}), CORPUS, k=25)
    ids = out.ids("q")
    # first picks of groups 1, 2, 3, then second picks of groups 1, 2
    assert ids[:5] == ["c02", "c11", "c23", "c00", "c14"]
    rest = [c for c in IDS if c not in ids[:5]]
    assert ids[5:] == rest
    assert all(out.scores["q"][c] == pytest.approx(1.0) for c in ids[:5])
    assert all(out.scores["q"][c] == pytest.approx(0.0) for c in ids[5:])
    art = {a["chunk_id"]: a for a in rr.artifacts["q"]}
    assert art["c14"]["pick"] == 2 and art["c14"]["group"] == 2 and art["c14"]["score"] == 1.0
    assert art["c05"]["pick"] is None and art["c05"]["answer"] == "3, 1"
    assert rr.unparsed == 0


def test_extra_numbers_beyond_k_per_group_are_ignored() -> None:
    llm = picking({0: "9, 9, 11, 8, 7, 6"})
    out = LLMSelectReranker(llm=llm, k_per_group=2).rerank(
        {"q": "x"}, input_run({"q": IDS[:10]}), CORPUS, k=3
    )
    assert out.ids("q") == ["c08", "c07", "c00"]


def test_unparsed_group_keeps_input_order_below_the_selected() -> None:
    llm = picking({0: "I cannot tell", 1: "10"})
    rr = LLMSelectReranker(llm=llm, k_per_group=1)
    out = rr.rerank({"q": "x"}, input_run({"q": IDS[:20]}), CORPUS, k=20)
    assert out.ids("q") == ["c19"] + IDS[:19]
    assert rr.unparsed == 1
    art = {a["chunk_id"]: a for a in rr.artifacts["q"]}
    assert art["c03"]["unparsed"] is True and art["c12"]["unparsed"] is False


def test_threshold_keeps_only_the_selected_and_k_cuts() -> None:
    llm = picking({0: "2, 4, 6"})
    rr = LLMSelectReranker(llm=llm, k_per_group=3, threshold=0.5)
    out = rr.rerank({"q": "x"}, input_run({"q": IDS[:10]}), CORPUS, k=10)
    assert out.ids("q") == ["c01", "c03", "c05"]
    out = LLMSelectReranker(llm=llm, k_per_group=3).rerank(
        {"q": "x"}, input_run({"q": IDS[:10]}), CORPUS, k=2
    )
    assert out.ids("q") == ["c01", "c03"]


def test_max_candidates_and_snippet_chars() -> None:
    llm = CountingLLM(lambda _r: "1")
    rr = LLMSelectReranker(llm=llm, max_candidates=12, group_size=5, snippet_chars=15)
    out = rr.rerank({"q": "x"}, input_run({"q": IDS}), CORPUS, k=3)
    assert llm.batches == [3]  # 12 candidates in groups of 5, 5, 2
    assert [len(marks(r)) for r in llm.requests] == [0, 0, 0]  # marks cut by snippet_chars
    assert len(rr.artifacts["q"]) == 12
    assert out.ids("q") == ["c00", "c05", "c10"]


def test_one_group_failing_and_all_failing() -> None:
    def script(request: ChatRequest) -> Reply:
        first = int(marks(request)[0][1:])
        return LLMUnavailableError("server gone") if first < 10 else "3"

    rr = LLMSelectReranker(llm=ScriptedLLM(script), k_per_group=1)
    out = rr.rerank({"q": "x"}, input_run({"q": IDS[:20]}), CORPUS, k=3)
    assert out.ids("q") == ["c12", "c00", "c01"]
    assert rr.failed_calls == 1 and rr.failures == {}
    assert rr.artifacts["q"][1]["error"] == "server gone"

    rr = LLMSelectReranker(llm=ScriptedLLM(lambda _r: LLMUnavailableError("down")))
    out = rr.rerank({"q": "x", "e": ""}, input_run({"q": IDS[:20], "e": IDS[:2]}), CORPUS, k=3)
    assert out.scores == {"q": {}, "e": {}}
    assert rr.failures == {"q": "all 2 model calls failed: down", "e": "empty query"}


def test_registration_and_params() -> None:
    assert registry.get("rerankers", "llm-select") is LLMSelectReranker
    llm = ScriptedLLM("1")
    rr = registry.RERANKERS.create("llm-select", {"group_size": 4}, StageServices(llm=llm))
    assert isinstance(rr, LLMSelectReranker) and rr.llm is llm
    assert rr.group_size == 4 and rr.snippet_chars == 400 and rr.max_candidates == 50
    assert rr.max_tokens == 32 and rr.k_per_group is None
    bads: list[dict[str, Any]] = [{"group_size": 0}, {"k_per_group": 0}, {"max_tokens": 0}]
    for bad in bads:
        key = next(iter(bad))
        with pytest.raises(ConfigError, match=f"llm-select: {key} must be a positive integer"):
            LLMSelectReranker(llm=ScriptedLLM("1"), **bad)
