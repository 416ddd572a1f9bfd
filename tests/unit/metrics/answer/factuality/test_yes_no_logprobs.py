"""The yes/no fallback on first-token logprobs (small models rarely say YES/NO)."""

from __future__ import annotations

from retrieval_bench.llm.base import ChatRequest, Completion, LLMUnavailableError
from retrieval_bench.metrics.answer.factuality.common import reply_yes_no
from retrieval_bench.metrics.answer.factuality.entailment import EntailmentAnalyzer, Relation
from tests.fakes.llm import ScriptedLLM, last_user, with_logprobs


def test_text_decides_first() -> None:
    reply = with_logprobs("No, it does not.", {"Yes": -0.1, "No": -3.0})
    assert reply_yes_no(reply) is False  # the text says NO; logprobs are not consulted


def test_logprobs_decide_when_the_text_says_neither() -> None:
    assert reply_yes_no(with_logprobs("The claim is", {"The": -0.2, "Yes": -1.0, "No": -2.0}))
    assert reply_yes_no(with_logprobs("The claim is", {"The": -0.2, " no": -1.0})) is False
    # P(Yes) exactly 0.5: undecided
    assert reply_yes_no(with_logprobs("The", {"Yes": -1.0, "No": -1.0})) is None
    # no Yes/No among the alternatives, or no logprobs at all: undecided
    assert reply_yes_no(with_logprobs("The", {"The": -0.1, "A": -2.0})) is None
    assert reply_yes_no(Completion(text="The claim is", model="m")) is None
    assert reply_yes_no(LLMUnavailableError("down")) is None


def test_entailment_asks_for_logprobs_and_uses_them() -> None:
    def script(request: ChatRequest) -> Completion:
        entails_question = "contradict" not in last_user(request).lower()
        first = {"Yes": -0.3, "No": -1.5} if entails_question else {"Yes": -2.0, "No": -0.2}
        return with_logprobs("The claim", first)

    llm = ScriptedLLM(script)
    verdict = EntailmentAnalyzer(llm).analyze("The cache is SQLite.", "The cache uses SQLite.")
    assert verdict.relation is Relation.ENTAIL
    assert all(r.top_logprobs for r in llm.requests)
