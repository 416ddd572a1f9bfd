"""ClaimsFC: claim precision / recall / F1 against the expected answer
(docs/metrics.md#factuality).

Hand-computed fixture: the expected answer A0 has claims {opens 9, in Paris};
the answer A has claims {opens 10, in Paris, sells bread}. Against A0: "opens
10" is contradicted (0), "in Paris" entailed (1), "sells bread" neutral (f).
Against A: "opens 9" is contradicted (0), "in Paris" entailed (1).
So precision = (0 + 1 + f) / 3, recall = 1/2; with f = 0: P = 1/3, R = 1/2,
F1 = 2·(1/3)·(1/2) / (5/6) = 0.4.
"""

from __future__ import annotations

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLMError, LLMUnavailableError
from retrieval_bench.metrics.answer.factory import build_metric
from retrieval_bench.metrics.answer.factuality.claims_fc import ClaimsFC
from tests.unit.metrics.answer.factuality.world import World

A0 = "The shop opens at 9. It is in Paris."
A = "The shop opens at 10. It is in Paris. It sells bread."
A_CLAIMS = ("The shop opens at 10.", "The shop is in Paris.", "The shop sells bread.")
A0_CLAIMS = ("The shop opens at 9.", "The shop is in Paris.")


def world(**overrides: object) -> World:
    w = World(
        claims={
            A: "\n".join(f"- {c}" for c in A_CLAIMS),
            A0: "\n".join(f"{k}. {c}" for k, c in enumerate(A0_CLAIMS, 1)),
        },
        entails={(A0, "The shop is in Paris."): "YES", (A, "The shop is in Paris."): "YES"},
        contradicts={(A0, "The shop opens at 10."): "YES", (A, "The shop opens at 9."): "YES"},
    )
    for key, value in overrides.items():
        getattr(w, key).update(value)
    return w


def sample(prediction: str = A, reference: str | None = A0, sid: str = "s") -> Sample:
    return Sample(prediction, (reference,) if reference is not None else (), "When?", id=sid)


def test_hand_computed_precision_recall_f1() -> None:
    llm = world().llm()
    score = ClaimsFC(llm=llm).score(sample())
    assert score.value == pytest.approx(0.4)
    d = score.details
    assert d["precision"] == pytest.approx(1 / 3) and d["recall"] == pytest.approx(0.5)
    assert d["f1"] == pytest.approx(0.4)
    assert (
        d["answer_claims"],
        d["answer_entail"],
        d["answer_contradict"],
        d["answer_neutral"],
    ) == (
        3,
        1,
        1,
        1,
    )
    assert (d["reference_claims"], d["reference_entail"], d["reference_contradict"]) == (2, 1, 1)
    assert d["conflicting"] == 0 and d["unknown"] == 0
    assert score.reason == (
        "1/3 answer claims entailed by the reference; 1/2 reference claims entailed by "
        "the answer; contradicted: 'The shop opens at 10.'"
    )
    assert score.raw is not None and "[contradict] The shop opens at 10." in score.raw
    assert "[neutral] The shop sells bread." in score.raw


def test_swapped_direction_puts_reference_claims_against_the_answer() -> None:
    llm = world().llm()
    ClaimsFC(llm=llm).score(sample())
    asked = llm.prompts("Does the text entail") + llm.prompts("Does the text contradict")
    assert len(asked) == 2 * (len(A_CLAIMS) + len(A0_CLAIMS))
    for claim in A_CLAIMS:  # precision: the answer's claims against the expected answer
        against = [p for p in asked if f"Claim: {claim}\n" in p and p.startswith(f"Text:\n{A0}\n")]
        assert len(against) == 2, claim
    for claim in A0_CLAIMS:  # recall: the expected answer's claims against the answer
        against = [p for p in asked if f"Claim: {claim}\n" in p and p.startswith(f"Text:\n{A}\n")]
        assert len(against) == 2, claim
    # "in Paris" is a claim of both, asked once per direction: 4 questions in all
    assert sum("Claim: The shop is in Paris.\n" in p for p in asked) == 4


def test_neutral_value_and_report_choice() -> None:
    s = sample()
    half = ClaimsFC(llm=world().llm(), neutral_value=0.5)
    assert half.score(s).details["precision"] == pytest.approx(0.5)
    assert half.score(s).value == pytest.approx(0.5)  # F1 of 0.5 and 0.5
    full = ClaimsFC(llm=world().llm(), neutral_value=1.0, report="precision")
    assert full.score(s).value == pytest.approx(2 / 3)
    assert ClaimsFC(llm=world().llm(), report="recall").score(s).value == pytest.approx(0.5)


