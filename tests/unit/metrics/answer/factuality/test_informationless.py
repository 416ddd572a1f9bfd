"""Informationless detection (docs/metrics.md#factuality)."""

from __future__ import annotations

from retrieval_bench.llm.base import LLMUnavailableError
from retrieval_bench.metrics.answer.factuality.informationless import Informationless
from tests.unit.metrics.answer.factuality.world import World


def test_batch_verdicts_in_one_round() -> None:
    world = World(
        informationless={
            "Hello! How can I help?": "YES",
            "It is in src/app.py.": "NO, it names a file.",
            "Hmm": "I cannot tell",
            "boom": LLMUnavailableError("down"),
        },
        default_informationless=None,
    )
    llm = world.llm()
    texts = ["Hello! How can I help?", "It is in src/app.py.", "Hmm", "boom", "", "Hmm"]
    out = Informationless(llm).detect_many(texts)
    assert [v.informationless for v in out] == [True, False, None, None, True, None]
    assert out[2].raw == "I cannot tell" and out[2].error is None
    assert out[3].error is not None and "down" in out[3].error
    assert out[4].raw is None  # blank: informationless without a call
    assert llm.batches == [4]
    assert all(r.temperature == 0.0 for r in llm.requests)


def test_single_text() -> None:
    world = World(informationless={"Thanks!": "yes"})
    assert Informationless(world.llm()).detect("Thanks!").informationless is True
