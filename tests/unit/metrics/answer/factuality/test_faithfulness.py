"""Faithfulness: share of the answer's claims entailed by at least one source
(docs/metrics.md#factuality)."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.llm.base import LLMUnavailableError
from retrieval_bench.metrics.answer.factory import build_metric
from retrieval_bench.metrics.answer.factuality.faithfulness import Faithfulness
from tests.unit.metrics.answer.factuality.world import World

ANSWER = "Prices come from pricing.py. Discounts reach 15%. It uses Redis."
CLAIMS = ("Prices come from pricing.py.", "Discounts reach 15%.", "The service uses Redis.")
S1 = "def price(): ...  # pricing.py"
S2 = "BULK_DISCOUNT_TIERS = {100: 15}"
S3 = "# cache: memcached, never Redis"


def world(**overrides: object) -> World:
    w = World(
        claims={ANSWER: "\n".join(f"- {c}" for c in CLAIMS)},
        entails={(S1, CLAIMS[0]): "YES", (S2, CLAIMS[1]): "YES"},
        contradicts={(S3, CLAIMS[2]): "YES"},
    )
    for key, value in overrides.items():
        getattr(w, key).update(value)
    return w


def sample(prediction: str = ANSWER, contexts: tuple[str, ...] = (S1, S2, S3)) -> Sample:
    return Sample(prediction, (), "How are prices computed?", contexts)


def test_a_claim_is_faithful_when_any_source_entails_it() -> None:
    llm = world().llm()
    score = Faithfulness(llm=llm).score(sample())
    assert score.value == pytest.approx(2 / 3)
    assert score.details == {
        "claims": 3,
        "faithful": 2,
        "contradicted": 1,
        "unknown": 0,
        "conflicting": 0,
        "sources": 3,
    }
    assert score.reason == "2/3 claims entailed by a source; unsupported: 'The service uses Redis.'"
    # every claim is checked against every source: 3 x 3 pairs, two questions each
    assert llm.batches == [1, 18]
    entail_q = llm.prompts("Does the text entail")
    for source in (S1, S2, S3):
        for claim in CLAIMS:
            assert sum(p.startswith(f"Text:\n{source}\n\nClaim: {claim}\n") for p in entail_q) == 1


def test_unknown_verdicts_matter_only_for_claims_no_source_entails() -> None:
    # S2 cannot be read about claim 0, but S1 entails it: still faithful
    w = world(entails={(S2, CLAIMS[0]): "dunno"})
    assert Faithfulness(llm=w.llm()).score(sample()).value == pytest.approx(2 / 3)
    # S1 cannot be read about claim 2, which nothing entails: unknown -> missing with raw
    w = world(entails={(S1, CLAIMS[2]): "dunno"})
    missing = Faithfulness(llm=w.llm()).score(sample())
    assert missing.value is None and missing.raw == "entails? 'dunno'; contradicts? 'NO'"
    neutral = Faithfulness(llm=w.llm(), unknown_as_neutral=True).score(sample())
    assert neutral.value == pytest.approx(2 / 3) and neutral.details["unknown"] == 1


def test_failed_calls_and_degenerate_samples() -> None:
    w = world(
        entails={(S1, CLAIMS[2]): LLMUnavailableError("down")},
        claims={"One claim.": "- Prices come from pricing.py.", "Nothing.": "NONE"},
    )
    llm = w.llm()
    failed, ok, no_sources, blank_sources, empty, no_claims = Faithfulness(llm=llm).score_samples(
        [
            sample(),
            sample("One claim.", (" ", S1)),
            sample(contexts=()),
            sample(contexts=("", "  ")),
            sample(" "),
            sample("Nothing."),
        ]
    )
    assert failed.value is None and "down" in (failed.error or "")
    assert ok.value == 1.0 and ok.details["sources"] == 1  # the blank source is dropped
    for s in (no_sources, blank_sources):
        assert s.value is None and "no sources" in (s.error or "")
    assert empty.value == 0.0 and "no claims" in (empty.reason or "")
    assert no_claims.value == 0.0 and no_claims.raw == "NONE"
    assert llm.batches == [3, 18]  # "One claim." vs S1 is a pair the first sample asks too


def test_conflicting_pairs_are_counted() -> None:
    w = world(contradicts={(S1, CLAIMS[0]): "YES"})  # entailed and contradicted by S1
    score = Faithfulness(llm=w.llm()).score(sample(contexts=(S1, S2)))
    assert score.details["conflicting"] == 1
    assert score.value == pytest.approx(1 / 3)  # claim 0 is now neutral for S1


def test_factory() -> None:
    w = world()
    metric = build_metric("faithfulness:max_claims=2", lambda: w.llm())
    assert isinstance(metric, Faithfulness)
    assert metric.score(sample()).value == 1.0  # only the first two claims are kept
