"""RubricsFC: five relations mapped to scores, one call per sample (docs/metrics.md#factuality)."""

from __future__ import annotations

import pytest

from retrieval_bench.contracts.answer_metric import Sample
from retrieval_bench.errors import ConfigError
from retrieval_bench.llm.base import LLMUnavailableError
from retrieval_bench.metrics.answer.factory import build_metric
from retrieval_bench.metrics.answer.factuality.rubrics_fc import (
    RUBRIC_LABELS,
    RubricsFC,
    parse_rubric_label,
)
from tests.unit.metrics.answer.factuality.world import World

REF = "Routes live in src/routes; add the module to ROUTE_MODULES."


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("EQUIVALENT - same facts", "equivalent"),
        ("Equivalence.", "equivalent"),
        ("implied subset: misses ROUTE_MODULES", "implied_subset"),
        ("IMPLIED_SUBSET", "implied_subset"),
        ("Subset", "implied_subset"),
        ("implied-superset", "implied_superset"),
        ("**SUPERSET**", "implied_superset"),
        ("The answer contradicts it", "contradiction"),
        ("CONTRADICTION", "contradiction"),
        ("independent", "independent"),
        ("Label: independence; superset?", "independent"),  # the first label wins
        ("subsets", None),  # whole words only
        ("no idea", None),
        ("", None),
    ],
)
def test_parse_rubric_label(reply: str, label: str | None) -> None:
    found = parse_rubric_label(reply)
    assert (found[0] if found else None) == label


def test_each_label_maps_to_its_default_score_in_one_round() -> None:
    replies = {
        "a": "EQUIVALENT",
        "b": "SUBSET - it leaves out ROUTE_MODULES.",
        "c": "SUPERSET",
        "d": "CONTRADICTION",
        "e": "INDEPENDENT",
    }
    llm = World(rubric=dict(replies)).llm()
    samples = [Sample(p, (REF,), "Where?") for p in replies]
    scores = RubricsFC(llm=llm).score_samples(samples)
    assert [s.value for s in scores] == [1.0, 0.5, 0.75, 0.0, 0.0]
    assert llm.batches == [5]
    b = scores[1]
    assert b.reason == "relation: implied_subset — it leaves out ROUTE_MODULES"
    assert b.raw == "SUBSET - it leaves out ROUTE_MODULES."
    assert b.details == {f"relation_{x}": float(x == "implied_subset") for x in RUBRIC_LABELS}
    prompt = llm.prompts("Which label describes")[0]
    assert f"Expected answer:\n{REF}\n" in prompt and "Question: Where?" in prompt
    assert llm.requests[0].temperature == 0.0


def test_custom_scores_merge_over_the_defaults() -> None:
    llm = World(rubric={"a": "subset", "b": "superset"}).llm()
    metric = RubricsFC(llm=llm, scores={"implied_subset": 0.9})
    assert [s.value for s in metric.score_samples([Sample("a", (REF,)), Sample("b", (REF,))])] == [
        0.9,
        0.75,
    ]


def test_unknown_label_failures_and_degenerate_samples() -> None:
    llm = World(
        rubric={"x": "Hmm, hard to say.", "y": LLMUnavailableError("down"), "z": "EQUIVALENT"}
    ).llm()
    samples = [
        Sample("x", (REF,)),
        Sample("y", (REF,)),
        Sample("z", (REF,)),
        Sample(" ", (REF,)),
        Sample("z", ()),
    ]
    x, y, z, empty, no_ref = RubricsFC(llm=llm).score_samples(samples)
    assert (
        x.value is None and x.raw == "Hmm, hard to say." and "names no relation" in (x.error or "")
    )
    assert y.value is None and "down" in (y.error or "")
    assert z.value == 1.0
    assert empty.value == 0.0 and empty.reason == "empty answer"
    assert no_ref.value is None and "no reference answer" in (no_ref.error or "")
    assert llm.batches == [3]


def test_bad_scores_are_config_errors() -> None:
    llm = World().llm()
    with pytest.raises(ConfigError, match="'same'"):
        RubricsFC(llm=llm, scores={"same": 1.0})
    with pytest.raises(ValueError, match="scores"):
        RubricsFC(llm=llm, scores={"equivalent": 1.5})
    with pytest.raises(ConfigError, match="rubric"):
        build_metric({"name": "rubrics_fc", "scores": {"equal": 1}}, lambda: llm)
    built = build_metric({"name": "rubrics_fc", "scores": {"independent": 0.1}}, lambda: llm)
    assert isinstance(built, RubricsFC) and built.scores["independent"] == 0.1


def test_scores_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="scores: Input should be a valid dictionary"):
        RubricsFC(llm=World().llm(), scores=[("equivalent", 1.0)])