def test_report_precision_never_extracts_the_reference() -> None:
    llm = world().llm()
    score = ClaimsFC(llm=llm, report="precision").score(sample())
    assert score.value == pytest.approx(1 / 3)
    assert score.details["recall"] is None and score.details["f1"] is None
    assert "reference_claims" not in score.details
    split = llm.prompts("Split the text below")
    assert len(split) == 1 and split[0].endswith(f"Text:\n{A}\n\nClaims:")
    assert all(p.startswith(f"Text:\n{A0}\n") for p in llm.prompts("Does the text entail"))


@pytest.mark.parametrize(
    ("round_above", "expected"),
    [(None, 0.4), (0.4, 0.4), (0.39, 1.0), (0.0, 1.0)],
)
def test_round_above_is_strict_and_keeps_the_raw_numbers(
    round_above: float | None, expected: float
) -> None:
    score = ClaimsFC(llm=world().llm(), round_above=round_above).score(sample())
    assert score.value == pytest.approx(expected)
    assert score.details["f1"] == pytest.approx(0.4)
    assert ("rounded up to 1" in (score.reason or "")) == (expected == 1.0)


def test_conflicting_answers_count_as_neutral() -> None:
    w = world(entails={(A0, "The shop opens at 10."): "YES"})  # YES to both questions
    score = ClaimsFC(llm=w.llm(), neutral_value=0.25, report="precision").score(sample())
    assert score.value == pytest.approx((0.25 + 1 + 0.25) / 3)
    assert score.details["conflicting"] == 1 and score.details["answer_neutral"] == 2
    assert score.raw is not None and "[neutral, conflicting] The shop opens at 10." in score.raw


def test_unparseable_verdict_is_missing_with_raw_unless_neutral() -> None:
    w = world(entails={(A0, "The shop sells bread."): "I am not sure"})
    missing = ClaimsFC(llm=w.llm()).score(sample())
    assert missing.value is None
    assert missing.error is not None and "The shop sells bread." in missing.error
    assert missing.raw == "entails? 'I am not sure'; contradicts? 'NO'"
    neutral = ClaimsFC(llm=w.llm(), unknown_as_neutral=True, neutral_value=0.5).score(sample())
    assert neutral.value == pytest.approx(0.5) and neutral.details["unknown"] == 1


def test_one_failing_sample_does_not_stop_the_batch() -> None:
    other = "The shop is in Paris."
    w = world(
        claims={other: "- The shop is in Paris.", "Broken.": LLMUnavailableError("gone")},
        entails={(A0, "The shop opens at 10."): LLMUnavailableError("timeout")},
    )
    scores = ClaimsFC(llm=w.llm(), report="precision").score_samples(
        [sample(), sample(other), sample("Broken.")]
    )
    assert scores[0].value is None and scores[0].error is not None
    assert "timeout" in scores[0].error and "The shop opens at 10." in scores[0].error
    assert scores[1].value == 1.0
    assert scores[2].value is None and "claims of the answer" in (scores[2].error or "")
    # an unknown verdict under unknown_as_neutral still cannot hide a failed call
    again = ClaimsFC(llm=w.llm(), report="precision", unknown_as_neutral=True).score(sample())
    assert again.value is None


def test_empty_answer_is_zero_and_missing_reference_is_missing_without_calls() -> None:
    llm = world().llm()
    metric = ClaimsFC(llm=llm)
    empty, no_ref, blank_ref = metric.score_samples(
        [sample("  "), sample(reference=None), sample(reference=" ")]
    )
    assert empty.value == 0.0 and empty.reason == "empty answer: no claims"
    assert empty.details["f1"] == 0.0
    assert no_ref.value is None and "no reference answer" in (no_ref.error or "")
    assert blank_ref.value is None
    assert llm.batches == [] and llm.requests == []


def test_answer_without_claims_is_zero_reference_without_claims_is_missing() -> None:
    w = world(claims={"Maybe.": "NONE", "Ref.": "[]"})
    llm = w.llm()
    no_claims, ref_no_claims = ClaimsFC(llm=llm).score_samples(
        [sample("Maybe."), sample(A, "Ref.")]
    )
    assert no_claims.value == 0.0 and no_claims.reason == "no claims in the answer"
    assert no_claims.raw == "NONE"
    assert ref_no_claims.value is None and "yielded no claims" in (ref_no_claims.error or "")
    assert ref_no_claims.raw == "[]"
    # precision alone needs no reference claims
    only_p = ClaimsFC(llm=w.llm(), report="precision").score(sample(A, "Ref."))
    assert only_p.value == 0.0 and only_p.details["answer_neutral"] == 3


