"""``llm-logprob``: score = P(Yes) renormalised over the first token's Yes/No entries."""

from __future__ import annotations

import math

import pytest

from retrieval_bench.contracts import registry
from retrieval_bench.contracts.params import StageServices
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import Completion, LLMUnavailableError, TokenLogprob
from retrieval_bench.llm.yes_no import p_yes
from retrieval_bench.reranking.llm import LLMLogprobReranker, LLMYesNoReranker
from tests.fakes.llm import Reply, ScriptedLLM, with_logprobs
from tests.unit.reranking.helpers import by_mark, chunk, corpus_of, input_run

CORPUS = corpus_of([chunk(c) for c in "abcdef"])


def sigmoid_of(lp_yes: float, lp_no: float) -> float:
    return math.exp(lp_yes) / (math.exp(lp_yes) + math.exp(lp_no))


def test_p_yes_renormalises_over_yes_and_no_only() -> None:
    # "The" is the top token (as with SmolLM2); it is ignored, not counted as "no"
    top = {"The": -0.2, "Yes": -1.0, "No": -2.0, "I": -3.0}
    assert p_yes(top) == pytest.approx(sigmoid_of(-1.0, -2.0))
    assert p_yes(top) == pytest.approx(1 / (1 + math.exp(-1.0)))


def test_p_yes_sums_spelling_variants() -> None:
    top = {"Yes": -1.0, " yes": -2.0, "YES.": -4.0, "No": -1.5, " no": -3.0, "Note": -0.1}
    py = math.exp(-1.0) + math.exp(-2.0) + math.exp(-4.0)
    pn = math.exp(-1.5) + math.exp(-3.0)
    assert p_yes(top) == pytest.approx(py / (py + pn))


def test_p_yes_missing_entries() -> None:
    assert p_yes({"The": -0.1, " Yes": -5.0}) == 1.0  # no "No" at all
    assert p_yes({"The": -0.1, "no": -5.0}) == 0.0  # no "Yes" at all
    assert p_yes({"The": -0.1, "A": -2.0}) is None
    assert p_yes({}) is None
    assert p_yes({"Yes": -math.inf, "No": -math.inf}) is None
    assert p_yes({"Yes": -math.inf, "No": -1.0}) == 0.0
    assert p_yes({"Yes": -1000.0, "No": -1001.0}) == pytest.approx(sigmoid_of(1.0, 0.0))


def test_continuous_ranking_and_request_options() -> None:
    answers: dict[str, Reply] = {
        "a": with_logprobs("The", {"The": -0.1, "Yes": -3.0, "No": -1.0}),  # P ≈ 0.12
        "b": with_logprobs("Yes", {"Yes": -0.2, "No": -1.8}),  # P ≈ 0.83
        "c": with_logprobs(" yes", {" yes": -0.5, "Yes": -1.5, " No": -2.0}),  # P ≈ 0.85
        "d": with_logprobs("No", {"No": -0.1, "Yes": -2.5}),  # P ≈ 0.08
    }
    llm = ScriptedLLM(by_mark(answers))
    rr = LLMLogprobReranker(llm=llm)
    out = rr.rerank({"q": "x"}, input_run({"q": list("abcd")}), CORPUS, k=10)
    assert out.name == "llm-logprob"
    assert out.ids("q") == ["c", "b", "a", "d"]
    assert out.scores["q"]["a"] == pytest.approx(sigmoid_of(-3.0, -1.0))
    py = math.exp(-0.5) + math.exp(-1.5)
    assert out.scores["q"]["c"] == pytest.approx(py / (py + math.exp(-2.0)))
    assert rr.no_logprobs == 0 and rr.unparsed == 0
    req = llm.requests[0]
    assert req.top_logprobs == 5 and req.max_tokens == 1 and req.temperature == 0.0
    art = {a["chunk_id"]: a for a in rr.artifacts["q"]}
    assert art["a"]["top_logprobs"] == {"The": -0.1, "Yes": -3.0, "No": -1.0}
    assert art["a"]["answer"] == "The"


