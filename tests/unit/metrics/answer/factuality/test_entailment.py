"""Entailment analysis: the two parallel questions and their aggregation
(docs/metrics.md#factuality)."""

from __future__ import annotations

import pytest

from retrieval_bench.llm.base import LLMUnavailableError
from retrieval_bench.metrics.answer.factuality.entailment import (
    EntailmentAnalyzer,
    Relation,
    combine,
)
from tests.fakes.llm import last_user
from tests.unit.metrics.answer.factuality.world import World


@pytest.mark.parametrize(
    ("entails", "contradicts", "relation"),
    [
        (True, False, Relation.ENTAIL),
        (False, True, Relation.CONTRADICT),
        (False, False, Relation.NEUTRAL),
        (True, True, Relation.NEUTRAL),
        (None, False, None),
        (True, None, None),
        (None, None, None),
    ],
)
def test_aggregation_table(
    entails: bool | None, contradicts: bool | None, relation: Relation | None
) -> None:
    assert combine(entails, contradicts) is relation


T = "The shop opens at 9."


def test_each_branch_from_model_replies_in_one_round() -> None:
    world = World(
        entails={(T, "opens 9"): "YES, it does.", (T, "both"): "Yes", (T, "junk"): "maybe"},
        contradicts={(T, "opens 10"): "yes", (T, "both"): "YES", (T, "junk"): "No"},
    )
    llm = world.llm()
    claims = ["opens 9", "opens 10", "closed", "both", "junk"]
    out = EntailmentAnalyzer(llm).analyze_many([(T, c) for c in claims])
    assert [v.relation for v in out] == [
        Relation.ENTAIL,
        Relation.CONTRADICT,
        Relation.NEUTRAL,
        Relation.NEUTRAL,
        None,
    ]
    assert [v.conflicting for v in out] == [False, False, False, True, False]
    assert out[4].unknown and out[4].error is None
    assert out[4].entails is None and out[4].contradicts is False
    assert out[4].raw == "entails? 'maybe'; contradicts? 'No'"
    assert out[0].raw_entails == "YES, it does."
    assert llm.batches == [10]  # two requests per pair, one chat_many
    entail_q = [p for p in llm.prompts("Does the text entail") if "Claim: opens 9\n" in p]
    contra_q = [p for p in llm.prompts("Does the text contradict") if "Claim: opens 9\n" in p]
    assert len(entail_q) == len(contra_q) == 1
    assert entail_q[0].startswith(f"Text:\n{T}\n\nClaim: opens 9")
    assert all(r.temperature == 0.0 and r.max_tokens == 4 for r in llm.requests)


def test_yes_no_is_a_whole_first_word() -> None:
    world = World(
        entails={(T, "a"): "Nothing says so. Yes.", (T, "b"): "Yesterday no"},
    )
    out = EntailmentAnalyzer(world.llm()).analyze_many([(T, "a"), (T, "b")])
    assert out[0].entails is True  # "Nothing" is not NO
    assert out[1].entails is False  # "Yesterday" is not YES


def test_failed_call_is_unknown_with_error_and_others_go_on() -> None:
    world = World(entails={(T, "x"): LLMUnavailableError("server down"), (T, "y"): "YES"})
    out = EntailmentAnalyzer(world.llm()).analyze_many([(T, "x"), (T, "y")])
    assert out[0].relation is None and out[0].error is not None and "server down" in out[0].error
    assert out[1].relation is Relation.ENTAIL


def test_blank_text_is_neutral_without_a_call_and_duplicates_share_calls() -> None:
    world = World(entails={(T, "c"): "YES"})
    llm = world.llm()
    out = EntailmentAnalyzer(llm).analyze_many([("", "c"), (T, "c"), (T, "c"), (" \n", "d")])
    assert [v.relation for v in out] == [
        Relation.NEUTRAL,
        Relation.ENTAIL,
        Relation.ENTAIL,
        Relation.NEUTRAL,
    ]
    assert llm.batches == [2]


def test_no_pairs_no_call_and_bad_pairs_raise() -> None:
    llm = World().llm()
    analyzer = EntailmentAnalyzer(llm)
    assert analyzer.analyze_many([]) == [] and llm.batches == []
    with pytest.raises(ValueError, match="claim is blank"):
        analyzer.analyze_many([(T, " ")])
    with pytest.raises(TypeError, match="pairs"):
        analyzer.analyze_many([(T,)])  # type: ignore[list-item]


def test_single_pair_api() -> None:
    world = World(contradicts={(T, "c"): "YES"})
    llm = world.llm()
    assert EntailmentAnalyzer(llm, max_tokens=2).analyze(T, "c").relation is Relation.CONTRADICT
    assert {r.max_tokens for r in llm.requests} == {2}
    assert "Claim: c\n" in last_user(llm.requests[0])
