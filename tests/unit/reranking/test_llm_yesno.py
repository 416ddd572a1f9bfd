"""``llm-yesno``: one Yes/No call per candidate, every branch with a scripted LLM."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.params import StageServices
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import ChatRequest, LLMResponseError, LLMUnavailableError
from retrieval_bench.llm.yes_no import parse_yes_no
from retrieval_bench.reranking.llm import LLMYesNoReranker
from tests.fakes.llm import Reply, ScriptedLLM, last_user
from tests.unit.reranking.helpers import CountingLLM, by_mark, chunk, corpus_of, input_run

# ids sort differently from the input order, so id tie-breaking would show
IDS = ["e", "d", "c", "b", "a"]
CORPUS = corpus_of([chunk(c) for c in IDS + ["f", "g"]])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Yes", 1.0),
        ("yes.", 1.0),
        (" **YES**, it is", 1.0),
        ("No", 0.0),
        ("no!", 0.0),
        ("\nNO", 0.0),
        ("Maybe", None),
        ("Yesterday", None),
        ("Not sure", None),
        ("", None),
        ("42", None),
        ("The answer is yes", None),
    ],
)
def test_parse_yes_no(text: str, value: float | None) -> None:
    assert parse_yes_no(text) == value


def test_scores_yes_1_no_0_unparsed_0_ties_in_input_order() -> None:
    llm = ScriptedLLM(by_mark({"e": "No", "d": "Yes.", "c": "Maybe", "b": "yes", "a": "no"}))
    rr = LLMYesNoReranker(llm=llm)
    out = rr.rerank({"q": "where is x?"}, input_run({"q": IDS}), CORPUS, k=10)
    assert out.name == "llm-yesno"
    assert out.ids("q") == ["d", "b", "e", "c", "a"]
    assert out.scores["q"]["b"] == 1.0 and out.scores["q"]["a"] == 0.0
    assert rr.unparsed == 1
    assert rr.failures == {}
    art = {a["chunk_id"]: a for a in rr.artifacts["q"]}
    assert [a["chunk_id"] for a in rr.artifacts["q"]] == ["d", "b", "e", "c", "a"]
    assert art["d"] == {
        "chunk_id": "d",
        "path": "src/d.py",
        "input_rank": 2,
        "answer": "Yes.",
        "score": 1.0,
        "kept": True,
    }
    assert art["c"]["unparsed"] is True and art["c"]["score"] == 0.0
    assert rr.llm is llm


def test_requests_carry_the_prompt_and_decoding_options() -> None:
    llm = ScriptedLLM("Yes")
    LLMYesNoReranker(llm=llm).rerank(
        {"q": "how do I add an endpoint?"}, input_run({"q": ["a"]}), CORPUS, k=1
    )
    (req,) = llm.requests
    assert req.temperature == 0.0 and 1 <= req.max_tokens <= 3 and req.top_logprobs is None
    assert [m["role"] for m in req.messages] == ["system", "user"]
    user = last_user(req)
    assert "how do I add an endpoint?" in user
    assert "src/a.py" in user and "MARK-a" in user
    assert user.rstrip().endswith("Answer Yes or No.")


def test_all_queries_go_through_one_chat_many() -> None:
    llm = CountingLLM(by_mark({}, default="Yes"))
    run = input_run({"q1": ["a", "b"], "q2": ["c", "d", "e"], "q3": []})
    out = LLMYesNoReranker(llm=llm).rerank({"q1": "x", "q2": "y", "q3": "z"}, run, CORPUS, k=5)
    assert llm.batches == [5]
    assert out.ids("q1") == ["a", "b"] and out.ids("q2") == ["c", "d", "e"]
    assert out.scores["q3"] == {}


def test_max_candidates_snippet_chars_and_k() -> None:
    long = chunk("f", text="MARK-f\n" + "x = 1\n" * 200)
    corpus = corpus_of([*CORPUS.chunks, long])
    llm = ScriptedLLM(by_mark({}, default="Yes"))
    rr = LLMYesNoReranker(llm=llm, max_candidates=3, snippet_chars=40)
    out = rr.rerank({"q": "x"}, input_run({"q": ["f", "e", "d", "c", "b"]}), corpus, k=2)
    assert len(llm.requests) == 3  # only the top 3 of the input are asked about
    assert out.ids("q") == ["f", "e"]
    assert len(rr.artifacts["q"]) == 3
    first = last_user(llm.requests[0])
    assert "x = 1\n" * 5 in first and "x = 1\n" * 8 not in first and "\n..." in first


def test_threshold_drops_low_scores() -> None:
    llm = ScriptedLLM(by_mark({"d": "Yes", "b": "Yes"}))
    rr = LLMYesNoReranker(llm=llm, threshold=0.5)
    out = rr.rerank({"q": "x"}, input_run({"q": IDS}), CORPUS, k=10)
    assert out.ids("q") == ["d", "b"]
    assert [a["kept"] for a in rr.artifacts["q"]] == [True, True, False, False, False]


def test_one_failed_call_scores_0_and_the_query_still_ranks() -> None:
    llm = ScriptedLLM(by_mark({"e": "Yes", "d": LLMUnavailableError("timeout"), "c": "Yes"}))
    rr = LLMYesNoReranker(llm=llm)
    out = rr.rerank({"q": "x"}, input_run({"q": ["e", "d", "c"]}), CORPUS, k=5)
    assert out.ids("q") == ["e", "c", "d"]
    assert rr.failures == {}
    assert rr.failed_calls == 1
    art = {a["chunk_id"]: a for a in rr.artifacts["q"]}
    assert art["d"]["error"] == "timeout" and art["d"]["score"] == 0.0


def test_all_calls_failing_fails_the_query_only() -> None:
    def script(request: ChatRequest) -> Reply:
        return LLMResponseError("no choices") if "broken" in last_user(request) else "Yes"

    rr = LLMYesNoReranker(llm=ScriptedLLM(script))
    run = input_run({"bad": ["a", "b", "c"], "good": ["d"]})
    out = rr.rerank({"bad": "broken question", "good": "fine"}, run, CORPUS, k=5)
    assert out.scores["bad"] == {}
    assert rr.failures == {"bad": "all 3 model calls failed: no choices"}
    assert out.ids("good") == ["d"]
    assert rr.failed_calls == 3
    assert all("error" in a for a in rr.artifacts["bad"])


def test_empty_or_missing_query_makes_no_calls() -> None:
    llm = ScriptedLLM("Yes")
    rr = LLMYesNoReranker(llm=llm)
    run = input_run({"blank": ["a"], "missing": ["b"]})
    out = rr.rerank({"blank": "   "}, run, CORPUS, k=5)
    assert llm.requests == []
    assert out.scores == {"blank": {}, "missing": {}}
    assert rr.failures == {"blank": "empty query", "missing": "empty query"}


def test_unknown_chunk_ids_are_dropped_and_counted() -> None:
    llm = ScriptedLLM("Yes")
    rr = LLMYesNoReranker(llm=llm)
    out = rr.rerank({"q": "x"}, input_run({"q": ["a", "nope", "b"]}), CORPUS, k=5)
    assert out.ids("q") == ["a", "b"]
    assert rr.unknown_chunks == 1
    assert len(llm.requests) == 2


def test_counters_reset_between_calls() -> None:
    rr = LLMYesNoReranker(llm=ScriptedLLM("Perhaps"))
    rr.rerank({"q": "x"}, input_run({"q": ["a", "b"]}), CORPUS, k=5)
    assert rr.unparsed == 2
    rr.rerank({"q": ""}, input_run({"q": ["a"]}), CORPUS, k=5)
    assert rr.unparsed == 0 and rr.artifacts == {} and rr.failures == {"q": "empty query"}


def test_registered_and_validated() -> None:
    assert registry.get("rerankers", "llm-yesno") is LLMYesNoReranker
    llm = ScriptedLLM("Yes")
    rr = registry.RERANKERS.create("llm-yesno", {"max_candidates": 5}, StageServices(llm=llm))
    assert isinstance(rr, LLMYesNoReranker)
    assert rr.max_candidates == 5 and rr.name == "llm-yesno" and rr.llm is llm
    assert rr.params == LLMYesNoReranker.Params(max_candidates=5)
    assert LLMYesNoReranker(llm=ScriptedLLM("Yes"), name="yn").name == "yn"
    with pytest.raises(ConfigError, match="max_candidates"):
        LLMYesNoReranker(llm=ScriptedLLM("Yes"), max_candidates=0)
    with pytest.raises(ConfigError, match="snippet_chars"):
        LLMYesNoReranker(llm=ScriptedLLM("Yes"), snippet_chars=-1)
    with pytest.raises(
        ConfigError, match="llm-yesno: max_tokens must be a positive integer, not True"
    ):
        LLMYesNoReranker(llm=ScriptedLLM("Yes"), max_tokens=True)
    with pytest.raises(ConfigError, match="unknown parameter 'max_candidate'"):
        LLMYesNoReranker(llm=ScriptedLLM("Yes"), max_candidate=5)
    with pytest.raises(ConfigError, match="reranker 'llm-yesno': threshold"):
        registry.RERANKERS.create("llm-yesno", {"threshold": "high"})


def test_an_integer_temperature_reaches_the_request_as_given() -> None:
    llm = ScriptedLLM("Yes")
    LLMYesNoReranker(llm=llm, temperature=0).rerank(
        {"q": "x"}, input_run({"q": ["a"]}), CORPUS, k=1
    )
    assert repr(llm.requests[0].temperature) == "0"  # the LLM cache key is as before


def test_without_a_client_the_model_call_is_a_config_error() -> None:
    rr = registry.RERANKERS.create("llm-yesno")
    assert rr.llm is None  # type: ignore[attr-defined]
    empty = rr.rerank({"q": ""}, input_run({"q": ["a"]}), CORPUS, k=1)
    assert empty.scores == {"q": {}}  # no question, no call
    with pytest.raises(ConfigError, match="llm-yesno: no LLM client given"):
        rr.rerank({"q": "x"}, input_run({"q": ["a"]}), CORPUS, k=1)