def test_informationless_modes() -> None:
    hello = "Hello! Could you tell me more?"
    w = world(claims={hello: "- The user is greeted."}, informationless={hello: "YES"})
    llm = w.llm()
    zero = ClaimsFC(llm=llm).score_samples([sample(hello), sample()])
    assert zero[0].value == 0.0 and zero[0].details["informationless"] == 1.0
    assert "informationless" in (zero[0].reason or "")
    assert zero[1].value == pytest.approx(0.4)
    assert len(llm.prompts("Does this reply contain no information")) == 2
    assert not any(hello in p for p in llm.prompts("Split the text below"))

    missing = ClaimsFC(llm=w.llm(), informationless="missing").score(sample(hello))
    assert missing.value is None and missing.raw == "YES"
    assert "informationless answer" in (missing.error or "")

    llm = w.llm()
    ignored = ClaimsFC(llm=llm, informationless="ignore").score(sample(hello))
    assert ignored.value == 0.0 and ignored.details["answer_neutral"] == 1
    assert llm.prompts("Does this reply contain no information") == []


def test_unreadable_informationless_check_scores_the_answer_anyway() -> None:
    w = world(informationless={A: "Perhaps"})
    unreadable = ClaimsFC(llm=w.llm()).score(sample())
    ignored = ClaimsFC(llm=world().llm(), informationless="ignore").score(sample())
    assert unreadable.value is not None and unreadable.value == ignored.value


def test_a_batch_takes_three_chat_many_rounds() -> None:
    b = "The shop is in Paris."
    w = world(claims={b: "- The shop is in Paris."}, entails={(b, "The shop is in Paris."): "YES"})
    llm = w.llm()
    scores = ClaimsFC(llm=llm).score_samples([sample(), sample(b), sample(" "), sample(A, None)])
    assert [s.value is not None for s in scores] == [True, True, True, False]
    # informationless: 2 answers; claims: A, A0, b (A0 shared); entailment: two questions per
    # distinct pair: 5 for the first sample, then (A0, in Paris) again (shared) + 2 against b
    assert llm.batches == [2, 3, 2 * (5 + 2)]
    assert scores[1].value == pytest.approx(f1(1.0, 0.5))


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r)


def test_first_of_several_references_is_used() -> None:
    llm = world().llm()
    s = Sample(A, (A0, "Another reference."), "When?")
    assert ClaimsFC(llm=llm).score(s).value == pytest.approx(0.4)
    assert not any("Another reference." in p for p in llm.prompts("Split"))


def test_factory_builds_it_with_the_lazy_llm_and_options() -> None:
    w = world()
    metric = build_metric(
        "claims_fc:report=precision,round_above=0.3,neutral_value=0.5,id=fc", lambda: w.llm()
    )
    assert isinstance(metric, ClaimsFC) and metric.name == "fc"
    assert metric.report == "precision" and metric.round_above == 0.3
    assert metric.score(sample()).value == 1.0  # P = 0.5 > 0.3
    with pytest.raises(ConfigError, match="report"):
        build_metric("claims_fc:report=accuracy", lambda: w.llm())
    with pytest.raises(ConfigError, match="neutral_value"):
        build_metric("claims_fc:neutral_value=2", lambda: w.llm())
    with pytest.raises(ConfigError, match="informationless"):
        ClaimsFC(llm=w.llm(), informationless="drop")
    with pytest.raises(ValueError, match="round_above"):
        ClaimsFC(llm=w.llm(), round_above=-0.1)


def test_failed_reference_extraction_and_failed_informationless_check() -> None:
    w = world(
        claims={"Bad ref.": LLMUnavailableError("ref down")},
        informationless={"Who knows.": LLMUnavailableError("check down")},
    )
    bad_ref, bad_check, fine = ClaimsFC(llm=w.llm()).score_samples(
        [sample(A, "Bad ref."), sample("Who knows."), sample()]
    )
    assert bad_ref.value is None and "claims of the reference answer" in (bad_ref.error or "")
    assert "ref down" in (bad_ref.error or "")
    assert bad_check.value is None and "check down" in (bad_check.error or "")
    assert fine.value == pytest.approx(0.4)


def test_a_reply_count_mismatch_fails_the_whole_batch_loudly() -> None:
    llm = world().llm()
    llm.inner.chat_many = lambda requests: []  # type: ignore[method-assign]
    with pytest.raises(LLMError, match="returned 0 replies for 1 requests"):
        ClaimsFC(llm=llm).score_samples([sample()])
