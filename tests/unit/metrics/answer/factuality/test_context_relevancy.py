"""ContextRelevancy: share of sources the answer needed (docs/metrics.md#factuality)."""

from __future__ import annotations

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.llm.base import LLMUnavailableError
from retrieval_bench.metrics.answer.factory import build_metric
from retrieval_bench.metrics.answer.factuality.context_relevancy import ContextRelevancy
from tests.unit.metrics.answer.factuality.world import World

Q = "Where are routes registered?"
ANSWER = "In routes/__init__.py via register_routes()."


def sample(contexts: tuple[str, ...], prediction: str = ANSWER, question: str | None = Q) -> Sample:
    return Sample(prediction, ("ref",), question, contexts)


def test_share_of_useful_sources_in_one_round() -> None:
    world = World(useful={"s1": "YES", "s2": "No.", "s3": "yes, it is", "s4": "NO"})
    llm = world.llm()
    a, b = ContextRelevancy(llm=llm).score_samples(
        [sample(("s1", "s2", "s3")), sample(("s4", "", "s1"))]
    )
    assert a.value == 2 / 3 and a.details == {"sources": 3, "relevant": 2}
    assert a.reason == "2/3 sources judged useful (YNY)"
    assert b.value == 1 / 3
    assert b.reason == "1/3 sources judged useful (NY); 1 blank source(s) counted as not useful"
    assert llm.batches == [5]
    prompt = llm.prompts("Was this source necessary")[0]
    assert f"Question: {Q}" in prompt and f"Answer:\n{ANSWER}\n" in prompt
    assert "Source:\ns1\n" in prompt and llm.requests[0].temperature == 0.0


def test_degenerate_samples_and_failures() -> None:
    world = World(useful={"ok": "YES", "junk": "perhaps", "down": LLMUnavailableError("gone")})
    llm = world.llm()
    none, blank, empty, junk, down, no_question = ContextRelevancy(llm=llm).score_samples(
        [
            sample(()),
            sample((" ",)),
            sample(("ok",), prediction=""),
            sample(("ok", "junk")),
            sample(("down", "ok")),
            sample(("ok",), question=None),
        ]
    )
    assert none.value is None and "no sources" in (none.error or "")
    assert blank.value is None and "no sources" in (blank.error or "")
    assert empty.value == 0.0
    assert junk.value is None and junk.raw == "perhaps" and "source 2" in (junk.error or "")
    assert down.value is None and "gone" in (down.error or "")
    assert no_question.value == 1.0
    assert "Question: \n" in llm.prompts("Was this source necessary")[-1]
    assert llm.batches == [5]


def test_factory() -> None:
    world = World(useful={"ok": "YES"})
    metric = build_metric("context_relevancy:max_tokens=2", lambda: world.llm())
    assert isinstance(metric, ContextRelevancy)
    assert metric.score(sample(("ok",))).value == 1.0