def test_generated_token_counts_when_missing_from_top() -> None:
    reply = Completion("Yes", "m", (TokenLogprob("Yes", -0.5, {"No": -1.5, "The": -2.0}),))
    out = LLMLogprobReranker(llm=ScriptedLLM(lambda _r: reply)).rerank(
        {"q": "x"}, input_run({"q": ["a"]}), CORPUS, k=1
    )
    assert out.scores["q"]["a"] == pytest.approx(sigmoid_of(-0.5, -1.5))


def test_missing_no_and_missing_both_fall_back() -> None:
    answers: dict[str, Reply] = {
        "a": with_logprobs("Yes", {"Yes": -0.3, "The": -1.0}),  # no "No" → 1.0
        "b": with_logprobs("The", {"The": -0.1, "A": -2.0}),  # neither; text unparsed → 0.5
        "c": Completion("yes", "m"),  # no logprobs at all → text says yes → 1.0
        "d": with_logprobs("No", {"Nope": -0.1, "No": -0.5}),  # only "No" → 0.0
        "e": Completion("No", "m"),  # no logprobs → text says no → 0.0
    }
    rr = LLMLogprobReranker(llm=ScriptedLLM(by_mark(answers)))
    out = rr.rerank({"q": "x"}, input_run({"q": list("abcde")}), CORPUS, k=10)
    assert out.ids("q") == ["a", "c", "b", "d", "e"]
    art = {x["chunk_id"]: x["score"] for x in rr.artifacts["q"]}
    assert art == {"a": 1.0, "c": 1.0, "b": 0.5, "d": 0.0, "e": 0.0}
    assert rr.no_logprobs == 3  # b, c, e
    assert rr.unparsed == 1  # b


def test_failures_and_threshold() -> None:
    answers: dict[str, Reply] = {
        "a": with_logprobs("Yes", {"Yes": -0.1, "No": -2.5}),
        "b": LLMUnavailableError("connection refused"),
        "c": with_logprobs("No", {"No": -0.1, "Yes": -2.5}),
    }
    rr = LLMLogprobReranker(llm=ScriptedLLM(by_mark(answers)), threshold=0.5)
    out = rr.rerank({"q": "x"}, input_run({"q": list("abc")}), CORPUS, k=10)
    assert out.ids("q") == ["a"]
    assert rr.failed_calls == 1 and rr.failures == {}
    rr_all = LLMLogprobReranker(llm=ScriptedLLM(lambda _r: LLMUnavailableError("down")))
    out = rr_all.rerank({"q": "x"}, input_run({"q": list("ab")}), CORPUS, k=10)
    assert out.scores == {"q": {}}
    assert rr_all.failures == {"q": "all 2 model calls failed: down"}


def test_params_and_registration() -> None:
    llm = ScriptedLLM(lambda _r: with_logprobs("Yes", {"Yes": -0.1}))
    rr = registry.RERANKERS.create(
        "llm-logprob", {"top_logprobs": 10, "max_tokens": 2}, StageServices(llm=llm)
    )
    rr.rerank({"q": "x"}, input_run({"q": ["a"]}), CORPUS, k=1)
    assert llm.requests[0].top_logprobs == 10 and llm.requests[0].max_tokens == 2
    with pytest.raises(ConfigError, match="top_logprobs"):
        LLMLogprobReranker(llm=llm, top_logprobs=0)
    # the parameters of llm-yesno, max_tokens defaulting to 1, plus top_logprobs
    assert issubclass(LLMLogprobReranker.Params, LLMYesNoReranker.Params)
    assert LLMLogprobReranker.Params.names() == [*LLMYesNoReranker.Params.names(), "top_logprobs"]
    default = LLMLogprobReranker(llm=llm)
    assert (default.max_tokens, default.top_logprobs, default.snippet_chars) == (1, 5, 1500)
    with pytest.raises(ConfigError, match="llm-logprob: max_candidates must be a positive"):
        LLMLogprobReranker(llm=llm, max_candidates=0)
